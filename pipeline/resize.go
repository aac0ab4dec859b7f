package pipeline

import (
	"fmt"
	"runtime"
	"sort"
	"sync/atomic"
	"time"

	"github.com/junction-dataplane/junction/drivers"
	"github.com/junction-dataplane/junction/elements"
)

// A reload that changes the number of workers (reload.go prepares it the
// same way: everything is opened and built before anything changes). What
// differs is the swap, because flows change owners: the owner of a flow is
// the worker its symmetric flow hash is steered to among the workers, so
// with another count most flows have another owner, and the per-worker
// state of each (its Conntrack entry, NAT binding) must be where its
// packets will go. A swap worker by worker cannot do that: a worker on the
// new graph would meet packets of flows whose state another worker, still
// on the old graph, is using. So the swap has a barrier, in three steps:
//
//  1. Quiet: each old worker, at its next batch boundary, stops reading
//     its own queues and from then on only pushes, through the old graph,
//     what the other workers hand it (the FromDevice handoff rings;
//     elements.HandoffDrainer). Once every old worker is quiet, nothing
//     more is handed to anyone: each drains its incoming rings to the
//     last packet and parks. No packet is left in flight, none is
//     dropped, and each flow's packets have all been pushed, in order, by
//     its old owner.
//  2. Parked: no worker runs. The reload applies the devices' worker
//     changes (drivers.WorkerResizer: TX sockets, TX queue choice), moves
//     every worker's flows to their new owners (elements.WorkerRebalancer:
//     Conntrack's tables, NAT bindings included, and the steering's pins
//     for masqueraded replies that now hash elsewhere) and runs
//     TakeState(nil) on the instances of the new workers. The parked time
//     grows with the flows moved (benchmarks/reload.md): the devices' RX
//     rings hold what arrives meanwhile.
//  3. Release: the old workers that stay adopt their new pipeline
//     (TakeState, as in any reload); those removed (whose instances let
//     go of what they held, elements.Retirer, before they parked, so
//     that step 2 adds what that counted to worker 0's counters) exit; the new ones start, each on its
//     goroutine, pinned as the others (CPU list entry w mod len). The
//     devices' queues kept their packets meanwhile (the parked time is the
//     loss window, bounded by their rings).
//
// A flow's packets before the swap were all pushed by its old owner before
// any packet after it is pushed by its new one, so order per flow is kept
// up to the devices (two TX queues carry no order between them).

// resizeBarrier coordinates the swap of a reload that changes the number
// of workers (from → to).
type resizeBarrier struct {
	from, to int
	quiet    atomic.Int32 // old workers that stopped reading their queues
	parked   atomic.Int32 // old workers that drained what was handed to them
	release  atomic.Bool  // the reload has moved the state: go on
	// allParked is closed by the last worker to park, released by the
	// reload with release: parked workers and the waiting reload block
	// on them instead of spinning (on a loaded machine a spinning parked
	// worker takes the CPU the reload needs to move the flows).
	allParked, released chan struct{}
	// absorb pairs the Stats of a kept element on worker 0 with its
	// Stats on a removed worker (added to it while parked).
	absorb [][2]*elements.Stats
}

// Phases of a worker in a resize swap (worker.rphase).
const (
	phaseRunning = iota
	phaseQuiet
	phaseParked
)

// Outcomes of stepResize.
const (
	resizeWaiting = iota // still quiet or parked: no round on any graph
	resizeAdopted        // runs the new graph from now on
	resizeRetired        // removed by the reload: the worker ends
)

// stepResize moves worker w through a resize swap; it is called between
// rounds while ng is pending (by the worker, or by the reload for a worker
// that has exited).
func (w *worker) stepResize(ng *nextGen) int {
	rb := ng.resize
	switch w.rphase {
	case phaseRunning:
		w.rphase = phaseQuiet
		rb.quiet.Add(1)
		fallthrough
	case phaseQuiet:
		w.drainHandoffs()
		if int(rb.quiet.Load()) < rb.from {
			return resizeWaiting
		}
		// Nobody reads its queues any more, so nobody hands anything
		// more: what the rings hold is all there is.
		for w.drainHandoffs() > 0 {
		}
		if w.id >= rb.to {
			// Removed by the reload: its instances let go of what
			// they hold now, while parked, so that what they count
			// doing it ("unresolved") is in the counters the
			// barrier adds to worker 0's (Stats.Absorb).
			w.retireInstances(ng)
		}
		w.clock.Publish()
		w.rphase = phaseParked
		if int(rb.parked.Add(1)) == rb.from {
			close(rb.allParked)
		}
		return resizeWaiting
	default:
		if !rb.release.Load() {
			return resizeWaiting
		}
		w.rphase = phaseRunning
		w.next.Store(nil)
		if w.id >= rb.to {
			w.retire(ng)
			return resizeRetired
		}
		w.adopt(ng)
		return resizeAdopted
	}
}

