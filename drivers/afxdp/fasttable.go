package afxdp

import (
	"errors"
	"fmt"
	"net/netip"
	"sync"
	"time"

	"github.com/junction-dataplane/junction/drivers"
	"github.com/junction-dataplane/junction/drivers/afxdp/fastpath"
	"github.com/junction-dataplane/junction/packet"
)

// Fast-path table sizes: the route LPM trie and the neighbour hash. The
// kernel allocates trie nodes as routes arrive; the sizes are limits.
const (
	fastMaxRoutes    = 1 << 20
	fastMaxNeighbors = 1 << 16
	// fastMaxFlows bounds the offloaded flow directions (the kernel
	// preallocates the hash map: a 20-byte key and a 44-byte value per
	// entry, plus its element header, and a 16-byte counter slot).
	fastMaxFlows = 1 << 18
)

// fastTable is the process's one fast-path table, shared by every afxdp
// device with fastpath = true (so that a route may lead from one to
// another), counted by the devices that use it and closed with the last.
// It implements drivers.FastPathTable on top of fastpath.Tables: devices
// become interface indexes, and the devices' own addresses stay local
// whatever routes are set over them.
type fastTable struct {
	mu     sync.Mutex
	t      *fastpath.Tables
	refs   int
	locals map[netip.Prefix]int // /32s of device addresses: how many devices hold each
}

var (
	fastMu     sync.Mutex
	fastShared *fastTable
)

func acquireFastTable() (*fastTable, error) {
	fastMu.Lock()
	defer fastMu.Unlock()
	if fastShared == nil {
		t, err := fastpath.NewTables(fastMaxRoutes, fastMaxNeighbors, fastMaxFlows)
		if err != nil {
			return nil, err
		}
		fastShared = &fastTable{t: t, locals: map[netip.Prefix]int{}}
	}
	fastShared.refs++
	return fastShared, nil
}

func (f *fastTable) release() error {
	fastMu.Lock()
	defer fastMu.Unlock()
	if f.refs--; f.refs > 0 {
		return nil
	}
	fastShared = nil
	return f.t.Close()
}

// addLocal marks the device address a as the router's own: never
// forwarded by the fast path.
func (f *fastTable) addLocal(a netip.Addr) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	p := netip.PrefixFrom(a, 32)
	if err := f.t.SetRoute(p, fastpath.Route{Local: true}); err != nil {
		return err
	}
	f.locals[p]++
	return nil
}

func (f *fastTable) removeLocal(a netip.Addr) {
	f.mu.Lock()
	defer f.mu.Unlock()
	p := netip.PrefixFrom(a, 32)
	if f.locals[p]--; f.locals[p] > 0 {
		return
	}
	delete(f.locals, p)
	_ = f.t.DeleteRoute(p)
}

// fastDevice is the fast-path device behind out.
func fastDevice(out drivers.Device) (*Device, error) {
	d, ok := out.(*Device)
	if !ok || d.ft == nil {
		return nil, fmt.Errorf("device %T is not an afxdp device with fastpath = true", out)
	}
	return d, nil
}

