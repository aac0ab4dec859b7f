package conntrack

import (
	"encoding/binary"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/junction-dataplane/junction/elements"
	"github.com/junction-dataplane/junction/internal/monotime"
	"github.com/junction-dataplane/junction/packet"
)

// nanotime is the monotonic clock flows are timed by.
func nanotime() int64 { return monotime.Now() }

// DefaultCapacity is the default number of flows per worker (32 MiB of
// entries).
const DefaultCapacity = 262144

// MaxCapacity bounds the capacity key (entries are indexed by uint32 and
// node ids carry a direction bit).
const MaxCapacity = 1 << 30

// Config is Conntrack's config.
type Config struct {
	Capacity int      `toml:"capacity"`
	Timeouts []string `toml:"timeouts"`
	// TCPWindow turns TCP window tracking on (tcpwindow.go); the graph
	// file's default is true, a Config built in Go has it off.
	TCPWindow bool `toml:"tcp_window"`
	// StateFile is where the flows are kept across a restart
	// (statefile.go); empty: nowhere.
	StateFile string `toml:"state_file"`

	to Timeouts
}

// Validate checks the capacity and parses the timeouts.
func (c *Config) Validate() error {
	if c.Capacity < 1 || c.Capacity > MaxCapacity {
		return elements.Errorf("capacity", "%d out of range 1..%d (flows per worker)", c.Capacity, MaxCapacity)
	}
	// One worker's tables must fit (the graph's validation adds up every
	// worker's: elements.MemoryUser).
	if err := c.checkMemory(1); err != nil {
		return err
	}
	to, err := parseTimeouts(c.Timeouts)
	if err != nil {
		return elements.Errorf("timeouts", "%v", err)
	}
	c.to = to
	return nil
}

func init() {
	elements.Register(elements.Type{
		Name:        "Conntrack",
		FlowState:   true,
		OnePerGraph: "a worker has one flow table",
		NewConfig:   func() any { return &Config{Capacity: DefaultCapacity, TCPWindow: true} },
		New:         newConntrack,
		In:          1, Out: 2,
		Optional:   []int{1},
		Doc:        conntrackManual,
		TakesState: true, // a reload keeps its state (reload.go)
	})
}

// Results of tracking one packet.
const (
	resOK = iota
	resUntracked
	resFull
	resMalformed // invalid causes from here on
	resFragment
	resTCPFlags
	resTCPState
	resICMP
	resTCPWindow
	resCount
)

var invalidNames = [resCount]string{resMalformed: "invalid: malformed", resFragment: "invalid: fragment",
	resTCPFlags: "invalid: tcp flags", resTCPState: "invalid: tcp state", resICMP: "invalid: icmp",
	resTCPWindow: "invalid: tcp window"}

// Conntrack is one worker's tracker.
type Conntrack struct {
	t      *Table
	t6     *Table6 // IPv6 flows (table6.go)
	worker int
	// workers and stateFile: where Close writes the flows (state_file).
	workers   int
	stateFile string
	listMu    sync.Mutex // Flows against Close; never taken by the worker
	pool      *packet.Pool
	out0      *elements.Output
	out1      *elements.Output
	inv       *packet.Batch
	st        *elements.Stats
	full      elements.Reason
	counts    [resCount]uint64 // per batch, published once per batch

	// Per chunk: each packet's parsed tuple, L4 header, parse result and
	// hash (Table.Warm).
	keys [chunk]Tuple
	l4   [chunk][]byte
	res  [chunk]int
	hs   [chunk]uint32
	// found is warmNew's lookup of each key (node id + 1, 0: not looked up,
	// missHint: missed).
	found [chunk]uint32

	newN, related, untracked, entries, evicted, expired *atomic.Uint64
	displaced, refused                                  *atomic.Uint64 // the flow cache's (FastTrack)
	invalid                                             [resCount]*atomic.Uint64

	// A reload (reload.go): the config TakeState applies to the running
	// table (nil: this instance configured the table itself), and the
	// flows it could not keep.
	pending       *Config
	reloadDropped *atomic.Uint64
	// A reload that changed the number of workers (rebalance.go): flows
	// moved into this worker's table, and those dropped.
	movedIn, splitDropped, fullDropped *atomic.Uint64
	// lastTick is the previous Tick's time (elements.Nanotime).
	lastTick int64
}