// newResizeBarrier prepares the barrier of a change from → to workers.
func newResizeBarrier(from, to int) *resizeBarrier {
	return &resizeBarrier{from: from, to: to, allParked: make(chan struct{}), released: make(chan struct{})}
}

// waitRelease blocks a parked worker until the release, or at most d (the
// worker then looks at its stop flag and comes back).
func (rb *resizeBarrier) waitRelease(d time.Duration) {
	t := time.NewTimer(d)
	select {
	case <-rb.released:
	case <-t.C:
	}
	t.Stop()
}

// drainHandoffs pushes, through the running graph, what the other workers
// handed this one; it returns the packets pushed.
func (w *worker) drainHandoffs() int {
	n := 0
	for i, s := range w.sources {
		if d, ok := s.(elements.HandoffDrainer); ok {
			n += w.clock.Drain(d, w.srcStats[i])
		}
	}
	return n
}

// retireInstances has a removed worker's instances let go of what they
// hold of its pools (elements.Retirer), on its goroutine, before it parks.
func (w *worker) retireInstances(ng *nextGen) {
	for _, el := range w.inst {
		if rt, ok := el.(elements.Retirer); ok {
			ng.lost[w.id] += rt.Retire()
		}
	}
}

// retire ends a worker that a reload removed (its instances retired when
// it parked): its counters are published, and the reload is told.
func (w *worker) retire(ng *nextGen) {
	w.clock.Publish()
	w.retired = true
	ng.adoptedAt[w.id] = elements.Nanotime()
	ng.ack <- w.id
}

// started is called by a worker a reload added, on its goroutine, before
// its first round.
func (ng *nextGen) started(w *worker) {
	ng.adoptedAt[w.id] = elements.Nanotime()
	ng.ack <- w.id
}

// WorkerChange says what a reload that changes the number of workers did
// (or, dry, would do) besides the graph: the devices kept open and told
// the new count, and the per-worker state moved.
type WorkerChange struct {
	From int `json:"from"`
	To   int `json:"to"`
	// Devices kept open, each with what changes for it.
	Devices []string `json:"devices,omitempty"`
	// Moved, Kept and Dropped (by reason) count the per-worker entries
	// (flows) that went to a new owner, stayed, or could not be kept.
	Moved uint64 `json:"moved"`
	Kept  uint64 `json:"kept"`
	// Pinned counts the kept entries whose packets reach their owner by
	// an exception to the steering (flowsteer.Pins: masqueraded flows
	// whose reply port was chosen for the old count).
	Pinned  uint64            `json:"pinned,omitempty"`
	Dropped map[string]uint64 `json:"dropped,omitempty"`
	// Parked is how long no worker ran: from the last old worker parked
	// to the release.
	Parked time.Duration `json:"parked_ns"`
	// Rebalance is the part of Parked spent moving per-worker state.
	Rebalance time.Duration `json:"rebalance_ns"`
	// Barrier is from the workers told to the last one parked (each
	// finishes its round and drains what was handed to it); Restart from
	// the release to the last worker running the new graph (or retired).
	Barrier time.Duration `json:"barrier_ns"`
	Restart time.Duration `json:"restart_ns"`
	// Housekeeping is where the other threads run after the change
	// (Housekeep's confinement redone); nil when Housekeep never ran or
	// the workers are not pinned. HousekeepingErr says why confining
	// them failed, if it did.
	Housekeeping    *Housekeeping `json:"housekeeping,omitempty"`
	HousekeepingErr string        `json:"housekeeping_error,omitempty"`
}

// resizeDevices prepares every kept device for the new worker count; a
// device that cannot change in place fails the reload.
func resizeDevices(g1, g2 *Graph, devs []drivers.Device, kept []bool, from, to int, dry bool) (changes []drivers.WorkerChange, lines []string, err error) {
	abort := func() {
		for _, c := range changes {
			c.Abort()
		}
	}
	for i, d := range g2.Devices {
		if !kept[i] {
			continue
		}
		dev := devs[i]
		rz, ok := dev.(drivers.WorkerResizer)
		if !ok {
			abort()
			return nil, nil, fmt.Errorf("%s: device %q (driver %s): cannot serve another number of workers without being reopened (workers %d → %d): restart the forwarder", d.Pos, d.Name, driverName(d), from, to)
		}
		lines = append(lines, fmt.Sprintf("%s (%s): kept open, %d RX queues kept, TX for %d workers", d.Name, driverName(d), dev.RxQueues(), to))
		if dry {
			continue
		}
		c, err := rz.ResizeWorkers(to)
		if err != nil {
			abort()
			return nil, nil, fmt.Errorf("%s: device %q (driver %s): workers %d → %d: %w", d.Pos, d.Name, driverName(d), from, to, err)
		}
		changes = append(changes, c)
	}
	_ = g1
	return changes, lines, nil
}

