package fpmirror

import (
	"errors"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/junction-dataplane/junction/drivers"
	"github.com/junction-dataplane/junction/elements"
	"github.com/junction-dataplane/junction/elements/ip/route"
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

// Sync mirrors the routes of a route.Table, IPv4 and IPv6, into a
// driver's fast path (drivers.FastPathTable): a walk of the table at
// start, then the prefixes the table's journal says each new version
// changed, so a change costs what it changes (a rebuild of the table, or
// a failed call, costs a walk).
type Sync struct {
	t     *route.Table
	fp    drivers.FastPathTable
	ports []drivers.Device // by output port; nil: not offloaded

	mu   sync.Mutex // sync against Close
	ver  uint64     // the table version the fast path reflects
	full bool       // walk the whole table next round (a call failed)
	have *installed // what the fast path holds (nil: nothing yet, walk)
	// changed, c and res are a round's changes and the fast path's
	// answers, reused from round to round.
	changed map[netip.Prefix]route.Change
	c       changes
	res     []error

	applied, failed *atomic.Uint64
	toGraph         *atomic.Uint64 // drivers.FastPathRouteUse's count, after each round that changed something
	stop, done      chan struct{}

	// peers are the other mirrors into the same fast path while a reload
	// runs both (HandOver); closed is set when Close has run.
	peers  []*Sync
	closed bool
}

// HandOver tells two mirrors into one fast path of each other: a table a
// reload rebuilds starts a mirror (b) while the running one (a) still
// runs. Each removes its routes when it closes, which may be routes the
// other holds too; so the one that closes first makes the other set all
// of its routes again (within one round, about 10 ms).
func HandOver(a, b *Sync) {
	if a == nil || b == nil || a == b {
		return
	}
	a.mu.Lock()
	a.peers = append(a.peers, b)
	a.mu.Unlock()
	b.mu.Lock()
	b.peers = append(b.peers, a)
	b.mu.Unlock()
}

// resetAll makes the next round set every route again (a peer removed
// routes this mirror believed set); nothing once closed.
func (s *Sync) resetAll() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.closed {
		s.have = newInstalled()
		s.full = true
	}
}

// Start copies t's routes into fp, ports[i] being output port i's device
// (nil: not offloaded), and keeps it in step until Close.
func Start(t *route.Table, fp drivers.FastPathTable, ports []drivers.Device, st *elements.Stats) (*Sync, error) {
	s := &Sync{t: t, fp: fp, ports: ports, applied: st.Counter("offload routes applied"),
		failed: st.Counter("offload errors"), toGraph: st.Counter("offload left to graph"),
		stop: make(chan struct{}), done: make(chan struct{})}
	// Journal first, then walk: a change between the two is in both,
	// and applying it twice is harmless.
	t.StartJournal()
	if err := s.sync(); err != nil {
		s.clear()
		return nil, elements.Errorf("offload", "programming the fast path: %v", err)
	}
	go s.run()
	return s, nil
}

func (s *Sync) run() {
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

// want is the fast path's view of route r. A blackhole, unreachable or
// prohibit route is held as "never forward here", so that the fast path
// hands its packets to the graph (which drops them) instead of
// forwarding them by a covering prefix.
func (s *Sync) want(r route.Route) offloadRoute {
	if r.Type != route.Unicast || len(r.Also) > 0 || r.Out >= len(s.ports) || s.ports[r.Out] == nil {
		return offloadRoute{}
	}
	return offloadRoute{gw: r.NextHop, out: s.ports[r.Out]}
}

// sync brings the fast path up to the table's current version: from the
// table's journal of changed prefixes when it covers the versions since the
// last sync (the cost of the change), by a walk of the whole table at start,
// after a rebuild, or after a failed call. A prefix whose SetRoute failed is
// deleted from the fast path (it must not go on forwarding by the old
// route), and full forces the next round to walk and set it again.
func (s *Sync) sync() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.have != nil && !s.full {
		if s.changed == nil {
			s.changed = map[netip.Prefix]route.Change{}
		}
		v, ok := s.t.ChangesSince(s.ver, s.changed)
		if ok {
			if v == s.ver {
				return nil
			}
			// Every change goes to the fast path, without asking have
			// first: a journaled change is nearly always a real one,
			// and a deletion of a prefix the fast path lacks is not an
			// error (drivers.FastPathTable). With a full table, each
			// look-up in have was a cache miss per change.
			c := &s.c
			c.sets, c.dels = c.sets[:0], c.dels[:0]
			for p, ch := range s.changed {
				if ch.Delete {
					c.dels = append(c.dels, p)
					continue
				}
				w := s.want(ch.Route)
				c.sets = append(c.sets, drivers.FastRoute{Prefix: p, Gw: w.gw, Out: w.out})
			}
			n, errs := s.apply(c)
			s.ver = v
			s.full = len(errs) > 0
			s.applied.Add(n)
			s.countToGraph()
			return errors.Join(errs...)
		}
	}
	return s.walk()
}

