package pipeline

import (
	"runtime"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/junction-dataplane/junction/elements"
)

// An idle worker whose every source can be waited on (elements.Sleeper
// with descriptors: afxdp and afpacket queues, the spreading hub's
// eventfds) sleeps in ppoll(2) until a packet arrives, like VPP's
// interrupt mode: the wake-up is the kernel's, a few microseconds,
// whatever the timeout. The timeout grows from pollSleep to maxPollSleep
// and never passes the next tick, so that Tickers (ARP retries, conntrack
// expiry) and the published counters keep their millisecond cadence.
// Once it has reached maxPollSleep (the worker idle for a few
// milliseconds), the worker sleeps to the next tick its Tickers need
// (elements.TickScheduler), at most elements.MaxIdleTick: an idle
// forwarder then wakes about a hundred times a second per worker, not a
// thousand, and so does the runtime's sysmon, which each wake-up from a
// system call rouses. Before such a sleep it publishes its counters
// (awaitPublish does not wait for a sleeping worker); a reload or Stop
// waits for it to wake, at most MaxIdleTick.
// Otherwise (gen, pcap, a TX ring that waits for a kick) it sleeps on Go's
// timer.
const (
	pollSleep    = 20 * time.Microsecond
	maxPollSleep = time.Millisecond
	// parkAfter is how many sleeps past the tick in a row a worker takes
	// in ppoll before it parks on the runtime's poller: a worker that
	// sees a packet every few milliseconds (the quiet direction of a TCP
	// stream) wakes cheaper from ppoll, one idle for longer (tens of
	// milliseconds) costs less parked (longsleep.go).
	parkAfter = 4
)

// waiter is a worker's state for sleeping on descriptors; it is reused
// every time, so that sleeping allocates nothing.
type waiter struct {
	sleepers []elements.Sleeper // every element of the pipeline that is one
	ok       bool               // every source is a Sleeper
	fds      []int
	pfds     []unix.PollFd
	ts       unix.Timespec
	timeout  time.Duration // the next ppoll's
	// gosched: the next yield is the idle period's first, which gives
	// the P to the process's other goroutines (yieldOrSleep).
	gosched bool
	polled  atomic.Uint64 // sleeps on descriptors (tests read it)
	// scheds are the Tickers as TickSchedulers, and scheduled says
	// that every Ticker is one; when one is not, the worker ticks every
	// millisecond, asleep or not.
	scheds    []elements.TickScheduler
	scheduled bool
	// poller is where the worker sleeps past the tick once it has slept
	// past it parkAfter times in a row (longsleep.go); longs counts them
	// (a packet resets it).
	poller longSleeper
	longs  int
	long   atomic.Uint64 // sleeps past the millisecond tick (tests read it)
}

func (w *worker) initWait() {
	wt := &w.wait
	// A reload may have changed the sources: the next long sleep makes
	// the poller anew.
	wt.poller.close()
	wt.sleepers = wt.sleepers[:0]
	for _, el := range w.inst {
		if s, ok := el.(elements.Sleeper); ok {
			wt.sleepers = append(wt.sleepers, s)
		}
	}
	wt.ok = len(w.sources) > 0
	for _, s := range w.sources {
		if _, ok := s.(elements.Sleeper); !ok {
			wt.ok = false
		}
	}
	wt.timeout = pollSleep
	wt.scheds, wt.scheduled = wt.scheds[:0], true
	for _, t := range w.tickers {
		s, ok := t.(elements.TickScheduler)
		if !ok {
			wt.scheds, wt.scheduled = wt.scheds[:0], false
			break
		}
		wt.scheds = append(wt.scheds, s)
	}
}

// tickDue is when a worker about to sleep long must tick next: the
// earliest time a Ticker asks for, no later than MaxIdleTick after the
// last tick, and no earlier than the millisecond tick.
func (w *worker) tickDue(now int64) int64 {
	tick := w.lastTick + tickEvery
	if !w.wait.scheduled {
		return tick
	}
	due := w.lastTick + int64(elements.MaxIdleTick)
	for _, s := range w.wait.scheds {
		due = min(due, s.NextTick(now))
	}
	return max(due, tick)
}

