package fasttrack

import (
	"errors"
	"net/netip"
	"sync/atomic"

	"github.com/junction-dataplane/junction/drivers"
	"github.com/junction-dataplane/junction/elements"
	"github.com/junction-dataplane/junction/elements/conntrack"
	"github.com/junction-dataplane/junction/packet"
)

// Fast.Offload states.
const (
	offNone    = iota // not handed to the device
	offPending        // queued for the next Tick
	offDone           // installed in the device's fast path
	offRefused        // the device cannot take it (full, no device): stays here until the next generation
)

// foldEvery is how often the offloaded flows' kernel counters are folded
// into their conntrack entries (packets, bytes, timeout refresh), and
// flows that ended or changed are taken out of the kernel.
const foldEvery = int64(100e6) // 100 ms

// offloaded is one flow direction installed in a device's fast path.
type offloaded struct {
	idx        uint32
	tag        uint32
	dir        uint8
	slot       int
	flow       drivers.FastFlow
	pkts, byts uint64 // kernel counters already folded
}

// offload is one FastTrack instance's link to its devices' fast path: the
// table, the devices by fast output and by input-device index, the flows
// waiting to be installed and those installed.
type offload struct {
	fp       drivers.FastPathTable
	outs     []drivers.Device         // by fast output - 1
	ins      map[uint8]drivers.Device // by the low 8 bits of the input device index (Conn.Dev)
	pending  []offloaded              // queued by hits, installed by Tick
	done     []offloaded
	gen      uint32
	lastFold int64

	flows                                        *atomic.Uint64 // gauge: installed directions
	packets, full, errs, ended, other, elsewhere *atomic.Uint64
}

// newOffload resolves the offload key: one device name per fast output.
func newOffload(names []string, ctx *elements.Context) (*offload, error) {
	o := &offload{outs: make([]drivers.Device, len(names)), ins: map[uint8]drivers.Device{}, gen: conntrack.Generation(),
		flows: ctx.Stats.Counter("offloaded flows"), packets: ctx.Stats.Counter("offloaded packets"),
		full: ctx.Stats.Counter("offload full"), errs: ctx.Stats.Counter("offload errors"),
		ended: ctx.Stats.Counter("offload ended"), other: ctx.Stats.Counter("not offloadable"),
		elsewhere: ctx.Stats.Counter("offloaded elsewhere")}
	for i, n := range names {
		if n == "" {
			continue
		}
		if ctx.Devices == nil {
			return nil, elements.Errorf("offload", "output %d: no devices in this graph", i+1)
		}
		d, idx, ok := ctx.Devices.Device(n)
		if !ok {
			return nil, elements.Errorf("offload", "output %d: no device %q", i+1, n)
		}
		f, ok := d.(drivers.FastPath)
		if !ok || f.FastPathTable() == nil {
			return nil, elements.Errorf("offload", "output %d: device %q has no fast path (it needs driver = \"afxdp\" with fastpath = true)", i+1, n)
		}
		if o.fp == nil {
			o.fp = f.FastPathTable()
		} else if o.fp != f.FastPathTable() {
			return nil, elements.Errorf("offload", "output %d: device %q belongs to another fast path than the earlier outputs'", i+1, n)
		}
		o.outs[i] = d
		o.ins[uint8(idx)] = d
	}
	if o.fp == nil {
		return nil, elements.Errorf("offload", "names no device")
	}
	return o, nil
}

// queue records that direction dir of flow idx took FastTrack's path and
// may go to the kernel (no system call here: Tick installs it).
func (o *offload) queue(idx uint32, c *conntrack.Conn, dir uint8) {
	c.Fast[dir].Offload = offPending
	o.pending = append(o.pending, offloaded{idx: idx, tag: c.Tag, dir: dir})
}

// live reports whether the flow direction o describes may stay in (or go
// to) the kernel: same flow, fast path learned in this generation,
// trackable state, not expired.
func live(t *conntrack.Table, x *offloaded, gen uint32, now int64) bool {
	c := t.Conn(x.idx)
	f := &c.Fast[x.dir]
	return c.Tag == x.tag && f.Valid && f.Gen == gen && conntrack.IsFastPathState(c) && now < c.Expires
}

