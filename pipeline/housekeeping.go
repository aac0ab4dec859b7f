package pipeline

import (
	"runtime"
	"slices"
	"time"
)

// Housekeeping is where a router's non-worker threads run: the stats
// endpoint, timers, signal handling, the garbage collector and the Go
// runtime's own threads.
type Housekeeping struct {
	// WorkerCPUs are the CPUs the workers are pinned to.
	WorkerCPUs []int
	// CPUs are the CPUs the other threads were confined to: those of the
	// process's CPUs that no worker uses. Empty when every CPU has a
	// worker (or the workers are not pinned): the other threads then
	// share the workers' CPUs, as the kernel schedules them.
	CPUs []int
	// Threads is how many threads were confined.
	Threads int
	// Procs is GOMAXPROCS after Housekeep: at least one per worker, and
	// one more where CPUs are left for housekeeping, so that other
	// goroutines have a scheduler slot (a P) of their own there.
	Procs int
}

// Housekeep keeps the rest of the process off the workers' way; call it
// once, after Start, in a process that runs one router (it acts on the
// whole process):
//
//   - GOMAXPROCS is raised to the number of workers where it is lower
//     (-cpus may put more workers than CPUs): each worker goroutine holds
//     a P for as long as it runs. Where CPUs are left for housekeeping it
//     is raised to workers + 1: with as many Ps as workers, every other
//     goroutine (each stats request) can only run by taking a worker's P
//     when the runtime preempts it, and the worker then waits behind them
//     in the run queue. Where every CPU has a worker the extra P is not
//     added: its thread would only compete for the workers' CPUs (on a
//     2-CPU machine, measured in benchmarks/control-plane.md, it brought
//     connection resets under load and no steadier rate); there other
//     goroutines are kept cheap instead (the stats endpoint's cache and
//     pacing).
//   - Every thread of the process other than the pinned workers is
//     confined, with sched_setaffinity, to the process's CPUs that no
//     worker is pinned to; threads the runtime starts later inherit that
//     affinity (a locked worker thread never clones: the runtime starts
//     new threads from its template thread, confined too). Where every CPU
//     has a worker nothing is confined and Housekeeping.CPUs is empty.
//
// It waits (at most 5 seconds) for every worker to have pinned itself (or
// to have been left unpinned: -nopin, a failed pin).
// A reload that changes the number of workers confines the other threads
// again (rehousekeep). The confinement lasts until the router closes:
// then every thread gets the process's CPUs back (GOMAXPROCS stays
// raised).
func (r *Router) Housekeep() (Housekeeping, error) {
	h := Housekeeping{}
	// Every worker needs a P of its own (-cpus may put more workers
	// than CPUs).
	if want := len(r.workers); runtime.GOMAXPROCS(0) < want {
		runtime.GOMAXPROCS(want)
	}
	h.Procs = runtime.GOMAXPROCS(0)
	deadline := time.Now().Add(5 * time.Second)
	for {
		h.WorkerCPUs = h.WorkerCPUs[:0]
		pending := false
		for _, w := range r.workers {
			switch cpu := w.cpu.Load(); {
			case cpu >= 0:
				h.WorkerCPUs = append(h.WorkerCPUs, int(cpu))
			case !w.placed.Load() && !w.exited.Load():
				pending = true // not yet pinned (nor left unpinned)
			}
		}
		if !pending || time.Now().After(deadline) {
			break
		}
		time.Sleep(time.Millisecond)
	}
	if len(h.WorkerCPUs) == 0 {
		return h, nil // not pinned: nothing to keep apart
	}
	h.WorkerCPUs, h.CPUs = housekeepingCPUs(h.WorkerCPUs)
	if len(h.CPUs) == 0 {
		r.markHousekept()
		return h, nil
	}
	if want := len(r.workers) + 1; runtime.GOMAXPROCS(0) < want {
		runtime.GOMAXPROCS(want)
		h.Procs = want
	}
	n, err := confineThreads(h.CPUs, workerThreads(r.workers))
	h.Threads = n
	r.markHousekept()
	return h, err
}

// workerThreads lists the workers' OS threads.
func workerThreads(workers []*worker) []int {
	var tids []int
	for _, w := range workers {
		if tid := w.tid.Load(); tid != 0 {
			tids = append(tids, int(tid))
		}
	}
	return tids
}

// housekeepingCPUs returns workerCPUs sorted and without repeats, and the
// process's CPUs that are not among them.
func housekeepingCPUs(workerCPUs []int) (workers, free []int) {
	slices.Sort(workerCPUs)
	workers = slices.Compact(workerCPUs)
	for _, c := range processCPUs {
		if !slices.Contains(workers, c) {
			free = append(free, c)
		}
	}
	return workers, free
}

// markHousekept records that Housekeep ran, once: a reload that changes
// the number of workers then confines the other threads again, and when
// the router closes (its workers have exited) the process gets its CPUs
// back: a test process, or any that starts another router, must not stay
// confined.
func (r *Router) markHousekept() {
	if r.housekept.Swap(true) {
		return
	}
	r.OnClose(func() error {
		_, err := confineThreads(processCPUs, nil)
		return err
	})
}

// rehousekeep redoes Housekeep's confinement after a reload changed the
// number of workers (every added worker has pinned itself by then): the
// other threads move off the CPUs of added workers and onto those of
// removed ones, or get every CPU back where each now has a worker.
// GOMAXPROCS is left as it is (changing it stops the world; resizeSwap
// raised it where a worker needed a P). It returns the confinement, or
// nil when Housekeep never ran or the workers are not pinned.
func (r *Router) rehousekeep(workers []*worker) (*Housekeeping, error) {
	if !r.housekept.Load() {
		return nil, nil
	}
	h := &Housekeeping{Procs: runtime.GOMAXPROCS(0)}
	for _, w := range workers {
		if cpu := w.cpu.Load(); cpu >= 0 {
			h.WorkerCPUs = append(h.WorkerCPUs, int(cpu))
		}
	}
	if len(h.WorkerCPUs) == 0 {
		return nil, nil
	}
	h.WorkerCPUs, h.CPUs = housekeepingCPUs(h.WorkerCPUs)
	cpus := h.CPUs
	if len(cpus) == 0 {
		cpus = processCPUs // every CPU has a worker: nothing kept apart
	}
	n, err := confineThreads(cpus, workerThreads(workers))
	if len(h.CPUs) > 0 {
		h.Threads = n
	}
	return h, err
}
