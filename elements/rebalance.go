package elements

// Per-worker state across a change of the number of workers. A reload
// that changes [forwarder] workers changes which worker owns each flow
// (the owner is picked by the symmetric flow hash among the workers:
// flowsteer). Per-worker state that is keyed by flow (Conntrack's flow
// tables, with the NAT bindings and FastTrack's flows they hold) must
// then follow its flows to their new owners, or the first packet of a
// flow would meet a worker that never saw it. Such state is reached
// through the graph state (WorkerValue); the package that owns it also
// puts a WorkerRebalancer among the graph's values (GraphValue), and the
// pipeline calls every one of them once, while every worker, old and new,
// is parked between two rounds: the old workers have finished their last
// round on the old graph and drained what they handed each other, the new
// graph runs nowhere yet. Nothing else touches per-worker state then, so
// a rebalancer may move entries between the workers' tables without locks.
//
// Entries that cannot be moved (the new owner's table is full, or the two
// directions of a flow would now reach two workers) are removed and
// counted under a reason; never kept where their packets will not find
// them.

// WorkerRebalancer moves per-worker state from the workers [0, from) to
// the owners among [0, to) when a reload changes the number of workers.
type WorkerRebalancer interface {
	RebalanceWorkers(from, to int) RebalanceResult
}

// RebalanceResult says what a rebalance did: entries moved to another
// worker, and those dropped, by reason.
type RebalanceResult struct {
	What  string // what was moved ("flows")
	Moved uint64
	Kept  uint64 // entries that stayed with the worker they were on
	// Pinned counts the entries kept whose packets need an exception to
	// the steering to reach their owner (flowsteer.Pins).
	Pinned  uint64
	Dropped map[string]uint64
}

// Rebalancers returns the graph values that implement WorkerRebalancer.
func (s *GraphState) Rebalancers() []WorkerRebalancer {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []WorkerRebalancer
	for _, v := range s.graph {
		if rb, ok := v.(WorkerRebalancer); ok {
			out = append(out, rb)
		}
	}
	return out
}

// WorkerLookup returns worker w's value under key, if one was made: unlike
// WorkerShared it makes none (a rebalancer looks at what exists).
func (s *GraphState) WorkerLookup(w int, key any) (any, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.workers[w][key]
	return v, ok
}

// HandoffDrainer is a source that hands packets between workers (FromDevice
// spreading): a reload that changes the number of workers makes each old
// worker stop reading its own queues, then push, through the old graph,
// what the others handed it until nothing is left in flight, before the
// new graph (with rings of the new shape) starts anywhere.
type HandoffDrainer interface {
	// DrainHandoffs pushes what other workers handed this instance, at
	// most a batch per sender, without reading its own queues, and
	// returns how many packets it pushed.
	DrainHandoffs() int
}

// Drain calls d.DrainHandoffs and counts what it pushed on st as Time
// counts a poll (untimed).
func (c *Clock) Drain(d HandoffDrainer, st *Stats) int {
	n := d.DrainHandoffs()
	if n > 0 {
		st.batches++
		st.packets += uint64(n)
	}
	return n
}

// Absorb adds o's counts (batches, packets, timed time, every named
// counter and drop reason) to s: a reload that removes a worker adds the
// counters of its kept elements to worker 0's, so that totals continue.
// Both workers must be parked (no round running on either), o's counts
// published.
func (s *Stats) Absorb(o *Stats) {
	s.batches += o.batches
	s.packets += o.packets
	s.nanos += o.nanos
	s.timedPackets += o.timedPackets
	for i := 0; i < int(o.n.Load()); i++ {
		s.vals[s.register(o.names[i], o.kinds[i])].Add(o.vals[i].Load())
	}
	s.publish()
}