// resizeSwap is the swap of a reload that changes the number of workers
// from len(r.workers) to len(built) (see the top of this file). It returns
// when every worker runs the new graph (or has retired), with the new
// worker list.
func (r *Router) resizeSwap(ng *nextGen, built []*worker, changes []drivers.WorkerChange, wc *WorkerChange, flowState bool) []*worker {
	from, to := len(r.workers), len(built)
	if r.allOut != nil && runtime.GOMAXPROCS(0) < to {
		// Every worker needs a P of its own, as Housekeep sets at start
		// (no more: where every CPU has a worker it adds none). Set
		// before the barrier: GOMAXPROCS stops the world, which took
		// half a second on the loaded 2-CPU machine, and must not
		// lengthen the time no worker runs. The thread confinement
		// Housekeep made is redone once the new workers run
		// (rehousekeep).
		runtime.GOMAXPROCS(to)
	}
	handed := time.Now()
	for _, wk := range r.workers {
		wk.next.Store(ng)
	}
	// 1. Quiet, then parked: every old worker (the reload steps those
	// that have exited itself).
	park := time.NewTicker(200 * time.Microsecond)
	for parked := false; !parked; {
		select {
		case <-ng.resize.allParked:
			parked = true
		case <-park.C:
			for _, wk := range r.workers {
				if wk.exited.Load() && wk.rphase != phaseParked {
					wk.stepResize(ng)
				}
			}
		}
	}
	park.Stop()
	parkedAt := time.Now()
	wc.Barrier = parkedAt.Sub(handed)
	// 2. No worker runs.
	for _, c := range changes {
		c.Apply()
	}
	for _, a := range ng.resize.absorb {
		a[0].Absorb(a[1])
	}
	t0 := time.Now()
	var rbs []elements.WorkerRebalancer
	if flowState && from != to {
		// Only a graph that keeps per-flow state per worker has any
		// to move (the old graph's, when the new one drops it, goes
		// with the old instances).
		rbs = r.state.Rebalancers()
	}
	sort.Slice(rbs, func(i, j int) bool { return fmt.Sprintf("%T", rbs[i]) < fmt.Sprintf("%T", rbs[j]) })
	for _, rb := range rbs {
		res := rb.RebalanceWorkers(from, to)
		wc.Moved += res.Moved
		wc.Kept += res.Kept
		wc.Pinned += res.Pinned
		for why, n := range res.Dropped {
			if n == 0 {
				continue
			}
			if wc.Dropped == nil {
				wc.Dropped = map[string]uint64{}
			}
			wc.Dropped[res.What+": "+why] += n
		}
	}
	wc.Rebalance = time.Since(t0)
	for w := from; w < to; w++ {
		for _, t := range ng.takes[w] {
			if err := t.to.TakeState(t.from); err != nil {
				ng.errs[w] = append(ng.errs[w], fmt.Sprintf("element %q: %v", t.name, err))
			}
		}
	}
	workers := make([]*worker, to)
	copy(workers, r.workers[:min(from, to)])
	copy(workers[min(from, to):], built[min(from, to):])
	wc.Parked = time.Since(parkedAt)
	// 3. Release.
	ng.resize.release.Store(true)
	close(ng.resize.released)
	released := time.Now()
	defer func() { wc.Restart = time.Since(released) }()
	acks := from
	for w := from; w < to; w++ {
		wk := built[w]
		if r.allOut == nil || !r.startWorker(wk, ng) {
			// A router from Build (the caller drives every worker), or
			// one whose workers have all exited: nothing to start.
			if r.allOut != nil {
				wk.exited.Store(true)
			}
			ng.adoptedAt[w] = elements.Nanotime()
			continue
		}
		acks++
	}
	tick := time.NewTicker(200 * time.Microsecond)
	defer tick.Stop()
	for acks > 0 {
		select {
		case <-ng.ack:
			acks--
		case <-tick.C:
			for _, wk := range r.workers {
				if wk.exited.Load() && wk.next.Load() == ng {
					wk.stepResize(ng) // sends its ack
				}
			}
		}
	}
	return workers
}