var (
	_ elements.TickScheduler = (*Conntrack)(nil)
	_ elements.Closer        = (*Conntrack)(nil)
)

func newConntrack(cfg any, ctx *elements.Context) (elements.Element, error) {
	c := cfg.(*Config)
	if c.to == (Timeouts{}) {
		if err := c.Validate(); err != nil {
			return nil, err
		}
	}
	// Before anything is allocated: a table beyond memory ends the
	// process when its free list is written.
	if err := c.checkMemory(ctx.Workers); err != nil {
		return nil, err
	}
	t := Acquire(ctx)
	_, carried := ctx.Previous().Element.(*Conntrack)
	switch {
	case carried:
		// A reload: the running Conntrack of this name still uses the
		// table; TakeState applies the new config between rounds
		// (reload.go).
	case t.configured && ctx.Reloading():
		t.Release()
		return nil, fmt.Errorf("the running graph's Conntrack has another name or type: a reload keeps a worker's flow table only for a Conntrack of the same name")
	case t.configured:
		t.Release()
		return nil, fmt.Errorf("a worker has one flow table: only one Conntrack per graph")
	default:
		t.configure(c.Capacity, c.to, nil)
		t.configured = true
	}
	if !carried {
		// A carried table keeps its IPv6 flows and window tracking
		// (reload.go applies a changed tcp_window); a new one starts
		// from its state file, if any.
		t.SetTCPWindow(c.TCPWindow)
		t.t6 = NewTable6(capacity6(c.Capacity), c.to)
		if c.StateFile != "" {
			path := StatePath(c.StateFile, ctx.Worker)
			switch n, err := t.LoadState(path, ctx.Workers); {
			case err == errNoState:
			case err != nil:
				ctx.Logf("%v (%d flows restored)", err, n)
			default:
				ctx.Logf("%d flows restored from %s", n, path)
			}
		}
	}
	st := ctx.Stats
	e := &Conntrack{t: t, t6: t.t6, worker: ctx.Worker, workers: ctx.Workers, stateFile: c.StateFile, pool: ctx.Pool, out0: ctx.Outputs[0], out1: ctx.Outputs[1], inv: ctx.SideBatch(),
		st: st, full: st.Reason("table full"),
		newN: st.Counter("new"), related: st.Counter("related"), untracked: st.Counter("untracked"),
		entries: st.Counter("entries"), evicted: st.Counter("evicted"), expired: st.Counter("expired"),
		displaced: st.Counter("flow cache displaced"), refused: st.Counter("flow cache refused")}
	for r := resMalformed; r < resCount; r++ {
		e.invalid[r] = st.Counter(invalidNames[r])
	}
	e.reloadDropped = st.Counter("reload: capacity shrunk")
	e.movedIn = st.Counter("reload: moved in")
	e.splitDropped = st.Counter("reload: workers changed: directions split")
	e.fullDropped = st.Counter("reload: workers changed: no room")
	if carried {
		e.pending = c
	}
	return e, nil
}

// Table returns the worker's flow table.
func (e *Conntrack) Table() *Table { return e.t }

// Close releases the table.
func (e *Conntrack) Close() error {
	// Flows (list.go) may be reading the table from the control socket:
	// its memory is unmapped by Release.
	e.listMu.Lock()
	defer e.listMu.Unlock()
	if e.pending != nil {
		// Built for a reload that never ran: the table is the running
		// instance's.
		e.pending = nil
		e.t.Release()
		e.t = nil
		return nil
	}
	var err error
	if e.t != nil && e.stateFile != "" {
		err = e.t.SaveState(StatePath(e.stateFile, e.worker), e.workers)
	}
	if e.t != nil {
		e.t.configured = false
		e.t.t6 = nil
		e.t.Release()
		e.t = nil
	}
	if err != nil {
		return fmt.Errorf("state_file: %w", err)
	}
	return nil
}

// maxSweeps bounds the slices one Tick sweeps after a long gap.
const maxSweeps = 16

