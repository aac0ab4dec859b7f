package pipeline

import (
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
// Otherwise (gen, pcap, a TX ring that waits for a kick) it sleeps on Go's
// timer as before.
const (
	pollSleep    = 20 * time.Microsecond
	maxPollSleep = time.Millisecond
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
	polled   atomic.Uint64 // sleeps on descriptors (tests read it)
}

func (w *worker) initWait() {
	wt := &w.wait
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
}

// idleWait gives the processor away after a run of empty rounds: in
// ppoll(2) on the Sleepers' descriptors when they all allow it, at once
// not at all when one has work pending, else on a timer (sleep, which it
// grows).
func (w *worker) idleWait(now int64, sleep *time.Duration) {
	wt := &w.wait
	if !wt.ok {
		timedSleep(sleep)
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
		timedSleep(sleep)
	default:
		wt.pfds = wt.pfds[:0]
		for _, fd := range fds {
			wt.pfds = append(wt.pfds, unix.PollFd{Fd: int32(fd), Events: unix.POLLIN})
		}
		d := wt.timeout
		if untilTick := time.Duration(w.lastTick + tickEvery - now); d > untilTick {
			d = max(untilTick, 0)
		}
		wt.ts = unix.NsecToTimespec(int64(d))
		// EINTR (the runtime's preemption signal) is a wake-up like any.
		unix.Ppoll(wt.pfds, &wt.ts, nil)
		wt.polled.Add(1)
		wt.timeout = min(2*wt.timeout, maxPollSleep)
	}
	for _, s := range wt.sleepers {
		s.Woke()
	}
}

// timedSleep sleeps on Go's timer and grows the next sleep.
func timedSleep(sleep *time.Duration) {
	time.Sleep(*sleep)
	if *sleep < maxIdleSleep {
		*sleep = min(2**sleep, maxIdleSleep)
	}
}