// flowFor is the kernel's description of direction dir of c: its tuple as
// it arrives, the inverse of the other direction's tuple as it leaves
// (what rewrite produces).
func (o *offload) flowFor(c *conntrack.Conn, dir uint8) (drivers.FastFlow, bool) {
	f := &c.Fast[dir]
	in := o.ins[c.Dev[dir]]
	if in == nil || f.Out == 0 || int(f.Out) > len(o.outs) || o.outs[f.Out-1] == nil {
		return drivers.FastFlow{}, false
	}
	k, r := c.T[dir], c.T[1-dir]
	fl := drivers.FastFlow{In: in, Proto: k.Proto, Src: addr4(k.Src), Dst: addr4(k.Dst), Sport: k.Sport, Dport: k.Dport,
		Out: o.outs[f.Out-1], NewSrc: addr4(r.Dst), NewDst: addr4(r.Src), NewSport: r.Dport, NewDport: r.Sport,
		TTLDec: f.TTLDec, EthDst: packet.MAC(f.Eth[0:6]), EthSrc: packet.MAC(f.Eth[6:12])}
	if k.Proto == packet.ProtoICMP {
		fl.ICMPType = packet.ICMPEchoReply
		if dir == 0 {
			fl.ICMPType = packet.ICMPEchoRequest
		}
	}
	return fl, true
}

func addr4(v uint32) netip.Addr {
	return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)})
}

// tick installs the queued flows, folds the kernel's counters into the
// flows every foldEvery, and takes out of the kernel every direction that
// is no longer live. A new generation (a route, NAT or neighbour change)
// takes them all out at once.
func (e *FastTrack) tick(now int64) {
	o, t := e.off, e.t
	gen := conntrack.Generation()
	if gen != o.gen {
		o.gen = gen
		e.fold(t.Now(), true)
	}
	for i := range o.pending {
		x := &o.pending[i]
		c := t.Conn(x.idx)
		if c.Tag != x.tag {
			continue // evicted since: the new flow's state is its own
		}
		f := &c.Fast[x.dir]
		if !live(t, x, gen, t.Now()) {
			f.Offload = offNone
			continue
		}
		fl, ok := o.flowFor(c, x.dir)
		if !ok {
			f.Offload = offRefused
			o.other.Add(1)
			continue
		}
		slot, err := o.fp.SetFlow(fl)
		if err != nil {
			f.Offload = offRefused
			switch {
			case errors.Is(err, drivers.ErrFlowsFull):
				o.full.Add(1)
			case errors.Is(err, drivers.ErrFlowExists):
				o.elsewhere.Add(1)
			default:
				o.errs.Add(1)
			}
			continue
		}
		x.flow, x.slot = fl, slot
		x.pkts, x.byts = 0, 0
		f.Offload = offDone
		o.done = append(o.done, *x)
		o.flows.Add(1)
	}
	o.pending = o.pending[:0]
	if now-o.lastFold >= foldEvery {
		o.lastFold = now
		e.fold(t.Now(), false)
	}
}

// fold adds what the kernel forwarded since the last fold to each flow
// (packets, bytes, and a refreshed timeout when it moved, as a hit in
// FastTrack would) and to the element's counters, then removes every
// direction that is no longer live, or all of them.
func (e *FastTrack) fold(now int64, all bool) {
	o, t := e.off, e.t
	gen := conntrack.Generation()
	var hits, bytes uint64
	k := 0
	for i := range o.done {
		x := &o.done[i]
		p, b := o.fp.FlowCounters(x.slot)
		if p < x.pkts || b < x.byts {
			// The slot was reset under us (another worker installed the
			// same key, replacing ours): count from zero.
			x.pkts, x.byts = 0, 0
		}
		dp, db := p-x.pkts, b-x.byts
		x.pkts, x.byts = p, b
		c := t.Conn(x.idx)
		same := c.Tag == x.tag
		if dp != 0 && same {
			c.Packets[x.dir] += uint32(dp)
			c.Bytes[x.dir] += db
			if e.idle > 0 {
				c.Expires = now + e.idle
			} else {
				c.Expires = now + t.TimeoutOf(c)
			}
		}
		hits += dp
		bytes += db
		if !all && live(t, x, gen, now) {
			o.done[k] = *x
			k++
			continue
		}
		if err := o.fp.DeleteFlow(x.flow, x.slot); err != nil {
			o.errs.Add(1)
		}
		if same {
			c.Fast[x.dir].Offload = offNone
		}
		o.ended.Add(1)
		o.flows.Add(^uint64(0))
	}
	clear(o.done[k:])
	o.done = o.done[:k]
	if hits != 0 {
		e.pkts.Add(hits)
		e.hits.Add(hits)
		e.bytes.Add(bytes)
		o.packets.Add(hits)
	}
}
