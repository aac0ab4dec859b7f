package fasttrack

import (
	"errors"
	"net/netip"
	"sync/atomic"

	"github.com/junction-dataplane/junction/drivers"
	"github.com/junction-dataplane/junction/elements"
	"github.com/junction-dataplane/junction/elements/conntrack"
	"github.com/junction-dataplane/junction/elements/offloadkey"
	"github.com/junction-dataplane/junction/packet"
)

// Fast.Offload states.
const (
	offNone    = iota // not handed to the device
	offPending        // queued for the next Tick
	offDone           // installed in the device's fast path
	offRefused        // the device cannot take it (full, no device): stays here until the next generation
)

// The work a tick may do, so that a worker's ticks stay short whatever
// the number of flows (a tick runs between batches on the worker):
//   - foldEvery: each installed direction is visited once per this period
//     (a tick visits its share, in proportion to the time since the last
//     one): its kernel counters are folded into its conntrack entry
//     (packets, bytes, timeout refresh), and it is taken out of the
//     kernel if its flow ended or changed;
//   - installsPerTick and deletesPerTick bound the system calls of one
//     tick (an install is two bpf(2) calls, a delete one; what they cost
//     is in benchmarks/nat.md, "Offload control-plane cost"), so a tick
//     spends a small part of itself on them, whatever happens: a flood of
//     new fast-tracked flows (16k installs/s per worker) or a new
//     generation retiring every entry is worked off over many ticks.
//     Entries of an old generation stop applying at once regardless
//     (SetFlowGeneration), and a direction waiting to be installed is
//     fast-tracked by FastTrack itself meanwhile.
const (
	foldEvery       = int64(100e6) // 100 ms
	installsPerTick = 16
	deletesPerTick  = 32
)

// offloaded is one flow direction (IPv4 or IPv6) queued for or installed
// in a device's fast path.
type offloaded struct {
	idx        uint32
	tag        uint32
	dir        uint8
	in         uint8 // IPv6: the low 8 bits of the input device index, as offload.ins
	slot       int
	flow       drivers.FastFlow
	pkts, byts uint64 // kernel counters already folded
}

// directions are one family's queued and installed directions.
type directions struct {
	pending []offloaded    // queued by hits, installed by Tick
	done    []offloaded    // installed, visited round robin from cur
	byKey   map[offKey]int // index in done of each installed key
	cur     int
}

// installed drops the first n pending directions (Tick installed them).
func (l *directions) installed(n int) {
	rest := copy(l.pending, l.pending[n:])
	clear(l.pending[rest:])
	l.pending = l.pending[:rest]
}

// visits is how many installed directions a tick at now visits: all of
// them once per foldEvery, in proportion to the time since the last tick.
func (l *directions) visits(now, lastTick int64) int {
	visits := len(l.done)
	if dt := now - lastTick; lastTick != 0 && dt < foldEvery {
		visits = int((int64(len(l.done))*dt + foldEvery - 1) / foldEvery)
	}
	return visits
}

// cut takes done[i] out of the list (the last entry takes its place).
func (l *directions) cut(i int) {
	delete(l.byKey, keyOf(&l.done[i].flow))
	last := len(l.done) - 1
	if i != last {
		l.done[i] = l.done[last]
		l.byKey[keyOf(&l.done[i].flow)] = i
	}
	l.done[last] = offloaded{}
	l.done = l.done[:last]
}

// offload is one FastTrack instance's link to its devices' fast path: the
// table, the devices by fast output and by input-device index, the flows
// waiting to be installed and those installed.
type offload struct {
	fp       drivers.FastPathTable
	outs     []drivers.Device         // by fast output - 1
	ins      map[uint8]drivers.Device // by the low 8 bits of the input device index (Conn.Dev)
	v4       directions
	v6       directions // IPv6 flows (offload6.go)
	gen      uint32     // the generation the kernel has (SetFlowGeneration)
	lastTick int64

	flows                                        *atomic.Uint64 // gauge: installed directions
	packets, full, errs, ended, other, elsewhere *atomic.Uint64
	unavailable                                  *atomic.Uint64 // the device's in-kernel fast path is off
}

