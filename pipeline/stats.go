package pipeline

import (
	"strings"
	"time"

	"github.com/junction-dataplane/junction/drivers"
	"github.com/junction-dataplane/junction/elements"
)

// DefaultStatsAddr is where `forwarder run` serves its stats unless told
// otherwise (pipeline/statshttp): loopback only, since the counters
// describe the network.
const DefaultStatsAddr = "127.0.0.1:7879"

// Snapshot is the router's accounting read at one instant: per element and
// worker, per worker, per device, and totals. Counters only grow, so two
// snapshots give rates (RateLine). It is what the stats endpoint serves as
// JSON.
type Snapshot struct {
	// Uptime is the time since the workers started.
	Uptime time.Duration `json:"uptime_ns"`
	// Graph is the running graph: its generation (1 at start, one more
	// per reload), file and when it was loaded.
	Graph    GraphGeneration `json:"graph"`
	Elements []ElementStats  `json:"elements"`
	Workers  []WorkerStats   `json:"workers"`
	Devices  []DeviceStats   `json:"devices"`
	Totals   Totals          `json:"totals"`
}

// ElementStats are one element instance's counters on one worker.
type ElementStats struct {
	Element string `json:"element"`
	Type    string `json:"type"`
	Worker  int    `json:"worker"`
	Batches uint64 `json:"batches"`
	Packets uint64 `json:"packets"`
	// Drops are the packets the element lost (its drop reasons);
	// Consumed the packets it freed by design (its consumption reasons:
	// Discard, an ARPResponder handed an ARP reply), which are not losses.
	Drops    uint64 `json:"drops"`
	Consumed uint64 `json:"consumed"`
	// Nanos is the element's self time (its Push or Poll minus what the
	// elements it pushed to took), estimated from the timed rounds:
	// NsPerPacket × Packets. TimedNanos and TimedPackets are what the
	// timed rounds measured.
	Nanos           uint64    `json:"ns"`
	TimedNanos      uint64    `json:"timed_ns"`
	TimedPackets    uint64    `json:"timed_packets"`
	NsPerPacket     float64   `json:"ns_per_packet"`
	PacketsPerBatch float64   `json:"packets_per_batch"`
	Counters        []Counter `json:"counters,omitempty"`
}

// Counter is a named element counter: a drop reason (Drop: packets lost),
// a consumption reason (Consumed: packets freed by design, not a loss) or
// an event count (neither).
type Counter struct {
	Name     string `json:"name"`
	Drop     bool   `json:"drop,omitempty"`
	Consumed bool   `json:"consumed,omitempty"`
	Value    uint64 `json:"value"`
}

// WorkerStats is one worker's time: busy (rounds that brought packets, and
// periodic work) against idle (empty polls, backoff).
type WorkerStats struct {
	Worker    int    `json:"worker"`
	CPU       int    `json:"cpu"` // -1: not pinned
	BusyNanos uint64 `json:"busy_ns"`
	IdleNanos uint64 `json:"idle_ns"`
	// TimedBusyNanos is the busy time of the rounds whose elements were
	// timed: the elements' TimedNanos add up to it.
	TimedBusyNanos uint64 `json:"timed_busy_ns"`
	// PreemptedNanos is the busy time of timed polls that took over a
	// millisecond — the thread lost the CPU — whose element samples were
	// discarded (and left out of TimedBusyNanos).
	PreemptedNanos uint64 `json:"preempted_ns"`
	// CPUNanos is the worker thread's CPU time (CLOCK_THREAD_CPUTIME_ID,
	// read about every millisecond): busy and idle are wall time, and
	// on a CPU shared with other threads their sum exceeds it.
	CPUNanos uint64  `json:"cpu_ns"`
	Busy     float64 `json:"busy_share"` // busy / (busy + idle), 0..1
	Rounds   uint64  `json:"rounds"`
	Running  bool    `json:"running"`
	// SleepFallback says why the worker sleeps in ppoll(2) when idle for
	// long instead of parking on the runtime's poller (which costs less
	// idle CPU); "" when it parks.
	SleepFallback string `json:"sleep_fallback,omitempty"`
}

// DeviceStats are a device's driver counters.
type DeviceStats struct {
	Device   string          `json:"device"`
	Driver   string          `json:"driver"`
	Counters []DeviceCounter `json:"counters"`
	// Queues are the counters per RX queue of a driver that keeps them
	// (drivers.QueueStater: afxdp, afpacket); none for the others.
	Queues []QueueStats `json:"queues,omitempty"`
	// Modes are what the driver settled on at open (drivers.Moder: afxdp's
	// XDP mode, zero-copy and effective fast path, with why it runs short
	// of what the file asked).
	Modes []drivers.Mode `json:"modes,omitempty"`
}

