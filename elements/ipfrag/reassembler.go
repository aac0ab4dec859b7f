package ipfrag

import (
	"encoding/binary"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/junction-dataplane/junction/elements"
	"github.com/junction-dataplane/junction/elements/flowsteer"
	"github.com/junction-dataplane/junction/internal/wakeup"
	"github.com/junction-dataplane/junction/packet"
)

// ReassemblerConfig is IPReassembler's configuration.
type ReassemblerConfig struct {
	Capacity     int           `toml:"capacity"`
	Timeout      time.Duration `toml:"timeout"`
	MaxFragments int           `toml:"max_fragments"`
}

// Validate checks the bounds.
func (c *ReassemblerConfig) Validate() error {
	if c.Capacity < 1 || c.Capacity > 65536 {
		return elements.Errorf("capacity", "%d out of range 1..65536 (datagrams in reassembly per worker)", c.Capacity)
	}
	if c.Timeout <= 0 || c.Timeout > 10*time.Minute {
		return elements.Errorf("timeout", "%v out of range (0, 10m]", c.Timeout)
	}
	if c.MaxFragments < 2 || c.MaxFragments > 8192 {
		return elements.Errorf("max_fragments", "%d out of range 2..8192", c.MaxFragments)
	}
	return nil
}

// Drop reasons, by index (names in reasonNames).
const (
	rTimeout = iota
	rFull
	rOverlap
	rTooMany
	rTiny
	rOversized
	rMalformed
	rNoBuffer
	rHandoff
	rDuplicate
	rReload
	rCount
)

var reasonNames = [rCount]string{
	rTimeout:   "timeout",
	rFull:      "table full",
	rOverlap:   "overlapping fragments",
	rTooMany:   "too many fragments",
	rTiny:      "tiny first fragment",
	rOversized: "datagram over 65535 bytes",
	rMalformed: "malformed fragment",
	rNoBuffer:  "no buffer",
	rHandoff:   "handoff full",
	rDuplicate: "duplicate fragment",
	rReload:    "reload: no room",
}

// MemoryPerWorker is the most an instance's pool of datagram buffers can
// take in one worker (elements.MemoryUser): capacity buffers, those lent
// to another worker and a batch in flight (with one other worker and the
// default batch; more workers lend more, 16 buffers each).
func (c *ReassemblerConfig) MemoryPerWorker() (uint64, string) {
	return uint64(c.Capacity+lendDepth+1+packet.DefaultBatch) * bufSize, "capacity"
}

var _ elements.MemoryUser = (*ReassemblerConfig)(nil)

func init() {
	elements.Register(elements.Type{
		Name:      "IPReassembler",
		NewConfig: func() any { return &ReassemblerConfig{Capacity: 64, Timeout: 30 * time.Second, MaxFragments: 64} },
		New:       newReassembler,
		In:        1, Out: 1,
		TakesState: true, // a reload carries the datagrams in reassembly over (reload.go)
		Doc:        ipReassemblerManual,
	})
}

// Reassembler is one worker's instance.
type Reassembler struct {
	t       *table
	pool    *packet.Pool // datagram buffers (bufSize)
	timeout int64
	out     *elements.Output
	side    *packet.Batch // handed-in datagrams
	st      *elements.Stats
	steer   *flowsteer.Table
	hub     *hub
	bell    *wakeup.Bell // this worker's, with a hub (the hub's acquire)
	me      int

	reasons [rCount]elements.Reason
	// drops are the reasons' own counters, for the fragments a dropped
	// datagram held (freed when they arrived); reassembled is the
	// consumption reason's.
	drops                            [rCount]*atomic.Uint64
	reassembled                      *atomic.Uint64
	datagrams, handedOff, handedIn   *atomic.Uint64
	outOfOrder, inReassembly         *atomic.Uint64
	now                              func() int64
	nDatagrams, nConsumed, nOff, nIn uint64
	nOOO                             uint64
	// v6: an IP6Reassembler (IPv6 fragments; IPv4 passes untouched).
	v6      bool
	atomic  *atomic.Uint64
	nAtomic uint64
}

// hubKey names the hub of one IPReassembler of a graph with a given
// number of workers.
type hubKey struct {
	name    string
	workers int
}

type hubSlot struct{ h *hub }