// Tick sweeps a slice of the table for expired flows and publishes the
// gauges. The sweep keeps its pace per second, whatever the ticks' cadence:
// a Tick a sleeping worker makes after a gap of k milliseconds sweeps k
// slices (at most maxSweeps).
func (e *Conntrack) Tick(at int64) {
	t := e.t
	if t == nil {
		return
	}
	sweeps := 1
	if e.lastTick != 0 {
		sweeps = int(min(max((at-e.lastTick)/int64(time.Millisecond), 1), maxSweeps))
	}
	e.lastTick = at
	now := t.now()
	for range sweeps {
		t.Collect(now)
		e.t6.Collect(now)
	}
	e.publish()
}

// NextTick: the sweep is paced by time (Tick), so nothing is due at a
// given moment; the gauges change only with packets or sweeps.
func (e *Conntrack) NextTick(int64) int64 { return elements.NoWake }

func (e *Conntrack) publish() {
	t := e.t
	if rc := &t.rebal; *rc != (rebalanceCounts{}) {
		e.movedIn.Add(rc.movedIn)
		e.splitDropped.Add(rc.split)
		e.fullDropped.Add(rc.full)
		*rc = rebalanceCounts{}
	}
	e.entries.Store(uint64(t.live + e.t6.live))
	if t6 := e.t6; t6.Created|t6.Evicted|t6.Expired|t6.relatedN != 0 {
		e.newN.Add(t6.Created)
		e.evicted.Add(t6.Evicted)
		e.expired.Add(t6.Expired)
		e.related.Add(t6.relatedN)
		t6.Created, t6.Evicted, t6.Expired, t6.relatedN = 0, 0, 0, 0
	}
	if t.Created != 0 {
		e.newN.Add(t.Created)
		t.Created = 0
	}
	if t.Evicted != 0 {
		e.evicted.Add(t.Evicted)
		t.Evicted = 0
	}
	if t.Expired != 0 {
		e.expired.Add(t.Expired)
		t.Expired = 0
	}
	if fs := &t.fc.Stats; fs.Replaced|fs.Refused != 0 {
		e.displaced.Add(fs.Replaced)
		e.refused.Add(fs.Refused)
		fs.Replaced, fs.Refused = 0, 0
	}
}

// chunk is how many packets Push prepares at once (Table.Warm).
const chunk = 64

// Push tracks every packet: valid and untracked ones go to output 0 as one
// batch (in order), invalid ones to output 1. It works in chunks of up to
// 64 packets in three passes: parse every packet's tuple, prefetch the
// table memory all of them will touch (Table.Warm), then track them one by
// one with the memory in cache.
func (e *Conntrack) Push(_ int, b *packet.Batch) {
	t := e.t
	now := t.now()
	inv := e.inv
	n := 0
	pkts := b.Pkts
	for off := 0; off < len(pkts); off += chunk {
		ps := pkts[off:min(off+chunk, len(pkts))]
		t.warmHeaders(ps[:min(len(ps), parseAhead)])
		for i, p := range ps {
			if i%parseAhead == 0 && i+parseAhead < len(ps) {
				t.warmHeaders(ps[i+parseAhead : min(i+2*parseAhead, len(ps))])
			}
			e.l4[i], e.res[i] = parsePacket(p, &e.keys[i])
		}
		t.warm(e.keys[:len(ps)], e.hs[:], 2, e.found[:])
		t.warmNew(e.keys[:len(ps)], e.hs[:], e.res[:], e.found[:])
		t.warmWindows(e.keys[:len(ps)], e.found[:])
		for i, p := range ps {
			if i%replyAhead == 0 && i+replyAhead < len(ps) {
				t.warmReplies(i+replyAhead, min(i+2*replyAhead, len(ps)))
			}
			r := e.res[i]
			if r == resOK || r == resICMPError {
				r = t.track(p, &e.keys[i], e.l4[i], r, e.hs[i], e.found[i], now)
			} else if r == resUntracked && isIPv6(p) {
				r = e.t6.Track(p, now)
			} else {
				p.Ct = packet.Ct{}
			}
			switch {
			case r <= resUntracked:
				pkts[n] = p
				n++
			case r == resFull:
				e.st.Drop(p, e.full)
			default:
				p.Ct = packet.Ct{State: packet.CtInvalid}
				inv.Add(p)
			}
			e.counts[r]++
			e.l4[i] = nil
		}
	}
	clear(pkts[n:])
	b.Pkts = pkts[:n]
	e.flushCounts()
	e.out0.Push(b)
	if len(inv.Pkts) > 0 {
		e.out1.Push(inv)
	}
}