// SetRoute implements drivers.FastPathTable.
func (f *fastTable) SetRoute(p netip.Prefix, gw netip.Addr, out drivers.Device) error {
	if !p.Addr().Is4() || gw.IsValid() && !gw.Is4() {
		return fmt.Errorf("fast path: %s via %s: IPv4 only", p, gw)
	}
	p = p.Masked()
	r := fastpath.Route{Local: out == nil}
	if out != nil {
		d, err := fastDevice(out)
		if err != nil {
			return err
		}
		r.Ifindex, r.Gateway = d.ifindex, gw
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.locals[p] > 0 {
		return nil // the router's own address stays local
	}
	return f.t.SetRoute(p, r)
}

// DeleteRoute implements drivers.FastPathTable.
func (f *fastTable) DeleteRoute(p netip.Prefix) error {
	if !p.Addr().Is4() {
		return nil
	}
	p = p.Masked()
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.locals[p] > 0 {
		return nil
	}
	return f.t.DeleteRoute(p)
}

// SetNeighbor implements drivers.FastPathTable: frames to ip leave out
// with the device's own MAC as source.
func (f *fastTable) SetNeighbor(out drivers.Device, ip netip.Addr, mac packet.MAC, lifetime time.Duration) error {
	d, err := fastDevice(out)
	if err != nil {
		return err
	}
	return f.t.SetNeighbor(d.ifindex, ip, mac, d.info.MAC, lifetime)
}

// DeleteNeighbor implements drivers.FastPathTable.
func (f *fastTable) DeleteNeighbor(out drivers.Device, ip netip.Addr) error {
	d, err := fastDevice(out)
	if err != nil {
		return err
	}
	return f.t.DeleteNeighbor(d.ifindex, ip)
}

// flowOf translates a FastFlow to the program's key and action.
func flowOf(f drivers.FastFlow) (fastpath.FlowKey, fastpath.FlowAction, error) {
	in, err := fastDevice(f.In)
	if err != nil {
		return fastpath.FlowKey{}, fastpath.FlowAction{}, err
	}
	out, err := fastDevice(f.Out)
	if err != nil {
		return fastpath.FlowKey{}, fastpath.FlowAction{}, err
	}
	return fastpath.FlowKey{Ifindex: in.ifindex, Proto: f.Proto, Src: f.Src, Dst: f.Dst, Sport: f.Sport, Dport: f.Dport},
		fastpath.FlowAction{Ifindex: out.ifindex, EthDst: f.EthDst, EthSrc: f.EthSrc, Src: f.NewSrc, Dst: f.NewDst,
			Sport: f.NewSport, Dport: f.NewDport, TTLDec: f.TTLDec, ICMPType: f.ICMPType, Gen: f.Gen}, nil
}

// SetFlow implements drivers.FastPathTable.
func (f *fastTable) SetFlow(fl drivers.FastFlow) (int, error) {
	k, a, err := flowOf(fl)
	if err != nil {
		return 0, err
	}
	// AddFlow, not SetFlow: a direction another worker's tracker
	// installed (it reached two workers) stays that worker's, counted in
	// its slot.
	slot, err := f.t.AddFlow(k, a)
	switch {
	case errors.Is(err, fastpath.ErrFlowsFull):
		return 0, drivers.ErrFlowsFull
	case errors.Is(err, fastpath.ErrFlowExists):
		return 0, drivers.ErrFlowExists
	}
	return slot, err
}

// DeleteFlow implements drivers.FastPathTable.
func (f *fastTable) DeleteFlow(fl drivers.FastFlow, slot int) error {
	k, _, err := flowOf(fl)
	if err != nil {
		return err
	}
	return f.t.DeleteFlow(k, slot)
}

// FlowCounters implements drivers.FastPathTable.
func (f *fastTable) FlowCounters(slot int) (uint64, uint64) { return f.t.FlowCounters(slot) }

// SetFlowGeneration implements drivers.FastPathTable.
func (f *fastTable) SetFlowGeneration(g uint32) error { return f.t.SetFlowGeneration(g) }

// FastPathTable implements drivers.FastPath: the shared table, or nil when
// the device was opened without fastpath.
func (d *Device) FastPathTable() drivers.FastPathTable {
	if d.ft == nil {
		return nil
	}
	return d.ft
}

var _ drivers.FastPath = (*Device)(nil)

// openFastPath loads the device's fast-path program (in place of v0.3.3's
// plain one) and marks the device's addresses local.
func (d *Device) openFastPath(queues int) error {
	ft, err := acquireFastTable()
	if err != nil {
		return err
	}
	d.ft = ft
	if d.fp, err = fastpath.NewProgram(ft.t, queues, d.info.MAC); err != nil {
		return err
	}
	d.prog = d.fp.XDP()
	for _, a := range d.info.Addresses {
		if a.Addr().Is4() {
			if err := ft.addLocal(a.Addr()); err != nil {
				return err
			}
			d.locals = append(d.locals, a.Addr())
		}
	}
	return nil
}

// closeFastPath undoes openFastPath but for the program, which d.prog's
// Close releases.
func (d *Device) closeFastPath() error {
	if d.ft == nil {
		return nil
	}
	for _, a := range d.locals {
		d.ft.removeLocal(a)
	}
	d.locals = nil
	err := d.ft.release()
	d.ft = nil
	return err
}
