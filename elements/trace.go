package elements

import (
	"errors"
	"sync"
	"sync/atomic"

	"github.com/junction-dataplane/junction/packet"
)

// Tracing and capture (forwarder trace, forwarder capture) follow packets
// through a running graph without costing anything while nobody asks:
//
//   - A router has one Tracer; arming it publishes a TraceSession through
//     an atomic pointer. Each worker's Clock loads that pointer once per
//     poll round (Round), so a disarmed graph pays one load per round and
//     one predictable branch per Output.Push (per batch, not per packet).
//   - While armed, the outputs of source elements mark the next packets
//     that match the session's filter (Packet.Trace = a record id) and
//     copy their frames; every Output.Push then appends a hop to the
//     record of each marked packet of its batch, and Stats.Drop notes the
//     reason of a marked packet it drops. At the end of the round the
//     worker hands its finished records to the session's channel.
//   - A capture session copies every frame passing one element's output
//     (or one of its ports) into the same channel.
//
// Everything a session costs is paid by the rounds it is armed in; the
// decoding and printing happen in the control server, off the workers.

// PacketHolder is an element that may keep a packet past the round that
// brought it (ARPQuerier's queue of packets waiting for a resolution). A
// traced packet last seen entering such an input port stays open for up
// to HoldTraceFor, so that its path after release is recorded too.
type PacketHolder interface {
	HoldsPackets(inPort int) bool
}

// HoldTraceFor bounds how long a trace record waits for a held packet.
const HoldTraceFor = 4 * int64(1e9)

// SetHoldPorts marks the input ports (bit i: port i) on which the element
// may hold packets (the pipeline sets it from PacketHolder).
func (s *Stats) SetHoldPorts(mask uint64) { s.holdPorts = mask }

// TraceHop is one step of a traced packet: it left element From (graph
// element index) by output port Port, into element To's input port InPort
// (To = -1: the port is unconnected).
type TraceHop struct {
	From, Port int
	To, InPort int
}

// TraceDrop is where and why a traced packet was dropped, or consumed
// (Consumed: freed by design under a consumption reason).
type TraceDrop struct {
	Element  int
	Reason   string
	Consumed bool
}

// TraceRecord is one traced or captured packet.
type TraceRecord struct {
	ID     uint32
	Worker int
	// Time is the monotonic time (Nanotime) the packet was marked.
	Time int64
	// InDevice, InQueue are the packet's annotations when marked.
	InDevice, InQueue int
	// Frame is the frame as the source passed it on (a capture: as it
	// passed the capture point); Last is the frame as it last left an
	// element (after any rewrite), nil for a capture.
	Frame, Last []byte
	Hops        []TraceHop
	Drop        *TraceDrop
	// Capture marks a capture record (Frame only).
	Capture bool
	// Held: the packet was last seen entering an element that holds
	// packets (PacketHolder) and was handed over when HoldTraceFor
	// passed, or the session's collector stopped waiting.
	Held bool
	// CaptureElement, CapturePort: where a capture record was taken.
	CaptureElement, CapturePort int

	sess *TraceSession
}

// TraceSession is one armed trace or capture.
type TraceSession struct {
	// Match selects the packets to trace at the sources (nil: all). It
	// runs on the worker, once per candidate packet while armed.
	Match func(p *packet.Packet) bool
	// Trace arms tracing of Count packets at the sources.
	Trace bool
	// CaptureElement ≥ 0 captures Count packets leaving that element (by
	// port CapturePort, or any port when it is negative).
	CaptureElement, CapturePort int
	// Out receives finished records. Sends never block: a record that
	// does not fit is counted in Lost.
	Out  chan *TraceRecord
	Lost atomic.Uint64

	left atomic.Int64
	ids  *atomic.Uint32
}

// NewTraceSession returns a session for count packets, delivering to a
// channel of that size.
func NewTraceSession(count int) *TraceSession {
	s := &TraceSession{CaptureElement: -1, CapturePort: -1, Out: make(chan *TraceRecord, count+64)}
	s.left.Store(int64(count))
	return s
}

// Left is how many packets the session still takes.
func (s *TraceSession) Left() int64 { return max(s.left.Load(), 0) }

// Tracer is a router's tracing switch, shared by its workers' clocks.
type Tracer struct {
	armed atomic.Pointer[TraceSession]
	ids   atomic.Uint32

	// follow is the session the clocks use between sessions while
	// records of held packets are open: it marks and captures nothing,
	// so that only their hops are recorded. It is the tracer's own (a
	// router's), not a package variable: nothing of one router's tracing
	// is seen by another's.
	follow     TraceSession
	followInit sync.Once
}