// parseAhead is how many packets ahead of the parse Push prefetches the
// network headers (warmHeaders), a group at a time.
const parseAhead = 8

// warmHeaders prefetches the line holding each packet's network header.
// Conntrack is often the first element to read a packet past its
// Ethernet header (the driver or a generator wrote it, a NIC's DMA may
// have left it only in the last-level cache, if there), and the parse
// otherwise waits for every packet's header in turn; a group of eight a
// call keeps a few misses in flight without issuing more than the core
// can track.
func (t *Table) warmHeaders(ps []*packet.Packet) {
	pf := t.pf[:0]
	for _, p := range ps {
		pf = append(pf, uintptr(unsafe.Pointer(unsafe.SliceData(p.Data)))+uintptr(p.L3))
	}
	prefetchAll(pf)
}

func (e *Conntrack) flushCounts() {
	c := &e.counts
	if c[resUntracked] != 0 {
		e.untracked.Add(c[resUntracked])
	}
	for r := resMalformed; r < resCount; r++ {
		if c[r] != 0 {
			e.invalid[r].Add(c[r])
		}
	}
	*c = [resCount]uint64{}
	if e.t.relatedN != 0 {
		e.related.Add(e.t.relatedN)
		e.t.relatedN = 0
	}
	e.publish()
}

// parseTuple reads the flow tuple of an IPv4 packet h (header and
// payload, trimmed to its total length by the caller or not) into *k. It
// returns the L4 header and resOK, or the reason the packet cannot be
// tracked as a plain flow (*k then is zero or partly read); ICMP errors
// return resICMPError. The tuple is written in place, field by field,
// rather than returned: a returned Tuple travels through the stack (its
// padding array keeps it out of registers) and the copy into the chunk
// reads the 16 bytes just stored as five pieces, which the core cannot
// forward (a stall of a dozen cycles a packet).
func parseTuple(h []byte, k *Tuple) (l4 []byte, res int) {
	*k = Tuple{}
	if len(h) < packet.IPv4MinLen || h[0]>>4 != 4 {
		return nil, resMalformed
	}
	ihl := int(h[0]&0x0f) * 4
	tl := int(binary.BigEndian.Uint16(h[2:]))
	if ihl < packet.IPv4MinLen || tl < ihl || tl > len(h) {
		return nil, resMalformed
	}
	if binary.BigEndian.Uint16(h[6:])&(packet.IPv4FlagMF|packet.IPv4FragOffset) != 0 {
		return nil, resFragment
	}
	l4 = h[ihl:tl]
	k.Src = binary.BigEndian.Uint32(h[12:])
	k.Dst = binary.BigEndian.Uint32(h[16:])
	k.Proto = h[9]
	switch k.Proto {
	case packet.ProtoTCP:
		if len(l4) < packet.TCPMinLen {
			return nil, resMalformed
		}
		k.Sport = binary.BigEndian.Uint16(l4)
		k.Dport = binary.BigEndian.Uint16(l4[2:])
	case packet.ProtoUDP:
		if len(l4) < packet.UDPLen {
			return nil, resMalformed
		}
		k.Sport = binary.BigEndian.Uint16(l4)
		k.Dport = binary.BigEndian.Uint16(l4[2:])
	case packet.ProtoICMP:
		if len(l4) < packet.ICMPLen {
			return nil, resMalformed
		}
		switch l4[0] {
		case packet.ICMPEchoRequest, packet.ICMPEchoReply:
			id := binary.BigEndian.Uint16(l4[4:])
			k.Sport, k.Dport = id, id
		case packet.ICMPDestUnreachable, 4, packet.ICMPRedirect, packet.ICMPTimeExceeded, packet.ICMPParameterProblem:
			return l4, resICMPError
		default:
			return nil, resICMP
		}
	}
	return l4, resOK
}

