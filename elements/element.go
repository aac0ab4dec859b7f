package elements

import (
	"time"

	"github.com/junction-dataplane/junction/packet"
)

// Element processes batches of packets. It is the whole required contract.
//
// Push receives batch b on input port in. When Push returns, the element has
// disposed of every packet in b: passed it on through one of its Outputs,
// dropped it (Stats.Drop), consumed it (Stats.Consume) or kept it (a held packet, released later or on
// Close). The *Batch itself belongs to the caller, who reuses it: an element
// that keeps packets copies the pointers, never the batch.
type Element interface {
	Push(in int, b *packet.Batch)
}

// Source is an element that brings packets into the graph (FromDevice). The
// worker calls Poll in its loop; Poll receives at most one batch, pushes it
// downstream and returns how many packets it received.
type Source interface {
	Element
	Poll() int
	// Drained reports that the source is finite and has nothing more to
	// give (a pcap file read to the end, a gen device with a count reached).
	Drained() bool
}

// Closer is an element holding resources or packets that must be released
// when the pipeline stops (e.g. packets queued for ARP resolution).
type Closer interface {
	Close() error
}

// Ticker is an element with periodic work (ageing, retransmitting ARP
// requests, flushing). The worker calls Tick about every millisecond with
// the current monotonic time in nanoseconds, between batches. A worker
// that has been idle for a while ticks less often (up to MaxIdleTick
// apart) if every Ticker of its pipeline is a TickScheduler that allows
// it; a Ticker that is not keeps the millisecond cadence.
type Ticker interface {
	Tick(now int64)
}

// MaxIdleTick is the longest a sleeping worker goes without ticking.
const MaxIdleTick = 10 * time.Millisecond

// TickScheduler is a Ticker that says when it next needs a tick, so that
// an idle worker can sleep past the millisecond tick (Click's timers:
// an element is run when it has work, not on every beat). NextTick
// returns the monotonic time by which the element wants its next Tick
// (now or earlier: the millisecond cadence), or NoWake when nothing it
// holds is due; the worker ticks by the earliest answer and at least every
// MaxIdleTick, and at once when a packet wakes it. Work a Tick does in
// proportion to time (an ageing sweep) must scale with the time since the
// last Tick. Called only when the worker is about to sleep, never per
// packet.
type TickScheduler interface {
	Ticker
	NextTick(now int64) int64
}

// SleepMode is a Sleeper's answer to a worker about to sleep.
type SleepMode uint8

// The answers, in increasing order of precedence: a worker sleeps on the
// descriptors only if every Sleeper says SleepOnFDs, and not at all if one
// says SleepNot.
const (
	// SleepOnFDs: the descriptors appended (possibly none) become
	// readable when this element has work.
	SleepOnFDs SleepMode = iota
	// SleepTimed: no descriptor tells when this element has work (a
	// device without one, a transmission that only polling completes):
	// the worker sleeps on a timer, a short while.
	SleepTimed
	// SleepNot: work is pending now; the worker polls again at once.
	SleepNot
)

// Sleeper is an element that lets an idle worker sleep until it has work
// instead of polling (VPP's interrupt mode, DPDK's RX interrupts). After a
// run of empty rounds the worker calls PrepareSleep on every Sleeper of
// its pipeline; if every one answers SleepOnFDs, every Source is a Sleeper
// and some descriptor was given, it waits in poll(2) for one of them to
// become readable (or for a timeout: Tickers keep their cadence). Then it
// calls Woke on every Sleeper, whatever the answers were, before the
// next round. Neither is called on the hot path.
type Sleeper interface {
	// PrepareSleep appends to fds the file descriptors whose readability
	// means this element has work, and says whether the worker may sleep
	// on them. It may arm a wake-up that another worker triggers (the
	// element must then check, after arming, that nothing arrived
	// before).
	PrepareSleep(fds []int) ([]int, SleepMode)
	// Woke disarms what PrepareSleep armed and consumes the wake-up.
	Woke()
}

// NoWake is what Waker.NextWake returns when the element holds nothing.
const NoWake = int64(1<<63 - 1)

// Waker is an element that holds packets until a time of its own choosing
// (a shaper's next departure) rather than until a packet or a tick comes.
// Every round the worker asks each Waker of its pipeline when it next has
// work and calls Wake once that time has come; an idle worker sleeps no
// longer than until the earliest such time, so a held packet leaves on
// time without the worker polling for it. NextWake must be cheap (it is
// called every round); neither is called per packet.
type Waker interface {
	// NextWake returns the monotonic time (Nanotime) at which the
	// element next has work, or NoWake.
	NextWake() int64
	// Wake does the work due at now: it pushes downstream what may
	// leave. It returns the packets it pushed.
	Wake(now int64) int
}