// changes are one round's route changes for the fast path.
type changes struct {
	sets []drivers.FastRoute
	dels []netip.Prefix
}

// batchMax bounds the routes given to the fast path in one call of a
// batching table.
const batchMax = 4096

// apply makes the fast path hold c, in batches when the table takes them
// (a full table is a million routes, each a system call on its own), and
// returns how many changes took and the errors of those that did not. A
// route that could not be set is deleted from the fast path (it must not
// go on forwarding by the old one).
func (s *Sync) apply(c *changes) (n uint64, errs []error) {
	b, batched := s.fp.(drivers.FastPathRouteBatcher)
	if !batched {
		for _, r := range c.sets {
			if err := s.set(r.Prefix, offloadRoute{gw: r.Gw, out: r.Out}); err != nil {
				errs = append(errs, err)
				continue
			}
			n++
		}
		for _, p := range c.dels {
			if err := s.fp.DeleteRoute(p); err != nil {
				errs = append(errs, err)
				continue
			}
			s.have.del(p)
			n++
		}
		return n, errs
	}
	if len(s.res) < batchMax {
		s.res = make([]error, batchMax)
	}
	res := s.res
	for sets := c.sets; len(sets) > 0; {
		chunk := sets[:min(batchMax, len(sets))]
		sets = sets[len(chunk):]
		b.SetRoutes(chunk, res)
		for i, r := range chunk {
			if err := res[i]; err != nil {
				if s.fp.DeleteRoute(r.Prefix) == nil {
					s.have.del(r.Prefix)
				}
				errs = append(errs, err)
				continue
			}
			s.have.set(r.Prefix, offloadRoute{gw: r.Gw, out: r.Out})
			n++
		}
	}
	for dels := c.dels; len(dels) > 0; {
		chunk := dels[:min(batchMax, len(dels))]
		dels = dels[len(chunk):]
		b.DeleteRoutes(chunk, res)
		for i, p := range chunk {
			if err := res[i]; err != nil {
				errs = append(errs, err)
				continue
			}
			s.have.del(p)
			n++
		}
	}
	return n, errs
}

// set installs w for p, or on failure takes p out of the fast path.
func (s *Sync) set(p netip.Prefix, w offloadRoute) error {
	if err := s.fp.SetRoute(p, w.gw, w.out); err != nil {
		if s.fp.DeleteRoute(p) == nil {
			s.have.del(p)
		}
		return err
	}
	s.have.set(p, w)
	return nil
}

// walk compares the whole table with what the fast path holds.
func (s *Sync) walk() error {
	v := s.t.Version() // Routes is at least this version; the journal covers what follows
	if s.have == nil {
		s.have = newInstalled()
	}
	seen := make(map[netip.Prefix]struct{}, s.have.len())
	var c changes
	for _, r := range s.t.Routes() {
		seen[r.Prefix] = struct{}{}
		w := s.want(r)
		if old, ok := s.have.get(r.Prefix); ok && old == w {
			continue
		}
		c.sets = append(c.sets, drivers.FastRoute{Prefix: r.Prefix, Gw: w.gw, Out: w.out})
	}
	s.have.each(func(p netip.Prefix) {
		if _, ok := seen[p]; !ok {
			c.dels = append(c.dels, p)
		}
	})
	n, errs := s.apply(&c)
	s.ver = v
	s.full = len(errs) > 0
	s.applied.Add(n)
	s.countToGraph()
	return errors.Join(errs...)
}

// countToGraph copies what the fast path says it left to the graph
// (drivers.FastPathRouteUse) into the element's counter.
func (s *Sync) countToGraph() {
	if u, ok := s.fp.(drivers.FastPathRouteUse); ok {
		s.toGraph.Store(u.RoutesToGraph())
	}
}

// clear removes every route this mirror installed.
func (s *Sync) clear() {
	if s.have != nil {
		s.have.each(func(p netip.Prefix) { _ = s.fp.DeleteRoute(p) })
	}
	s.have = nil
}

// Close stops the mirror and removes its routes from the fast path; a
// peer still running (HandOver) sets its own again.
func (s *Sync) Close() error {
	close(s.stop)
	<-s.done
	s.mu.Lock()
	s.clear()
	s.closed = true
	peers := s.peers
	s.peers = nil
	s.mu.Unlock()
	for _, p := range peers {
		p.resetAll()
	}
	return nil
}