func newReassembler(cfg any, ctx *elements.Context) (elements.Element, error) {
	c := cfg.(*ReassemblerConfig)
	st := ctx.Stats
	e := &Reassembler{t: newTable(c.Capacity, c.MaxFragments), timeout: int64(c.Timeout), out: ctx.Outputs[0],
		side: packet.NewBatch(ctx.Batch), st: st, steer: flowsteer.Of(ctx), me: ctx.Worker, now: elements.Nanotime,
		datagrams: st.Counter("datagrams"),
		handedOff: st.Counter("handed off"), handedIn: st.Counter("handed in"), outOfOrder: st.Counter("out of order"),
		inReassembly: st.Counter("in reassembly")}
	for r := range rCount {
		e.reasons[r] = st.Reason(reasonNames[r])
		e.drops[r] = st.Counter(reasonNames[r]) // the reason's own counter (a name keeps its kind)
	}
	st.Consumption("reassembled")
	e.reassembled = st.Counter("reassembled")
	lent := 0
	if ctx.Workers > 1 {
		s := elements.GraphValue(ctx, hubKey{ctx.Name, ctx.Workers}, func() *hubSlot { return &hubSlot{h: newHub(ctx.Workers)} })
		e.hub = s.h
		lent = lendDepth * (ctx.Workers - 1)
		b, err := e.hub.acquire(e.me)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", ctx.Name, err)
		}
		e.bell = b
	}
	e.pool = packet.NewPoolSize(c.Capacity+lent+ctx.Workers+ctx.Batch, bufSize)
	// Buffers are lent from the worker's own loop (receive, at the first
	// push or tick), never here: a reload builds this instance on another
	// goroutine while the running one may be lending on the same ring.
	return e, nil
}

var (
	_ elements.TickScheduler = (*Reassembler)(nil)
	_ elements.Sleeper       = (*Reassembler)(nil)
	_ elements.Closer        = (*Reassembler)(nil)
	_ elements.PacketHolder  = (*Reassembler)(nil)
)

// HoldsPackets: a traced fragment is kept (its bytes) until its datagram
// completes or is dropped.
func (e *Reassembler) HoldsPackets(int) bool { return true }

// Push passes non-fragments on, in order, and takes fragments in; a
// datagram a fragment completes takes that fragment's place in the batch
// (or goes to its flow's owner).
func (e *Reassembler) Push(_ int, b *packet.Batch) {
	if e.hub != nil {
		e.receive()
	}
	var now int64
	n := 0
	for _, p := range b.Pkts {
		if e.v6 {
			if !isFragment6(p) {
				b.Pkts[n] = p
				n++
				continue
			}
		} else if !isFragment(p) {
			b.Pkts[n] = p
			n++
			continue
		}
		if now == 0 {
			now = e.now()
		}
		var d *packet.Packet
		var nf int
		var fh uint32
		if e.v6 {
			d, nf, fh = e.fragment6(p, now)
		} else {
			d, nf = e.fragment(p, now)
		}
		if d == nil {
			continue
		}
		if fh == 0 {
			fh = e.steer.Hash(d.Data, int(d.L3))
		}
		d, ok := e.route(d, fh)
		switch {
		case d != nil:
			b.Pkts[n] = d
			n++
			e.nConsumed += uint64(nf)
		case ok:
			e.nConsumed += uint64(nf)
		default:
			e.drops[rHandoff].Add(uint64(max(nf, 1))) // an atomic fragment is its own datagram
		}
	}
	b.Truncate(n)
	e.flush()
	e.out.Push(b)
}

// isFragment reports whether p is an IPv4 fragment (MF set or a non-zero
// offset): the only test a non-fragment pays.
func isFragment(p *packet.Packet) bool {
	d, l3 := p.Data, int(p.L3)
	if l3 < packet.EthernetLen || l3+packet.IPv4MinLen > len(d) ||
		binary.BigEndian.Uint16(d[l3-2:]) != packet.EtherTypeIPv4 {
		return false
	}
	return binary.BigEndian.Uint16(d[l3+6:])&(packet.IPv4FlagMF|packet.IPv4FragOffset) != 0
}

// drop frees p and counts it under reason r.
func (e *Reassembler) drop(p *packet.Packet, r int) { e.st.Drop(p, e.reasons[r]) }

