package ip

import (
	"errors"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/junction-dataplane/junction/drivers"
	"github.com/junction-dataplane/junction/elements"
)

// offloadInterval is how often the mirror compares the table's version
// with the one it last copied into the fast path: a route change reaches
// the fast path within about this long (the graph sees it at once).
const offloadInterval = 10 * time.Millisecond

// offloadRoute is what the fast path holds for one prefix: out nil means
// "never forward here" (ECMP, a port without a fast-path device).
type offloadRoute struct {
	gw  netip.Addr
	out drivers.Device
}

// offloadSync mirrors the IPv4 routes of a Table into a driver's fast path
// (drivers.FastPathTable): once at start, then after every version change.
// It diffs against what it copied last, so a change costs a walk of the
// table but only the system calls of what changed.
type offloadSync struct {
	t     *Table
	fp    drivers.FastPathTable
	ports []drivers.Device // by output port; nil: not offloaded

	mu   sync.Mutex // sync against Close
	ver  uint64
	have map[netip.Prefix]offloadRoute

	applied, failed *atomic.Uint64
	stop, done      chan struct{}
}

// resolveOffload maps the offload key's device names (one per output port,
// "" for none) to fast-path devices.
func resolveOffload(names []string, devs elements.DeviceSet) ([]drivers.Device, drivers.FastPathTable, error) {
	ports := make([]drivers.Device, len(names))
	var fp drivers.FastPathTable
	for i, n := range names {
		if n == "" {
			continue
		}
		if devs == nil {
			return nil, nil, elements.Errorf("offload", "port %d: no devices in this graph", i)
		}
		d, _, ok := devs.Device(n)
		if !ok {
			return nil, nil, elements.Errorf("offload", "port %d: no device %q", i, n)
		}
		f, ok := d.(drivers.FastPath)
		if !ok || f.FastPathTable() == nil {
			return nil, nil, elements.Errorf("offload", "port %d: device %q has no fast path (it needs driver = \"afxdp\" with fastpath = true)", i, n)
		}
		if fp == nil {
			fp = f.FastPathTable()
		} else if f.FastPathTable() != fp {
			return nil, nil, elements.Errorf("offload", "port %d: device %q belongs to another fast path than the earlier ports' (one driver per offloaded IPLookup)", i, n)
		}
		ports[i] = d
	}
	if fp == nil {
		return nil, nil, elements.Errorf("offload", "names no device")
	}
	return ports, fp, nil
}

func startOffload(t *Table, fp drivers.FastPathTable, ports []drivers.Device, st *elements.Stats) (*offloadSync, error) {
	s := &offloadSync{t: t, fp: fp, ports: ports, applied: st.Counter("offload routes applied"),
		failed: st.Counter("offload errors"), stop: make(chan struct{}), done: make(chan struct{})}
	if err := s.sync(); err != nil {
		s.clear()
		return nil, elements.Errorf("offload", "programming the fast path: %v", err)
	}
	go s.run()
	return s, nil
}

func (s *offloadSync) run() {
	defer close(s.done)
	tk := time.NewTicker(offloadInterval)
	defer tk.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-tk.C:
			if err := s.sync(); err != nil {
				s.failed.Add(1)
			}
		}
	}
}

// want is the fast path's view of route r.
func (s *offloadSync) want(r Route) offloadRoute {
	if len(r.Also) > 0 || r.Out >= len(s.ports) || s.ports[r.Out] == nil {
		return offloadRoute{}
	}
	return offloadRoute{gw: r.NextHop, out: s.ports[r.Out]}
}

// sync copies the table into the fast path if its version moved. A prefix
// whose SetRoute failed is left out of have, so the loop below deletes it
// (the fast path must not go on forwarding by its old route) and the next
// round, forced by ver = 0, sets it again.
func (s *offloadSync) sync() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	v := s.t.Version()
	if s.have != nil && v == s.ver {
		return nil
	}
	next := make(map[netip.Prefix]offloadRoute, len(s.have))
	var errs []error
	var n uint64
	for _, r := range s.t.Routes() { // at least version v
		if !r.Prefix.Addr().Is4() {
			continue
		}
		w := s.want(r)
		if old, ok := s.have[r.Prefix]; ok && old == w {
			next[r.Prefix] = w
			continue
		}
		if err := s.fp.SetRoute(r.Prefix, w.gw, w.out); err != nil {
			errs = append(errs, err)
			continue
		}
		next[r.Prefix] = w
		n++
	}
	for p := range s.have {
		if _, ok := next[p]; ok {
			continue
		}
		if err := s.fp.DeleteRoute(p); err != nil {
			errs = append(errs, err)
			next[p] = s.have[p]
			continue
		}
		n++
	}
	s.have, s.ver = next, v
	if len(errs) > 0 {
		s.ver = 0 // retry next round
	}
	s.applied.Add(n)
	return errors.Join(errs...)
}

// clear removes every route this mirror installed.
func (s *offloadSync) clear() {
	for p := range s.have {
		_ = s.fp.DeleteRoute(p)
	}
	s.have = nil
}

// Close stops the mirror and removes its routes from the fast path.
func (s *offloadSync) Close() error {
	close(s.stop)
	<-s.done
	s.mu.Lock()
	defer s.mu.Unlock()
	s.clear()
	return nil
}