// idleWait gives the processor away after a run of spinEmpty empty
// rounds. When every source is a Sleeper it sleeps in ppoll(2) on their
// descriptors if they all allow it, not at all if one has work pending,
// and otherwise yields (early: fewer than yieldEmpty empty rounds) or
// sleeps on Go's timer (sleep, which it grows). Without Sleepers it yields
// or sleeps on the timer.
func (w *worker) idleWait(now int64, early bool, sleep *time.Duration, publish func(bool)) {
	wt := &w.wait
	// A Waker's next time bounds every sleep: a held packet leaves
	// when it is due, not when a tick or a packet wakes the worker.
	untilWake := elements.MaxIdleTick
	if len(w.wakers) > 0 {
		next := w.nextWake()
		if next <= now {
			return
		}
		untilWake = min(time.Duration(next-now), elements.MaxIdleTick)
	}
	if !wt.ok || early {
		// The yield rounds stay, descriptors or not: without them (ppoll
		// right after the spin), one-stream TCP through the router
		// collapsed in some runs (benchmarks/drivers.md, "Idle
		// workers").
		w.yieldOrSleep(early, sleep, untilWake)
		return
	}
	fds := wt.fds[:0]
	mode := elements.SleepOnFDs
	for _, s := range wt.sleepers {
		var m elements.SleepMode
		fds, m = s.PrepareSleep(fds)
		mode = max(mode, m)
		if mode == elements.SleepNot {
			break
		}
	}
	wt.fds = fds
	switch {
	case mode == elements.SleepNot:
	case mode == elements.SleepTimed || len(fds) == 0:
		w.yieldOrSleep(early, sleep, untilWake)
	default:
		wt.pfds = wt.pfds[:0]
		for _, fd := range fds {
			wt.pfds = append(wt.pfds, unix.PollFd{Fd: int32(fd), Events: unix.POLLIN})
		}
		d, due := wt.timeout, w.lastTick+tickEvery
		if d == maxPollSleep {
			d, due = elements.MaxIdleTick, w.tickDue(now)
		}
		d = min(d, max(time.Duration(due-now), 0), untilWake)
		long := d > time.Duration(tickEvery)
		if long {
			// Nothing the elements counted is published later than
			// this while the worker sleeps: awaitPublish takes a
			// sleeping worker as published.
			publish(false)
			w.asleep.Store(true)
			wt.long.Add(1)
		}
		// A sleep past the tick parks on the runtime's poller
		// (longsleep.go); a shorter one, or where the poller cannot be
		// used, is a ppoll through the runtime's system call path, so
		// that the worker's P serves other goroutines (and the GC) while
		// it sleeps. A raw ppoll, which keeps the P, was cheaper idle but
		// starved the rest of the process, and TCP through the router
		// stalled, even when the worker yielded the P once a millisecond
		// (benchmarks/drivers.md, "Idle workers"). EINTR is a wake-up
		// like any.
		if long {
			wt.longs++
		}
		if !long || wt.longs <= parkAfter || !wt.poller.sleep(fds, d) {
			wt.ts = unix.NsecToTimespec(int64(d))
			unix.Ppoll(wt.pfds, &wt.ts, nil)
		}
		if long {
			w.asleep.Store(false)
		}
		wt.polled.Add(1)
		wt.timeout = min(2*wt.timeout, maxPollSleep)
	}
	for _, s := range wt.sleepers {
		s.Woke()
	}
}

// yieldOrSleep is the package's yieldOrSleep with the timed sleep ended by
// the next Waker's time (untilWake), the grown sleep kept for later.
func (w *worker) yieldOrSleep(early bool, sleep *time.Duration, untilWake time.Duration) {
	if early || *sleep <= untilWake {
		yieldOrSleep(early, w.wait.gosched, sleep)
		return
	}
	time.Sleep(untilWake)
}

// yieldOrSleep yields the processor (early) or sleeps on Go's timer.
//
// Only the first yield of an idle period (gosched) is runtime.Gosched,
// which lets the process's other goroutines have the worker's P; the
// others are the kernel's sched_yield(2). A worker goroutine is locked to
// its thread, and Gosched on a locked thread is a thread handoff (the
// thread gives its P to another thread, which finds the locked goroutine
// runnable and hands the P back: two futex wake-ups and two context
// switches, even when nothing else wants to run). sched_yield gives the
// CPU to whatever else is runnable on it (the hosts' softirqs and sockets
// on a shared machine) and keeps the P; the process's other goroutines
// also get it when the worker sleeps in ppoll (a system call through the
// runtime) or when sysmon preempts it. The CPU and context switches per GB
// this saves are in benchmarks/e2e-tcp.md ("CPU per GB").
func yieldOrSleep(early, gosched bool, sleep *time.Duration) {
	switch {
	case early && gosched:
		runtime.Gosched()
	case early:
		unix.RawSyscall(unix.SYS_SCHED_YIELD, 0, 0, 0)
	default:
		timedSleep(sleep)
	}
}

// timedSleep sleeps on Go's timer and grows the next sleep.
func timedSleep(sleep *time.Duration) {
	time.Sleep(*sleep)
	if *sleep < maxIdleSleep {
		*sleep = min(2**sleep, maxIdleSleep)
	}
}
