package elements

import (
	"strconv"
	"sync/atomic"

	"github.com/junction-dataplane/junction/packet"
)

// Reason is the index of a registered drop reason (or consumption
// reason) in an element's Stats.
type Reason uint8

// CounterKind says what a named counter counts.
type CounterKind uint8

const (
	// KindCount is an event count (not packets leaving the graph).
	KindCount CounterKind = iota
	// KindDrop counts packets lost: freed by an element because they
	// could not be processed as the graph meant them to be (malformed,
	// no route, a full queue...).
	KindDrop
	// KindConsumed counts packets the graph took in by design and freed:
	// a Discard at the end of a branch, an ARPResponder handed an ARP
	// reply. They leave the graph as drops do, but are not losses.
	KindConsumed
)

// MaxCounters bounds the named counters (drop reasons and others) one
// element instance may register.
const MaxCounters = 24

// Stats are one element instance's counters on one worker. Only that
// worker writes them; readers (the rate line, the stats endpoint) load them
// atomically. Counters are per batch except drops and element-specific
// counters, which are per event.
type Stats struct {
	// Published values: written by the owning worker's Clock.Publish about
	// every millisecond (before an idle worker sleeps past its tick, and
	// when the worker stops), loaded by readers.
	Batches      atomic.Uint64 // batches received
	Packets      atomic.Uint64 // packets received
	Nanos        atomic.Uint64 // self time in timed rounds, nanoseconds
	TimedPackets atomic.Uint64 // packets received in timed rounds

	// Live values, written only by the owning worker.
	batches, packets, nanos, timedPackets uint64

	// Element is the element's index in the graph (set by the pipeline),
	// which traces report; clock is the worker's clock (Clock.Track).
	Element int
	clock   *Clock
	// holdPorts: input ports on which the element may hold packets
	// (SetHoldPorts), for traces.
	holdPorts uint64

	// n counts the registered names; atomic because a reload registers
	// on the Stats of a kept element while readers list its counters
	// (names[i] is written before n passes i).
	n     atomic.Int32
	names [MaxCounters]string
	kinds [MaxCounters]CounterKind
	vals  [MaxCounters]atomic.Uint64
}

func (s *Stats) publish() {
	s.Batches.Store(s.batches)
	s.Packets.Store(s.packets)
	s.Nanos.Store(s.nanos)
	s.TimedPackets.Store(s.timedPackets)
}

// NsPerPacket is the self time per packet estimated from the timed rounds.
func (s *Stats) NsPerPacket() float64 {
	tp := s.TimedPackets.Load()
	if tp == 0 {
		return 0
	}
	return float64(s.Nanos.Load()) / float64(tp)
}

// EstimatedNanos is the element's total self time, estimated by scaling the
// timed rounds to all packets.
func (s *Stats) EstimatedNanos() float64 {
	return s.NsPerPacket() * float64(s.Packets.Load())
}

// Reason registers (or finds) a drop reason by name, at construction time.
func (s *Stats) Reason(name string) Reason {
	return Reason(s.register(name, KindDrop))
}

// Consumption registers (or finds) a consumption reason by name, at
// construction time: packets freed under it (Consume, ConsumeBatch, or
// Drop and DropBatch given it) are counted as consumed by design, not as
// drops (KindConsumed).
func (s *Stats) Consumption(name string) Reason {
	return Reason(s.register(name, KindConsumed))
}

// Counter registers (or finds) a named non-drop counter (e.g. "arp replies")
// and returns it for the element to Add to.
func (s *Stats) Counter(name string) *atomic.Uint64 {
	return &s.vals[s.register(name, KindCount)]
}

// register finds name, or registers it as a counter of kind k. A name
// keeps the kind it was first registered with.
func (s *Stats) register(name string, k CounterKind) int {
	n := int(s.n.Load())
	for i := 0; i < n; i++ {
		if s.names[i] == name {
			return i
		}
	}
	if n == MaxCounters {
		panic("elements: too many counters for one element")
	}
	s.names[n], s.kinds[n] = name, k
	s.n.Store(int32(n + 1))
	return n
}

// Drop frees p and counts it under reason r (a drop reason, or a
// consumption reason: then it is counted as consumed).
func (s *Stats) Drop(p *packet.Packet, r Reason) {
	s.vals[r].Add(1)
	if p.Trace != 0 {
		s.traceDrop(p, r)
	}
	p.Free()
}

// Consume frees p, consumed by design, under r (a Consumption reason).
// It is Drop under another name, for the reader of the element's code.
func (s *Stats) Consume(p *packet.Packet, r Reason) { s.Drop(p, r) }

// ConsumeBatch frees every packet of b, consumed by design, under r (a
// Consumption reason), and empties b.
func (s *Stats) ConsumeBatch(b *packet.Batch, r Reason) { s.DropBatch(b, r) }

// DropBatch frees every packet of b under reason r and empties b.
func (s *Stats) DropBatch(b *packet.Batch, r Reason) {
	s.vals[r].Add(uint64(len(b.Pkts)))
	if s.clock != nil && len(s.clock.active) > 0 {
		for _, p := range b.Pkts {
			if p.Trace != 0 {
				s.traceDrop(p, r)
			}
		}
	}
	b.FreeAll()
}

// CounterValue is one named counter read at some instant: a drop reason
// (Drop), a consumption reason (Consumed), or an event count (neither).
type CounterValue struct {
	Name     string
	Drop     bool
	Consumed bool
	Value    uint64
}

// Counters returns the named counters (drops, consumptions and others) in
// registration order.
func (s *Stats) Counters() []CounterValue {
	out := make([]CounterValue, s.n.Load())
	for i := range out {
		out[i] = CounterValue{s.names[i], s.kinds[i] == KindDrop, s.kinds[i] == KindConsumed, s.vals[i].Load()}
	}
	return out
}

// Drops is the sum of all drop counters (losses; not what was consumed).
func (s *Stats) Drops() uint64 { return s.sum(KindDrop) }

// Consumed is the sum of all consumption counters: packets the element
// freed by design.
func (s *Stats) Consumed() uint64 { return s.sum(KindConsumed) }

func (s *Stats) sum(k CounterKind) uint64 {
	var t uint64
	for i := 0; i < int(s.n.Load()); i++ {
		if s.kinds[i] == k {
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