// discard removes slot i, frees its buffer and counts its fragments under
// reason r.
func (e *Reassembler) discard(i int32, r int) {
	pkt, n := e.t.remove(i)
	pkt.Free()
	if n > 0 {
		e.drops[r].Add(uint64(n))
	}
}

// fragment takes IPv4 fragment p in; it returns the finished datagram and
// its number of fragments when p completed one.
func (e *Reassembler) fragment(p *packet.Packet, now int64) (*packet.Packet, int) {
	l3 := int(p.L3)
	h := p.Data[l3:]
	ihl := int(h[0]&0x0f) * 4
	tl := int(binary.BigEndian.Uint16(h[2:]))
	ff := binary.BigEndian.Uint16(h[6:])
	off := int(ff&packet.IPv4FragOffset) * 8
	last := ff&packet.IPv4FlagMF == 0
	if h[0]>>4 != 4 || ihl < packet.IPv4MinLen || tl > len(h) || tl <= ihl || l3 > maxL3 ||
		!last && (tl-ihl)%8 != 0 {
		e.drop(p, rMalformed)
		return nil, 0
	}
	end := off + tl - ihl
	if ihl+end > 65535 {
		e.drop(p, rOversized)
		return nil, 0
	}
	proto := h[9]
	if off == 0 && !last && (tl-ihl < 8 || proto == packet.ProtoTCP && tl-ihl < packet.TCPMinLen) ||
		off == 8 && proto == packet.ProtoTCP {
		e.drop(p, rTiny)
		return nil, 0
	}
	k := key{src0: uint64(binary.BigEndian.Uint32(h[12:])), dst0: uint64(binary.BigEndian.Uint32(h[16:])),
		id: uint32(binary.BigEndian.Uint16(h[4:])), proto: proto}
	i := e.take(p, &k, off, end, last, now)
	if i < 0 {
		return nil, 0
	}
	s := &e.t.slots[i]
	buf := s.pkt.Buffer()
	copy(buf[payloadAt+off:], h[ihl:tl])
	if off == 0 {
		s.start, s.l3, s.ihl = payloadAt-ihl-l3, l3, ihl
		copy(buf[s.start:], p.Data[:l3+ihl])
		s.pkt.InDevice, s.pkt.InQueue = p.InDevice, p.InQueue
	}
	p.Free() // its bytes are in the datagram; counted when the datagram is
	if s.ihl == 0 || s.total < 0 || s.got != s.total {
		return nil, 0
	}
	if s.ihl+s.total > 65535 {
		e.discard(i, rOversized)
		return nil, 0
	}
	return e.done(i, s.finish())
}

// take finds or makes the slot of datagram k and places fragment p's
// extent [off, end) in it; -1 when p was dropped (p freed and counted, and
// the datagram too when p makes it invalid).
func (e *Reassembler) take(p *packet.Packet, k *key, off, end int, last bool, now int64) int32 {
	i := e.t.find(k)
	if i >= 0 && now-e.t.slots[i].born >= e.timeout {
		e.discard(i, rTimeout)
		i = -1
	}
	if i < 0 {
		if len(e.t.free) == 0 {
			e.discard(e.t.oldest, rFull)
		}
		buf := e.pool.Get()
		if buf == nil {
			e.drop(p, rNoBuffer)
			return -1
		}
		i = e.t.add(k, buf, now)
	}
	switch e.t.place(i, off, end, last) {
	case duplicate:
		e.drop(p, rDuplicate)
		return -1
	case overlap:
		e.drop(p, rOverlap)
		e.discard(i, rOverlap)
		return -1
	case tooMany:
		e.drop(p, rTooMany)
		e.discard(i, rTooMany)
		return -1
	}
	return i
}

// done frees slot i, whose datagram d is complete, and counts it.
func (e *Reassembler) done(i int32, d *packet.Packet) (*packet.Packet, int) {
	if e.t.slots[i].ooo {
		e.nOOO++
	}
	_, nf := e.t.remove(i)
	e.nDatagrams++
	return d, nf
}