// followSession returns t's follow session, set up on first use (a Tracer
// is used from its zero value).
func (t *Tracer) followSession() *TraceSession {
	t.followInit.Do(func() {
		t.follow.CaptureElement, t.follow.CapturePort = -1, -1
	})
	return &t.follow
}

// ErrTraceBusy: another trace or capture is armed.
var ErrTraceBusy = errors.New("another trace or capture is running on this forwarder")

// Arm starts s. Only one session runs at a time.
func (t *Tracer) Arm(s *TraceSession) error {
	s.ids = &t.ids
	if !t.armed.CompareAndSwap(nil, s) {
		return ErrTraceBusy
	}
	return nil
}

// Disarm stops s (if it is the armed session). Records of rounds already
// running may still arrive on s.Out.
func (t *Tracer) Disarm(s *TraceSession) { t.armed.CompareAndSwap(s, nil) }

// SetTracer connects the clock of worker to tr.
func (c *Clock) SetTracer(tr *Tracer, worker int) { c.tracer, c.worker = tr, worker }

// flushTraces hands over the records of the round that ended at now,
// keeping those of packets an element holds (for at most HoldTraceFor).
func (c *Clock) flushTraces(now int64) {
	k := 0
	for _, r := range c.active {
		if r.Held && r.Drop == nil && now-r.Time < HoldTraceFor {
			c.active[k] = r
			k++
			continue
		}
		r.Worker = c.worker
		select {
		case r.sess.Out <- r:
		default:
			r.sess.Lost.Add(1)
		}
	}
	clear(c.active[k:])
	c.active = c.active[:k]
}

func (c *Clock) record(id uint32) *TraceRecord {
	for _, r := range c.active {
		if r.ID == id {
			return r
		}
	}
	return nil
}

// SetFrom tells the output which element it belongs to (its stats) and
// its port number, and whether that element is a source (where tracing
// marks packets). The pipeline calls it when building; outputs without it
// take part in tracing only as targets.
func (o *Output) SetFrom(owner *Stats, port int, source bool) {
	o.from, o.fromPort, o.source = owner, port, source
}

// trace is Output.Push's part while a session is armed (or records of
// held packets are open: the follow session): mark, capture, and record
// the hop of every marked packet.
func (o *Output) trace(b *packet.Batch) {
	c := o.clock
	s := c.sess
	if s != nil && o.from != nil {
		if o.source && s.Trace && s.left.Load() > 0 {
			for _, p := range b.Pkts {
				if s.Match != nil && !s.Match(p) {
					continue
				}
				if s.left.Add(-1) < 0 {
					break
				}
				r := &TraceRecord{ID: s.ids.Add(1), Time: Nanotime(), InDevice: int(p.InDevice), InQueue: int(p.InQueue),
					Frame: append([]byte(nil), p.Data...), sess: s, CaptureElement: -1}
				p.Trace = r.ID
				c.active = append(c.active, r)
			}
		}
		if s.CaptureElement == o.from.Element && (s.CapturePort < 0 || s.CapturePort == o.fromPort) && s.left.Load() > 0 {
			for _, p := range b.Pkts {
				if s.Match != nil && !s.Match(p) {
					continue
				}
				if s.left.Add(-1) < 0 {
					break
				}
				r := &TraceRecord{ID: s.ids.Add(1), Time: Nanotime(), InDevice: int(p.InDevice), InQueue: int(p.InQueue),
					Frame: append([]byte(nil), p.Data...), Capture: true, CaptureElement: o.from.Element, CapturePort: o.fromPort, sess: s}
				c.active = append(c.active, r)
			}
		}
	}
	if len(c.active) == 0 || o.from == nil {
		return
	}
	to, in := -1, 0
	if o.target != nil {
		to, in = o.stats.Element, o.port
	}
	for _, p := range b.Pkts {
		if p.Trace == 0 {
			continue
		}
		if r := c.record(p.Trace); r != nil {
			r.Hops = append(r.Hops, TraceHop{From: o.from.Element, Port: o.fromPort, To: to, InPort: in})
			r.Last = append(r.Last[:0], p.Data...)
			r.Held = o.target != nil && o.stats.holdPorts&(1<<uint(in&63)) != 0
		}
	}
}

// traceDrop notes the drop (or consumption) of a marked packet.
func (s *Stats) traceDrop(p *packet.Packet, r Reason) {
	c := s.clock
	if c == nil || len(c.active) == 0 {
		return
	}
	if rec := c.record(p.Trace); rec != nil {
		rec.Drop = &TraceDrop{Element: s.Element, Reason: s.names[r], Consumed: s.kinds[r] == KindConsumed}
	}
}
