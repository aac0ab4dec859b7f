package elements

import (
	_ "unsafe" // for go:linkname

	"github.com/junction-dataplane/junction/packet"
)

// Nanotime is the runtime's monotonic clock in nanoseconds. time.Now reads
// both the wall and the monotonic clock; accounting needs only the latter,
// twice per element per batch, so it calls the runtime directly (the runtime
// keeps this linkname available on purpose).
//
//go:linkname Nanotime runtime.nanotime
func Nanotime() int64

// Clock is a worker's accounting clock. Elements push batches depth-first,
// so the time spent inside an element's Push includes its children's. Each
// Output.Push measures its callee and subtracts what the callee's own
// children took, so that every element is charged its self time only and the
// per-element times add up to the worker's busy time.
type Clock struct {
	child int64 // time spent in callees of the element running now
}

// Output is one output port of one element instance. Push hands a batch to
// the connected element's input port, accounting the batches, packets and
// self time of that element. An unconnected output (allowed only where the
// element's doc says so) drops and counts what it receives.
type Output struct {
	target Element
	port   int
	stats  *Stats // the target's stats
	clock  *Clock

	// for an unconnected output: who counts the drops, and as what.
	owner  *Stats
	reason Reason
}

// NewOutput returns an output bound to nothing; Connect or SetUnconnected
// bind it before the pipeline runs.
func NewOutput(clock *Clock) *Output { return &Output{clock: clock} }

// Connect binds the output to input port of target, whose stats it updates.
func (o *Output) Connect(target Element, port int, stats *Stats) {
	o.target, o.port, o.stats = target, port, stats
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
	if o.target == nil {
		o.owner.DropBatch(b, o.reason)
		return
	}
	c := o.clock
	saved := c.child
	c.child = 0
	t0 := Nanotime()
	o.target.Push(o.port, b)
	d := Nanotime() - t0
	st := o.stats
	st.Batches.Add(1)
	st.Packets.Add(uint64(n))
	st.Nanos.Add(uint64(d - c.child))
	c.child = saved + d
	b.Reset()
}

// Time runs a source's Poll under the clock, charging its self time to st.
// The worker uses it; it returns the packets polled.
func (c *Clock) Time(src Source, st *Stats) int {
	c.child = 0
	t0 := Nanotime()
	n := src.Poll()
	d := Nanotime() - t0
	if n > 0 {
		st.Batches.Add(1)
		st.Packets.Add(uint64(n))
	}
	st.Nanos.Add(uint64(d - c.child))
	c.child = 0
	return n
}