// resICMPError is parseTuple's answer for an ICMP error (not a result of
// track).
const resICMPError = 100

// parsePacket reads a packet's flow tuple into *k: resOK, resICMPError
// (then l4 is the ICMP message), resUntracked (not IPv4) or why it is
// invalid.
func parsePacket(p *packet.Packet, k *Tuple) ([]byte, int) {
	d := p.Data
	l3 := int(p.L3)
	if l3 < packet.EthernetLen || l3 > len(d) || binary.BigEndian.Uint16(d[l3-2:]) != packet.EtherTypeIPv4 {
		*k = Tuple{}
		return nil, resUntracked
	}
	return parseTuple(d[l3:], k)
}

// capacity6 is the size of the IPv6 table for a capacity key: a quarter
// of the IPv4 one (its entries are larger), at least 1024.
func capacity6(capacity int) int { return max(capacity/4, min(capacity, 1024)) }

func isIPv6(p *packet.Packet) bool {
	l3 := int(p.L3)
	return l3 >= packet.EthernetLen && l3 <= len(p.Data) && binary.BigEndian.Uint16(p.Data[l3-2:]) == packet.EtherTypeIPv6
}

// track tracks one packet whose tuple k (in bucket hb) and L4 header
// parsePacket found, with result res (resOK or resICMPError), and
// annotates it.
func (t *Table) track(p *packet.Packet, kp *Tuple, l4 []byte, res int, hb, hint uint32, now int64) int {
	p.Ct = packet.Ct{}
	if res == resICMPError {
		return t.trackRelated(p, l4, now)
	}
	h := p.Data[p.L3:]
	seg := segNone
	if kp.Proto == packet.ProtoTCP {
		var ok bool
		if seg, ok = tcpSegment(l4[13]); !ok {
			return resTCPFlags
		}
	}
	idx, dir, found := t.findHinted(kp, hb, hint, now)
	if !found {
		switch {
		case kp.Proto == packet.ProtoTCP && seg != segSyn && seg != segAck:
			return resTCPState // only a SYN (or, picking up, an ACK) opens a flow
		case kp.Proto == packet.ProtoICMP && l4[0] != packet.ICMPEchoRequest:
			return resICMP // a reply to no request
		}
		var ok bool
		if idx, ok = t.create(kp, hb, now); !ok {
			return resFull
		}
		t.conns[idx].Dev[0] = uint8(p.InDevice)
	}
	c := &t.conns[idx]
	if kp.Proto == packet.ProtoTCP {
		if r := t.trackTCP(idx, c, dir, seg, l4, !found); r != resOK {
			if !found {
				t.Delete(idx)
			}
			return r
		}
	}
	if dir == 1 && c.Flags&FlagSeenReply == 0 {
		c.Flags |= FlagSeenReply
		c.Dev[1] = uint8(p.InDevice)
	}
	if c.Flags&(FlagAssured|FlagSeenReply) == FlagSeenReply && (kp.Proto != packet.ProtoTCP || c.State == TCPEstablished) {
		t.SetAssured(idx)
	}
	tl := binary.BigEndian.Uint16(h[2:])
	c.Packets[dir]++
	c.Bytes[dir] += uint64(tl)
	c.Expires = now + t.timeouts.of(c)
	// The count toward FastTrack's after is this one: a flow this packet
	// made (or left) fast-trackable is listed for FastTrack to compile
	// (Table.CacheComplete).
	if t.fc.complete && t.fc.policy.FlowEligible(c) {
		t.addPending(idx)
	}
	state := uint8(packet.CtNew)
	if c.Flags&FlagSeenReply != 0 {
		state = packet.CtEstablished
	}
	// Field by field (track cleared p.Ct): a composite literal is built
	// on the stack and copied with 16-byte loads of what was just stored
	// in pieces, which stalls (store forwarding).
	ct := &p.Ct
	ct.Table = &t.hdr
	ct.Flow, ct.Tag, ct.State, ct.Dir, ct.TTL = idx, c.Tag, state, dir, h[8]
	// The line of Fast was just written (Bytes): FastTrackLearn need not
	// read it again for a direction it already learned.
	if f := &c.Fast[dir]; f.Valid && t.gen != nil && f.Gen == t.gen.Current() {
		ct.Learned = f.Out
	}
	return resOK
}

