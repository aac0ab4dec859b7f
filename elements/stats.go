package elements

import (
	"strconv"
	"sync/atomic"

	"github.com/junction-dataplane/junction/packet"
)

// Reason is the index of a registered drop reason in an element's Stats.
type Reason uint8

// MaxCounters bounds the named counters (drop reasons and others) one
// element instance may register.
const MaxCounters = 16

// Stats are one element instance's counters on one worker. Only that
// worker writes them; readers (the rate line, the stats endpoint) load them
// atomically. Counters are per batch except drops and element-specific
// counters, which are per event.
type Stats struct {
	Batches atomic.Uint64 // batches received
	Packets atomic.Uint64 // packets received
	Nanos   atomic.Uint64 // self time in Push (or Poll), nanoseconds

	n      int
	names  [MaxCounters]string
	isDrop [MaxCounters]bool
	vals   [MaxCounters]atomic.Uint64
}

// Reason registers (or finds) a drop reason by name, at construction time.
func (s *Stats) Reason(name string) Reason {
	return Reason(s.register(name, true))
}

// Counter registers (or finds) a named non-drop counter (e.g. "arp replies")
// and returns it for the element to Add to.
func (s *Stats) Counter(name string) *atomic.Uint64 {
	return &s.vals[s.register(name, false)]
}

func (s *Stats) register(name string, drop bool) int {
	for i := 0; i < s.n; i++ {
		if s.names[i] == name {
			return i
		}
	}
	if s.n == MaxCounters {
		panic("elements: too many counters for one element")
	}
	s.names[s.n], s.isDrop[s.n] = name, drop
	s.n++
	return s.n - 1
}

// Drop frees p and counts it under reason r.
func (s *Stats) Drop(p *packet.Packet, r Reason) {
	s.vals[r].Add(1)
	p.Free()
}

// DropBatch frees every packet of b under reason r and empties b.
func (s *Stats) DropBatch(b *packet.Batch, r Reason) {
	s.vals[r].Add(uint64(len(b.Pkts)))
	b.FreeAll()
}

// CounterValue is one named counter read at some instant.
type CounterValue struct {
	Name  string
	Drop  bool
	Value uint64
}

// Counters returns the named counters (drops and others) in registration
// order.
func (s *Stats) Counters() []CounterValue {
	out := make([]CounterValue, s.n)
	for i := range out {
		out[i] = CounterValue{s.names[i], s.isDrop[i], s.vals[i].Load()}
	}
	return out
}

// Drops is the sum of all drop counters.
func (s *Stats) Drops() uint64 {
	var t uint64
	for i := 0; i < s.n; i++ {
		if s.isDrop[i] {
			t += s.vals[i].Load()
		}
	}
	return t
}

// UnconnectedReason is the drop reason counted for what an element sends to
// an unconnected optional output port.
func UnconnectedReason(port int) string {
	return "unconnected output " + strconv.Itoa(port)
}
