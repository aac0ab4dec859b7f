package pipeline

import (
	"fmt"
	"runtime"
	"sync/atomic"
	"time"

	"github.com/junction-dataplane/junction/elements"
	"github.com/junction-dataplane/junction/internal/cputime"
	"github.com/junction-dataplane/junction/packet"
)

// Backoff of an idle worker, so that an idle forwarder does not burn a
// core: after spinEmpty empty rounds in a row it yields the processor,
// after yieldEmpty it sleeps. When every source can be waited on
// (sleep.go) it sleeps in ppoll(2) until a packet arrives; otherwise
// between polls, on Go's timer (idleSleep at first, growing to
// maxIdleSleep; a pinned worker's timer oversleeps: about a millisecond
// here), and the first packet after a long idle period waits that long.
const (
	spinEmpty    = 256
	yieldEmpty   = 1024
	idleSleep    = 20 * time.Microsecond
	maxIdleSleep = 100 * time.Microsecond
	tickEvery    = int64(time.Millisecond)
)

// worker is one pipeline: one instance of every graph element, the sources
// it polls and the accounting of its time.
type worker struct {
	r   *Router
	id  int
	cpu atomic.Int32 // the CPU it was pinned to, -1 when not pinned
	tid atomic.Int32 // its OS thread (pinned or not), 0 before it runs
	// placed is set once the worker has pinned itself, failed to, or
	// was told not to (Housekeep waits for it).
	placed atomic.Bool
	clock  *elements.Clock
	pool   *packet.Pool

	inst  []elements.Element   // by graph element index
	stats []*elements.Stats    // by graph element index
	outs  [][]*elements.Output // by graph element index, out port

	sources  []elements.Source
	srcStats []*elements.Stats

	tickers  []elements.Ticker
	lastTick int64

	// wakers hold packets until times of their own (elements.Waker):
	// asked every round, woken when due; the idle sleep ends by the
	// earliest (sleep.go).
	wakers []elements.Waker

	wait waiter // sleeping on the sources' descriptors (sleep.go)
	// asleep is set while the worker sleeps past its millisecond tick,
	// after it published its counters (sleep.go).
	asleep atomic.Bool

	// next is a new generation of the graph handed over by a reload,
	// adopted between two rounds (reload.go).
	next atomic.Pointer[nextGen]
	// rphase is where the worker is in the swap of a reload that changes
	// the number of workers (resize.go); retired: that reload removed it.
	rphase  int
	retired bool
	// pubInst is inst as the control plane sees it (Router.Instances):
	// set at build and, by a reload, under genMu once every worker runs
	// the new generation.
	pubInst []elements.Element

	// Published about every millisecond (and at exit), like the elements'
	// counters: nanoseconds busy and idle, busy nanoseconds of the rounds
	// whose elements were timed, rounds.
	busy, idle, timedBusy, preempted, rounds atomic.Uint64
	cpuNanos                                 atomic.Uint64 // the thread's CPU time at the last publish
	exited                                   atomic.Bool
	// pubAt is when the loop last published every counter, its own and
	// its elements' (elements.Nanotime); 0 while no loop runs (a router
	// from Build). Snapshot waits for it (consistent.go).
	pubAt atomic.Int64
}

// poll runs one round: every source polled once, each pushing what it
// received depth-first through the graph. It returns the packets received.
func (w *worker) poll() int {
	n := 0
	for i, s := range w.sources {
		n += w.clock.Time(s, w.srcStats[i])
	}
	return n
}

// tick calls every Ticker with now. Packets a Tick pushes are accounted to
// the elements that receive them; the tick's own time counts as busy time.
func (w *worker) tick(now int64) {
	for _, t := range w.tickers {
		t.Tick(now)
	}
}

// wake calls Wake on every Waker whose time has come and returns the
// packets they pushed.
func (w *worker) wake(now int64) int {
	n := 0
	for _, k := range w.wakers {
		if k.NextWake() <= now {
			n += k.Wake(now)
		}
	}
	return n
}

// nextWake is the earliest time a Waker has work (elements.NoWake: none).
func (w *worker) nextWake() int64 {
	t := elements.NoWake
	for _, k := range w.wakers {
		t = min(t, k.NextWake())
	}
	return t
}

// drained reports whether every source of this worker is finite and done.
func (w *worker) drained() bool {
	for _, s := range w.sources {
		if !s.Drained() {
			return false
		}
	}
	return true
}