// trackRelated finds the flow an ICMP error is about: the quoted header is
// a packet that went the other way, so its inverse is looked up. The error
// must verify and quote at least an IPv4 header and the first 8 bytes of
// the transport header (RFC 792).
func (t *Table) trackRelated(p *packet.Packet, icmp []byte, now int64) int {
	if packet.Fold(packet.Sum(icmp, 0)) != 0xffff {
		return resICMP
	}
	in := icmp[packet.ICMPLen:]
	if len(in) < packet.IPv4MinLen || in[0]>>4 != 4 {
		return resICMP
	}
	ihl := int(in[0]&0x0f) * 4
	if ihl < packet.IPv4MinLen || ihl+8 > len(in) {
		return resICMP
	}
	var k Tuple
	k.Src = binary.BigEndian.Uint32(in[12:])
	k.Dst = binary.BigEndian.Uint32(in[16:])
	k.Proto = in[9]
	l4 := in[ihl:]
	switch k.Proto {
	case packet.ProtoTCP, packet.ProtoUDP:
		if binary.BigEndian.Uint16(in[6:])&packet.IPv4FragOffset != 0 {
			return resICMP // a non-first fragment quotes no ports
		}
		k.Sport = binary.BigEndian.Uint16(l4)
		k.Dport = binary.BigEndian.Uint16(l4[2:])
	case packet.ProtoICMP:
		if l4[0] != packet.ICMPEchoRequest && l4[0] != packet.ICMPEchoReply {
			return resICMP // no error about an error; other ICMP is not tracked
		}
		id := binary.BigEndian.Uint16(l4[4:])
		k.Sport, k.Dport = id, id
	}
	k = k.Inverse()
	idx, dir, ok := t.Find(&k, now)
	if !ok {
		return resICMP
	}
	c := &t.conns[idx]
	t.relatedN++
	p.Ct = packet.Ct{Table: &t.hdr, Flow: idx, Tag: c.Tag, State: packet.CtRelated, Dir: dir, TTL: p.Data[p.L3+8]}
	return resOK
}

// tableSlot holds one worker's flow table in one graph: Conntrack and
// FastTrack find it through their Context (WorkerShared), so that two
// graphs in one process never share flows.
type tableSlot struct{ t *Table }

type tableKey struct{}

// Acquire returns the flow table of ctx's worker in ctx's graph, creating
// an empty one if needed; every Acquire is paired with a Release (in the
// element's Close). Construction only: not safe for concurrent use within
// one worker.
func Acquire(ctx *elements.Context) *Table {
	s := elements.WorkerValue(ctx, tableKey{}, func() *tableSlot { return &tableSlot{} })
	registerRebalancer(ctx)
	if s.t == nil {
		s.t = &Table{now: nanotime, timeouts: DefaultTimeouts(), gen: GenerationOf(ctx), slot: s}
	}
	s.t.refs++
	return s.t
}

// TableRef names one worker's flow table in one graph, for code that must
// find it after construction, where it has no Context (a reload's
// TakeState, on the worker): what Acquire needs of the context.
type TableRef struct {
	state  *elements.GraphState
	worker int
}

// RefOf returns the reference to the flow table of ctx's worker in ctx's
// graph.
func RefOf(ctx *elements.Context) TableRef {
	if ctx.State == nil {
		// A context without a graph is a graph of its own (Context.State):
		// the reference must name the state the context's Acquire uses.
		ctx.WithState(elements.NewGraphState())
	}
	return TableRef{state: ctx.State, worker: ctx.Worker}
}

// Acquire is Acquire of the context the reference was taken from; pair it
// with the table's Release.
func (r TableRef) Acquire() *Table {
	return Acquire(&elements.Context{State: r.state, Worker: r.worker})
}

// Release drops a reference taken by Acquire; the last one frees the
// table's memory (a later Acquire gets a new table).
func (t *Table) Release() {
	t.refs--
	if t.refs <= 0 {
		if t.slot != nil && t.slot.t == t {
			t.slot.t = nil
		}
		t.release()
	}
}