// DeviceCounter is one named driver counter.
type DeviceCounter struct {
	Name  string `json:"name"`
	Value uint64 `json:"value"`
}

// Totals sum the snapshot.
//
// RX counts the packets the sources took from their devices: what they
// pushed into the graph, what they dropped before pushing it (their own
// drop reasons: FromDevice's "spread full"), and what one worker's
// FromDevice handed to another's that has not pushed it yet (InFlight).
// TX is what the devices report sent (driver counters named "tx" or
// "tx_packets"); Drops every element drop plus the devices' transmit
// losses (counters whose name starts with "tx" and mentions "drop" or
// "error": "tx_dropped", "tx_errors", "tx drops"; and "tx_unconfirmed",
// frames a device closed without the kernel's word that they left).
// Consumed is what elements freed by design (their consumption reasons:
// Discard, ARPResponder handed ARP that needs no answer): packets that
// leave the graph as drops do, but are not losses, so not in Drops.
//
// The invariant, at any instant up to the skew of reading counters one
// after another, and exactly on a graph that has stopped:
//
//	RX + packets elements created = TX + Drops + Consumed + InFlight + packets elements hold
//
// Elements create packets from the worker's pool (Tee's copies, ARP
// requests) and hold some for a while (ARPQuerier's packets waiting for a
// resolution); neither is in the totals, as no counter names them all. A
// drained graph holds nothing and has nothing in flight.
type Totals struct {
	RX    uint64 `json:"rx_packets"`
	TX    uint64 `json:"tx_packets"`
	Drops uint64 `json:"drops"`
	// Consumed: packets elements freed by design (not losses).
	Consumed uint64 `json:"consumed"`
	// InFlight is what sources have received and passed between workers
	// but not yet pushed into the graph: FromDevice's handoff rings
	// ("handed off" less "handed in"). A run that stops with packets in
	// them frees them at close; they stay here.
	InFlight uint64 `json:"in_flight_packets"`
	// FastPath is what devices forwarded themselves, in the kernel
	// (afxdp fastpath): packets the graph never saw, so not in RX or TX.
	FastPath uint64 `json:"fastpath_packets"`
}

// The counters of a source element that move packets between workers
// (FromDevice's spreading): a packet is handed off by the worker that
// received it and handed in (pushed) by the one that owns its flow.
const (
	counterHandedOff = "handed off"
	counterHandedIn  = "handed in"
)

// Snapshot reads every counter. It may be called at any time, from any
// goroutine: workers only ever add to the counters it loads.
func (r *Router) Snapshot() *Snapshot {
	s := &Snapshot{}
	// A reload replaces the graph, devices and stats slices under genMu.
	r.genMu.RLock()
	defer r.genMu.RUnlock()
	s.Graph = GraphGeneration(r.gen)
	// Handed-off packets are counted in RX from the start; handed-in ones
	// were counted when handed off, not again when pushed. Signed: the
	// counters are read one after another while workers run.
	var handedOff, handedIn uint64
	if !r.start.IsZero() {
		s.Uptime = time.Since(r.start)
	}
	// The devices first: a packet is counted received (by its source
	// element) before it is counted sent (by its device), so reading the
	// sent counters before the received ones — published after the
	// devices were read (awaitPublish) — keeps tx ≤ rx in every snapshot
	// of a running router.
	t0 := elements.Nanotime()
	s.Devices = r.deviceStats(&s.Totals)
	r.awaitPublish(t0)
	order := GraphOrder(r.g)
	for _, w := range r.workers {
		for _, i := range order {
			e := r.g.Elements[i]
			st := w.stats[i]
			es := ElementStats{
				Element: e.Name, Worker: w.id,
				Batches: st.Batches.Load(), Packets: st.Packets.Load(),
				TimedNanos: st.Nanos.Load(), TimedPackets: st.TimedPackets.Load(),
			}
			if e.Type != nil {
				es.Type = e.Type.Name
			}
			source := e.Type != nil && e.Type.Source
			for _, c := range st.Counters() {
				es.Counters = append(es.Counters, Counter{Name: c.Name, Drop: c.Drop, Consumed: c.Consumed, Value: c.Value})
				switch {
				case c.Drop:
					es.Drops += c.Value
				case c.Consumed:
					es.Consumed += c.Value
				case source && c.Name == counterHandedOff:
					handedOff += c.Value
				case source && c.Name == counterHandedIn:
					handedIn += c.Value
				}
			}
			es.fill()
			if source {
				// A source's drops are packets it received and never
				// pushed ("spread full"): received all the same.
				s.Totals.RX += es.Packets + es.Drops + es.Consumed
			}
			s.Totals.Drops += es.Drops
			s.Totals.Consumed += es.Consumed
			s.Elements = append(s.Elements, es)
		}
		ws := WorkerStats{Worker: w.id, CPU: int(w.cpu.Load()), BusyNanos: w.busy.Load(),
			IdleNanos: w.idle.Load(), TimedBusyNanos: w.timedBusy.Load(), PreemptedNanos: w.preempted.Load(), Rounds: w.rounds.Load(),
			CPUNanos: w.cpuNanos.Load(), SleepFallback: w.wait.poller.fallback(),
			Running: !w.exited.Load()}
		ws.Busy = share(ws.BusyNanos, ws.IdleNanos)
		s.Workers = append(s.Workers, ws)
	}
	// Pushed (in Packets) and handed in are one packet counted on two
	// workers; read apart, in may briefly run ahead of off.
	if handedOff > handedIn {
		s.Totals.InFlight = handedOff - handedIn
	}
	s.Totals.RX = max(s.Totals.RX+handedOff, handedIn) - handedIn
	return s
}

