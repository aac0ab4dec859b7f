package elements

import (
	"github.com/junction-dataplane/junction/internal/monotime"
	"github.com/junction-dataplane/junction/packet"
)

// Nanotime is the runtime's monotonic clock in nanoseconds (monotime.Now,
// inlined). time.Now reads both the wall and the monotonic clock;
// accounting needs only the latter. A read costs as much as a simple element's work
// on a packet where the clock source is slow (a VM's kvm-clock; the figure
// is in benchmarks/l3.md), which is why element timing is sampled (see
// Clock).
func Nanotime() int64 { return monotime.Now() }

// DefaultTimingEvery is the default sampling interval of element timing:
// one poll round in this many is timed element by element.
//
// Why sample: timing a batch costs two clock reads per element, which on a
// graph of ten elements is a large share of a packet's budget. Timing one
// round in eight makes it negligible while every batch and packet is still
// counted exactly (benchmarks/l3.md, "What the accounting costs").
// Which rounds are timed does not depend on their content, so
// ns/packet = sampled ns / sampled packets is an unbiased estimate.
const DefaultTimingEvery = 8

// Clock is a worker's accounting clock. Elements push batches depth-first,
// so the time spent inside an element's Push includes its children's. Each
// timed Output.Push measures its callee and subtracts what the callee's own
// children took, so every element is charged its self time only and the
// per-element times add up to the worker's busy time.
//
// Counters are written as plain integers by the worker that owns them and
// published to the atomic fields of Stats every millisecond or so (Publish):
// a locked add per counter per batch would cost more than the timing.
type Clock struct {
	child   int64 // time spent in callees of the element running now
	timed   bool  // this round is timed
	every   uint64
	round   uint64
	lastPub int64
	tracked []*Stats
	lost    int64 // time of polls discarded as preempted, since TakeLost

	// Tracing (trace.go): the router's switch, the session armed for
	// this round (nil: none) and the records of the packets marked in it.
	tracer *Tracer
	sess   *TraceSession
	active []*TraceRecord
	worker int
}

// TakeLost returns the time of the polls whose samples were discarded as
// preempted (see outlierNanos) since the last call, and resets it. The
// worker leaves that time out of the busy time it compares the elements'
// time with: it is time the thread had work but not the CPU.
func (c *Clock) TakeLost() int64 {
	l := c.lost
	c.lost = 0
	return l
}

// NewClock returns a clock timing one round in every (≤ 1: every round).
func NewClock(every int) *Clock {
	if every < 1 {
		every = 1
	}
	return &Clock{every: uint64(every)}
}

// Track registers stats to be published by this clock. Output.Connect does
// it for the stats of the element it feeds; the pipeline tracks sources'
// stats (Time does not, to keep the poll path free of the lookup).
func (c *Clock) Track(s *Stats) {
	for _, t := range c.tracked {
		if t == s {
			return
		}
	}
	c.tracked = append(c.tracked, s)
	if s.clock == nil {
		// A kept element's Stats (a reload) stay with the clock of the
		// worker running them until Adopt, on that worker.
		s.clock = c
	}
}

// Publish copies every tracked element's counters to its atomic fields,
// where readers (the rate line, the stats endpoint) load them.
func (c *Clock) Publish() {
	for _, s := range c.tracked {
		s.publish()
	}
}

// Output is one output port of one element instance. Push hands a batch to
// the connected element's input port, accounting the batches, packets and
// (in timed rounds) self time of that element. An unconnected output
// (allowed only where the element's doc says so) drops and counts what it
// receives.
type Output struct {
	target Element
	port   int
	stats  *Stats // the target's stats
	clock  *Clock

	// for an unconnected output: who counts the drops, and as what.
	owner  *Stats
	reason Reason

	// The element this output belongs to and its port (SetFrom), for
	// tracing; source marks the output of a source element.
	from     *Stats
	fromPort int
	source   bool
}

// NewOutput returns an output bound to nothing; Connect or SetUnconnected
// bind it before the pipeline runs.
func NewOutput(clock *Clock) *Output { return &Output{clock: clock} }

// Connect binds the output to input port of target, whose stats it updates.
func (o *Output) Connect(target Element, port int, stats *Stats) {
	o.target, o.port, o.stats = target, port, stats
	o.clock.Track(stats)
}

// SetUnconnected makes the output a counted drop under owner's reason.
func (o *Output) SetUnconnected(owner *Stats, reason Reason) {
	o.target, o.owner, o.reason = nil, owner, reason
}

// Connected reports whether a downstream element is bound.
func (o *Output) Connected() bool { return o.target != nil }

// Push passes b downstream. On return b is empty and may be reused.
func (o *Output) Push(b *packet.Batch) {
	n := len(b.Pkts)
	if n == 0 {
		return
	}
	c := o.clock
	if c.sess != nil { // a trace or capture is armed (trace.go)
		o.trace(b)
	}
	if o.target == nil {
		o.owner.DropBatch(b, o.reason)
		return
	}
	st := o.stats
	st.batches++
	st.packets += uint64(n)
	if !c.timed {
		o.target.Push(o.port, b)
		b.Reset()
		return
	}
	saved := c.child
	c.child = 0
	t0 := Nanotime()
	o.target.Push(o.port, b)
	d := Nanotime() - t0
	if d < outlierNanos {
		st.nanos += uint64(d - c.child)
		st.timedPackets += uint64(n)
	}
	c.child = saved + d
	b.Reset()
}

// outlierNanos discards a timed batch that took this long: one batch of one
// element takes microseconds, so a millisecond means the thread was
// preempted, and multiplying that by the sampling interval would charge the
// element for time it never used. Every enclosing Push took longer still, so
// its sample is discarded too and the self times stay consistent.
const outlierNanos = 1_000_000

// Time runs one poll of a source under the clock, charging its self time to
// st in timed rounds, and returns the packets polled. The worker calls it
// for each source; Round starts a round.
func (c *Clock) Time(src Source, st *Stats) int {
	if !c.timed {
		n := src.Poll()
		if n > 0 {
			st.batches++
			st.packets += uint64(n)
		}
		return n
	}
	c.child = 0
	t0 := Nanotime()
	n := src.Poll()
	d := Nanotime() - t0
	if n > 0 {
		st.batches++
		st.packets += uint64(n)
		if d < outlierNanos {
			st.timedPackets += uint64(n)
			st.nanos += uint64(d - c.child)
		} else {
			c.lost += d
		}
	}
	c.child = 0
	return n
}

// Round starts a poll round at time now (the worker reads the clock once
// per round for its busy/idle accounting): it decides whether the round is
// timed and publishes counters about every millisecond.
func (c *Clock) Round(now int64) {
	c.round++
	if c.every == 0 {
		c.every = DefaultTimingEvery
	}
	c.timed = c.round%c.every == 0
	if c.tracer != nil {
		// Records open at the end of a round are finished (but those
		// of held packets): hand them over, then load the session for
		// the next round.
		if len(c.active) > 0 {
			c.flushTraces(now)
		}
		c.sess = c.tracer.armed.Load()
		if c.sess == nil && len(c.active) > 0 {
			c.sess = c.tracer.followSession()
		}
	}
	if now-c.lastPub > 1e6 {
		c.lastPub = now
		c.Publish()
	}
}

// Timed reports whether the current round is timed.
func (c *Clock) Timed() bool { return c.timed }