// newOffload resolves the offload key: one device name per fast output.
func newOffload(names []string, ctx *elements.Context) (*offload, error) {
	o := &offload{ins: map[uint8]drivers.Device{}, v4: directions{byKey: map[offKey]int{}},
		flows: ctx.Stats.Counter("offloaded flows"), packets: ctx.Stats.Counter("offloaded packets"),
		full: ctx.Stats.Counter("offload full"), errs: ctx.Stats.Counter("offload errors"),
		ended: ctx.Stats.Counter("offload ended"), other: ctx.Stats.Counter("not offloadable"),
		elsewhere: ctx.Stats.Counter("offloaded elsewhere"), unavailable: ctx.Stats.Counter("offload unavailable")}
	devs, idx, fp, err := offloadkey.Resolve(ctx.Devices, "offload", names)
	if err != nil {
		return nil, err
	}
	o.fp, o.outs = fp, devs
	for i, d := range devs {
		if d != nil {
			o.ins[uint8(idx[i])] = d
		}
	}
	o.gen = conntrack.GenerationOf(ctx).Current()
	if err := o.fp.SetFlowGeneration(o.gen); err != nil {
		return nil, elements.Errorf("offload", "setting the fast path's flow generation: %v", err)
	}
	return o, nil
}

// offKey is an installed direction's key in the kernel.
type offKey struct {
	in           drivers.Device
	proto        uint8
	src, dst     netip.Addr
	sport, dport uint16
}

func keyOf(f *drivers.FastFlow) offKey {
	return offKey{f.In, f.Proto, f.Src, f.Dst, f.Sport, f.Dport}
}

// queue records that direction dir of flow idx took FastTrack's path and
// may go to the kernel (no system call here: Tick installs it).
func (o *offload) queue(idx uint32, c *conntrack.Conn, dir uint8) {
	c.Fast[dir].Offload = offPending
	o.v4.pending = append(o.v4.pending, offloaded{idx: idx, tag: c.Tag, dir: dir})
}

// live reports whether the flow direction o describes may stay in (or go
// to) the kernel: same flow, fast path learned in this generation,
// trackable state, not expired.
func live(t *conntrack.Table, x *offloaded, gen uint32, now int64) bool {
	c := t.Conn(x.idx)
	if c.Tag == x.tag {
		t.Sync(x.idx) // hits another FastTrack's flow cache took
	}
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
	fl := drivers.FastFlow{In: in, Proto: k.Proto, Src: packet.AddrFromU32(k.Src), Dst: packet.AddrFromU32(k.Dst), Sport: k.Sport, Dport: k.Dport,
		Out: o.outs[f.Out-1], NewSrc: packet.AddrFromU32(r.Dst), NewDst: packet.AddrFromU32(r.Src), NewSport: r.Dport, NewDport: r.Sport,
		TTLDec: f.TTLDec, EthDst: packet.MAC(f.Eth[0:6]), EthSrc: packet.MAC(f.Eth[6:12])}
	if k.Proto == packet.ProtoICMP {
		fl.ICMPType = packet.ICMPEchoReply
		if dir == 0 {
			fl.ICMPType = packet.ICMPEchoRequest
		}
	}
	return fl, true
}

// tick tells the kernel a new generation at once, installs up to
// installsPerTick queued directions, and visits its share of the
// installed ones (fold).
func (e *FastTrack) tick(now int64) {
	o, t := e.off, e.t
	gen := e.gen.Current()
	if gen != o.gen {
		if err := o.fp.SetFlowGeneration(gen); err != nil {
			// The kernel may go on applying old entries: take them
			// all out now, whatever it costs.
			o.errs.Add(1)
			e.removeAll()
			e.removeAll6()
		}
		o.gen = gen
	}
	n := 0
	for ; n < len(o.v4.pending) && n < installsPerTick; n++ {
		e.install(&o.v4.pending[n], gen)
	}
	o.v4.installed(n)

	visits := o.v4.visits(now, o.lastTick)
	e.tick6(now, gen)
	o.lastTick = now
	e.fold(t.Now(), visits)
}

// install puts a queued direction into the kernel if it is still live.
func (e *FastTrack) install(x *offloaded, gen uint32) {
	o, t := e.off, e.t
	c := t.Conn(x.idx)
	if c.Tag != x.tag {
		return // evicted since: the new flow's state is its own
	}
	f := &c.Fast[x.dir]
	if !live(t, x, gen, t.Now()) {
		f.Offload = offNone
		return
	}
	fl, ok := o.flowFor(c, x.dir)
	if !ok {
		f.Offload = offRefused
		o.other.Add(1)
		return
	}
	fl.Gen = gen
	if i, ok := o.v4.byKey[keyOf(&fl)]; ok {
		e.remove(i) // our own entry of an older generation, not yet deleted
	}
	o.set(&o.v4, x, f, fl)
}