// deviceStats reads the devices' counters, adding what they sent, lost on
// transmit and forwarded themselves to t.
func (r *Router) deviceStats(t *Totals) []DeviceStats {
	var out []DeviceStats
	for i, d := range r.devices {
		if d == nil {
			continue
		}
		gd := r.g.Devices[i]
		ds := DeviceStats{Device: gd.Name}
		if gd.Driver != nil {
			ds.Driver = gd.Driver.Name
		}
		// Queues before the device's totals: counters only grow, so a
		// queue never shows more than its device.
		ds.Queues = queueStats(d)
		if m, ok := d.(drivers.Moder); ok {
			ds.Modes = m.Modes()
		}
		for _, c := range d.Stats() {
			ds.Counters = append(ds.Counters, DeviceCounter{c.Name, c.Value})
			switch {
			case c.Name == "tx" || c.Name == "tx_packets":
				t.TX += c.Value
			case isTxDrop(c.Name):
				t.Drops += c.Value
			case c.Name == drivers.CounterFastPathForwarded:
				t.FastPath += c.Value
			}
		}
		out = append(out, ds)
	}
	return out
}

// isTxDrop reports whether a driver counter counts transmit losses (a full
// ring, a write error): packets that entered the graph and were freed by the
// device instead of sent.
func isTxDrop(name string) bool {
	if name == drivers.CounterTxUnconfirmed {
		return true // not known to have left (drivers.CounterTxUnconfirmed)
	}
	return strings.HasPrefix(name, "tx") && (strings.Contains(name, "drop") || strings.Contains(name, "error"))
}

func (e *ElementStats) fill() {
	if e.TimedPackets > 0 {
		e.NsPerPacket = float64(e.TimedNanos) / float64(e.TimedPackets)
		e.Nanos = uint64(e.NsPerPacket*float64(e.Packets) + 0.5)
	}
	if e.Batches > 0 {
		e.PacketsPerBatch = float64(e.Packets) / float64(e.Batches)
	}
}

func share(busy, idle uint64) float64 {
	if busy+idle == 0 {
		return 0
	}
	return float64(busy) / float64(busy+idle)
}

// WorkerNanos is the sum of the per-element self times (estimated) on
// worker w, to compare with its busy time.
func (s *Snapshot) WorkerNanos(w int) uint64 {
	var t uint64
	for _, e := range s.Elements {
		if e.Worker == w {
			t += e.Nanos
		}
	}
	return t
}

// WorkerTimedNanos is the sum of the per-element measured self times on
// worker w, to compare with its timed busy time.
func (s *Snapshot) WorkerTimedNanos(w int) uint64 {
	var t uint64
	for _, e := range s.Elements {
		if e.Worker == w {
			t += e.TimedNanos
		}
	}
	return t
}

// CounterSum sums the element counter called name over the element
// instances keep accepts (nil: all of them), across workers.
func (s *Snapshot) CounterSum(name string, keep func(*ElementStats) bool) uint64 {
	var v uint64
	for i := range s.Elements {
		e := &s.Elements[i]
		if keep != nil && !keep(e) {
			continue
		}
		for _, c := range e.Counters {
			if c.Name == name {
				v += c.Value
			}
		}
	}
	return v
}