// loop is the worker's poll loop. The clock is read once per round: the
// time since the previous reading is that round's, busy if it brought
// packets, idle if not. The same reading starts the next round on the
// element clock, which decides whether that round's elements are timed.
func (w *worker) loop() {
	r := w.r
	last := elements.Nanotime()
	w.lastTick = last
	lastPub := last
	var busy, idle, timedBusy, preempted, rounds uint64
	// The thread's CPU time, read every 64 publishes (~64 ms) and at
	// exit: it is a system call, and a preemption that lands in one would
	// otherwise show in the next round's time.
	cpu0 := cputime.Thread() // the goroutine is locked to its thread (run)
	pubs := 0
	publish := func(cpu bool) {
		if cpu {
			w.cpuNanos.Store(uint64(cputime.Thread() - cpu0))
		}
		w.busy.Store(busy)
		w.idle.Store(idle)
		w.timedBusy.Store(timedBusy)
		w.preempted.Store(preempted)
		w.rounds.Store(rounds)
		w.clock.Publish()
		w.pubAt.Store(elements.Nanotime())
	}
	w.pubAt.Store(last)
	empty := 0
	sleep := idleSleep
	w.initWait()
	defer w.wait.poller.close()
	w.clock.Round(last)
	for !r.stop.Load() {
		if ng := w.next.Load(); ng == nil {
			// No reload pending: one atomic load per round.
		} else if ng.resize != nil {
			// A reload that changes the number of workers (resize.go).
			switch w.stepResize(ng) {
			case resizeWaiting:
				if w.rphase == phaseParked {
					// Nothing to do until the release: sleep, so
					// that the reload moving the flows has the CPU.
					ng.resize.waitRelease(time.Millisecond)
				} else {
					runtime.Gosched()
				}
				t := elements.Nanotime()
				idle += uint64(t - last)
				last = t
				continue
			case resizeRetired:
				publish(true)
				w.exited.Store(true)
				return
			}
			last = elements.Nanotime()
			empty, sleep = 0, idleSleep
		} else if w.checkNext() {
			// The new pipeline's clock starts now; the old one's
			// round ended with its last poll.
			last = elements.Nanotime()
			empty, sleep = 0, idleSleep
		}
		n := w.poll()
		timed := w.clock.Timed()
		now := elements.Nanotime()
		d := uint64(now - last)
		last = now
		rounds++
		lost := uint64(w.clock.TakeLost())
		if n > 0 {
			busy += d
			preempted += lost
			if timed {
				// The elements' samples of a preempted poll were
				// discarded: leave its time out of what they add up to.
				timedBusy += d - min(lost, d)
			}
			empty, sleep, w.wait.timeout, w.wait.longs = 0, idleSleep, pollSleep, 0
		} else {
			idle += d
			empty++
		}
		if len(w.wakers) > 0 && w.wake(now) > 0 {
			// Released packets are work, accounted as a tick's; they
			// do not end the idle backoff: the next is timed.
			t := elements.Nanotime()
			busy += uint64(t - last)
			if timed {
				timedBusy += uint64(t - last)
			}
			last = t
		}
		if now-w.lastTick >= tickEvery {
			if len(w.tickers) > 0 {
				w.tick(now)
				// Ticks are work. In a timed round the elements a tick
				// pushes packets to are timed too, so the tick's time
				// belongs with the timed rounds' busy time that their
				// self times add up to.
				t := elements.Nanotime()
				busy += uint64(t - last)
				if timed {
					timedBusy += uint64(t - last)
				}
				last = t
			}
			w.lastTick = now
		}
		if now-lastPub >= tickEvery {
			lastPub = now
			pubs++
			publish(pubs%64 == 0)
			if pubs%64 == 0 {
				// The CPU time's system call is work outside any round.
				t := elements.Nanotime()
				busy += uint64(t - last)
				last = t
			}
		}
		if n == 0 {
			if w.drained() && (len(w.wakers) == 0 || w.nextWake() == elements.NoWake) {
				// Finite sources done and nothing held for later.
				break
			}
			if empty >= spinEmpty {
				w.wait.gosched = empty == spinEmpty
				w.idleWait(now, empty < yieldEmpty, &sleep, publish)
			}
			if empty >= spinEmpty {
				// Time given away is idle, whatever the next round brings.
				t := elements.Nanotime()
				idle += uint64(t - last)
				last = t
			}
		}
		w.clock.Round(last)
	}
	w.clock.Publish()
	publish(true)
	w.exited.Store(true)
}

// run starts one goroutine per worker, and one that closes everything
// when they have all exited.
func (r *Router) run(o Options) {
	r.start = time.Now()
	r.cpus = processCPUs
	if len(o.CPUs) > 0 {
		r.cpus = o.CPUs
	}
	r.noPin = o.NoPin
	r.allOut = make(chan struct{})
	r.running = len(r.workers)
	for _, w := range r.workers {
		go r.runWorker(w, nil)
	}
	if o.Duration > 0 {
		r.timer = time.AfterFunc(o.Duration, r.Stop)
	}
	go func() {
		<-r.allOut
		if r.timer != nil {
			r.timer.Stop()
		}
		// A reload in progress adopts the new generation for the
		// exited workers first, so that what is closed is what runs.
		r.reloadMu.Lock()
		r.closeAll()
		r.reloadMu.Unlock()
		close(r.done)
	}()
}

// runWorker is worker w's goroutine: pinned, then its loop. A worker that
// a reload adds (ng != nil) first tells the reload it runs.
func (r *Router) runWorker(w *worker, ng *nextGen) {
	defer r.workerOut()
	// The goroutine keeps its thread locked until it exits: a pinned
	// thread must not go back to the scheduler's pool (it would carry its
	// one-CPU affinity to unrelated goroutines), so the runtime ends it
	// with the goroutine.
	runtime.LockOSThread()
	w.tid.Store(int32(threadID()))
	if !r.noPin && len(r.cpus) > 0 {
		cpu := r.cpus[w.id%len(r.cpus)]
		if err := pinThread(cpu); err != nil {
			// Not fatal: the worker runs, only unpinned.
			fmt.Fprintf(r.log, "worker %d: not pinned to CPU %d: %v\n", w.id, cpu, err)
		} else {
			w.cpu.Store(int32(cpu))
		}
	}
	w.placed.Store(true)
	if ng != nil {
		ng.started(w)
	}
	w.loop()
}

// workerOut counts a worker's goroutine out; the last one out ends the
// router.
func (r *Router) workerOut() {
	r.runMu.Lock()
	defer r.runMu.Unlock()
	if r.running--; r.running == 0 {
		close(r.allOut)
	}
}

// startWorker starts the goroutine of a worker a reload added, unless every
// worker has already exited (the router is ending: nothing would close
// what the new one runs). It reports whether it started it.
func (r *Router) startWorker(w *worker, ng *nextGen) bool {
	r.runMu.Lock()
	defer r.runMu.Unlock()
	if r.running == 0 {
		return false
	}
	r.running++
	go r.runWorker(w, ng)
	return true
}