// set installs fl, the kernel's description of x (whose conntrack state
// is f), and adds x to l; or counts why the kernel refused it.
func (o *offload) set(l *directions, x *offloaded, f *conntrack.Fast, fl drivers.FastFlow) {
	slot, err := o.fp.SetFlow(fl)
	if err != nil {
		f.Offload = offRefused
		switch {
		case errors.Is(err, drivers.ErrFlowsFull):
			o.full.Add(1)
		case errors.Is(err, drivers.ErrFlowExists):
			o.elsewhere.Add(1)
		case errors.Is(err, drivers.ErrNoFastPath):
			o.unavailable.Add(1)
		default:
			o.errs.Add(1)
		}
		return
	}
	x.flow, x.slot, x.pkts, x.byts = fl, slot, 0, 0
	f.Offload = offDone
	l.byKey[keyOf(&fl)] = len(l.done)
	l.done = append(l.done, *x)
	o.flows.Add(1)
}

// unset takes done[i] of l out of the kernel and of l; f is its conntrack
// state (nil when the flow is no longer x's).
func (o *offload) unset(l *directions, i int, f *conntrack.Fast) {
	x := &l.done[i]
	if err := o.fp.DeleteFlow(x.flow, x.slot); err != nil {
		o.errs.Add(1)
	}
	if f != nil && f.Offload == offDone {
		f.Offload = offNone
	}
	l.cut(i)
	o.ended.Add(1)
	o.flows.Add(^uint64(0))
}

// kernelCounts returns what the kernel forwarded for x since the last
// visit, and remembers its counters.
func (o *offload) kernelCounts(x *offloaded) (uint64, uint64) {
	p, b := o.fp.FlowCounters(x.slot)
	if p < x.pkts || b < x.byts {
		// The slot was reset under us (it should not be: keys are
		// not shared): count from zero.
		x.pkts, x.byts = 0, 0
	}
	dp, db := p-x.pkts, b-x.byts
	x.pkts, x.byts = p, b
	return dp, db
}

// fold visits up to visits installed directions, round robin: it adds what
// the kernel forwarded since the last visit to the flow (packets, bytes,
// and a refreshed timeout when it moved, as a hit in FastTrack would) and
// to the element's counters, and takes out of the kernel, up to
// deletesPerTick, the directions that are no longer live.
func (e *FastTrack) fold(now int64, visits int) {
	o, t := e.off, e.t
	gen := e.gen.Current()
	l := &o.v4
	var hits, bytes uint64
	deletes := 0
	for v := 0; v < visits && len(l.done) > 0; v++ {
		if l.cur >= len(l.done) {
			l.cur = 0
		}
		x := &l.done[l.cur]
		dp, db := e.collect(x, now)
		hits += dp
		bytes += db
		if live(t, x, gen, now) || deletes >= deletesPerTick {
			l.cur++
			continue
		}
		e.remove(l.cur) // the last entry moves to cur: visited next
		deletes++
	}
	e.count(hits, bytes)
}

// collect folds what the kernel forwarded for x since the last visit into
// its flow and returns it.
func (e *FastTrack) collect(x *offloaded, now int64) (uint64, uint64) {
	t := e.t
	dp, db := e.off.kernelCounts(x)
	if c := t.Conn(x.idx); dp != 0 && c.Tag == x.tag {
		c.Packets[x.dir] += uint32(dp)
		c.Bytes[x.dir] += db
		if e.idle > 0 {
			c.Expires = now + e.idle
		} else {
			c.Expires = now + t.TimeoutOf(c)
		}
	}
	return dp, db
}

// count adds kernel-forwarded packets to the element's counters.
func (e *FastTrack) count(hits, bytes uint64) {
	if hits != 0 {
		e.pkts.Add(hits)
		e.hits.Add(hits)
		e.bytes.Add(bytes)
		e.off.packets.Add(hits)
	}
}

// remove takes done[i] out of the kernel and of done (the last entry
// takes its place).
func (e *FastTrack) remove(i int) {
	o := e.off
	x := &o.v4.done[i]
	var f *conntrack.Fast
	if c := e.t.Conn(x.idx); c.Tag == x.tag {
		f = &c.Fast[x.dir]
	}
	o.unset(&o.v4, i, f)
}

// removeAll folds the last counts and takes every direction out of the
// kernel (Close, or a generation the kernel did not take).
func (e *FastTrack) removeAll() {
	l := &e.off.v4
	now := e.t.Now()
	var hits, bytes uint64
	for len(l.done) > 0 {
		dp, db := e.collect(&l.done[len(l.done)-1], now)
		hits += dp
		bytes += db
		e.remove(len(l.done) - 1)
	}
	l.cur = 0
	e.count(hits, bytes)
}