// route returns d if this worker owns its flow (flow hash fh); otherwise it hands d to
// the owner and returns nil, and ok false if it could not (d is freed).
func (e *Reassembler) route(d *packet.Packet, fh uint32) (_ *packet.Packet, ok bool) {
	d.FlowHash = fh
	if e.hub == nil {
		return d, true
	}
	o := flowsteer.Owner(fh, e.hub.workers)
	if pins := e.steer.Pins(); pins != nil {
		if w, ok := pins.Owner(d.Data, int(d.L3)); ok && w < e.hub.workers {
			o = w
		}
	}
	if o == e.me {
		return d, true
	}
	q := e.hub.lend[e.me][o].Take()
	if q == nil {
		d.Free() // its fragments are counted as "handoff full"
		return nil, false
	}
	d.CopyTo(q)
	q.Ct = packet.Ct{}
	d.Free()
	e.hub.data[e.me][o].Put(q) // never full (ringSlots)
	if b := e.hub.bells[o]; b != nil {
		b.Ring()
	}
	e.nOff++
	return nil, true
}

// receive sends on the datagrams other workers handed to this one.
func (e *Reassembler) receive() {
	h := e.hub
	for s := range h.workers {
		r := h.data[s][e.me]
		if r == nil || r.Len() == 0 {
			continue
		}
		for q := r.Take(); q != nil; q = r.Take() {
			e.side.Add(q)
			e.nIn++
			if e.side.Full() {
				e.out.Push(e.side)
				e.side.Reset()
			}
		}
	}
	if len(e.side.Pkts) > 0 {
		e.out.Push(e.side)
		e.side.Reset()
	}
	e.lend()
}

// lend tops up the buffers this worker lends each other one.
func (e *Reassembler) lend() {
	h := e.hub
	if h == nil {
		return
	}
	for s := range h.workers {
		l := h.lend[s][e.me]
		if l == nil {
			continue
		}
		for l.Len()+h.data[s][e.me].Len() < lendDepth {
			q := e.pool.Get()
			if q == nil {
				return
			}
			l.Put(q)
		}
	}
}

// flush publishes the counts gathered by a push.
func (e *Reassembler) flush() {
	if e.nDatagrams != 0 {
		e.datagrams.Add(e.nDatagrams)
		e.reassembled.Add(e.nConsumed)
		e.outOfOrder.Add(e.nOOO)
		e.nDatagrams, e.nConsumed, e.nOOO = 0, 0, 0
	}
	if e.nOff != 0 {
		e.handedOff.Add(e.nOff)
		e.nOff = 0
	}
	if e.nIn != 0 {
		e.handedIn.Add(e.nIn)
		e.nIn = 0
	}
	if e.nAtomic != 0 {
		e.atomic.Add(e.nAtomic)
		e.nAtomic = 0
	}
	e.inReassembly.Store(uint64(e.t.live))
}

// Tick drops datagrams past their timeout (oldest first: the age list is
// in arrival order, and every datagram has the same timeout) and sends on
// what other workers handed over.
func (e *Reassembler) Tick(now int64) {
	for i := e.t.oldest; i >= 0 && now-e.t.slots[i].born >= e.timeout; i = e.t.oldest {
		e.discard(i, rTimeout)
	}
	if e.hub != nil {
		e.receive()
	}
	e.flush()
}

// NextTick: when the oldest datagram times out. What other workers hand
// over wakes a sleeping worker through its Bell (PrepareSleep), not a tick.
func (e *Reassembler) NextTick(int64) int64 {
	if i := e.t.oldest; i >= 0 {
		return e.t.slots[i].born + e.timeout
	}
	return elements.NoWake
}

// PrepareSleep arms this worker's Bell (with a hub), then checks that no
// datagram was handed over before it did.
func (e *Reassembler) PrepareSleep(fds []int) ([]int, elements.SleepMode) {
	if e.hub == nil {
		return fds, elements.SleepOnFDs
	}
	e.bell.Arm()
	fds = append(fds, e.bell.FD())
	for s := range e.hub.workers {
		if r := e.hub.data[s][e.me]; r != nil && r.Len() > 0 {
			return fds, elements.SleepNot
		}
	}
	return fds, elements.SleepOnFDs
}

// Woke disarms the Bell.
func (e *Reassembler) Woke() {
	if e.hub != nil {
		e.bell.Woke()
	}
}

// Close frees the datagrams in reassembly (the pipeline has stopped) and
// lets go of this worker's Bell.
func (e *Reassembler) Close() error {
	for e.t.oldest >= 0 {
		pkt, _ := e.t.remove(e.t.oldest)
		pkt.Free()
	}
	if e.bell != nil {
		e.bell = nil
		return e.hub.release(e.me)
	}
	return nil
}
