package pipeline

import (
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/junction-dataplane/junction/elements"
)

// fakeWaker asks to be woken every period, n times, and records how late
// each Wake came and how many worker rounds passed between two.
type fakeWaker struct {
	period int64
	next   int64
	late   []int64
	rounds []uint64
	src    *pollCounter
	last   uint64
	done   atomic.Bool
	n      int
}

func (k *fakeWaker) NextWake() int64 { return k.next }

func (k *fakeWaker) Wake(now int64) int {
	if len(k.late) == k.n {
		k.next = elements.NoWake
		k.done.Store(true)
		return 0
	}
	r := k.src.polls.Load()
	k.late = append(k.late, now-k.next)
	k.rounds = append(k.rounds, r-k.last)
	k.last = r
	k.next = now + k.period
	return 1
}

// pollCounter is an fdSource that counts its polls: one per round.
type pollCounter struct {
	*fdSource
	polls atomic.Uint64
}

func (s *pollCounter) Poll() int {
	s.polls.Add(1)
	return s.fdSource.Poll()
}

// TestWakerNoBusyWait: a worker whose only work is a Waker's (a shaper
// holding packets) sleeps until the Waker's time, on the source's
// descriptor, and wakes then: each Wake comes soon after its time (well
// before the next tick, which would otherwise end the sleep) and only a
// few rounds pass between two, where polling would make thousands.
func TestWakerNoBusyWait(t *testing.T) {
	fd := newEventfd(t)
	src := &pollCounter{fdSource: &fdSource{fd: fd}}
	r := buildWithSource(t, src)
	w := r.workers[0]
	const period = 300_000 // 0.3 ms: shorter than a tick
	k := &fakeWaker{period: period, n: 400, src: src}
	// The first wake is 50 ms away: the worker is asleep by then.
	k.next = elements.Nanotime() + 50_000_000
	w.wakers = append(w.wakers, k)
	r.run(Options{})
	defer func() {
		r.Stop()
		waitRouter(t, r, 5*time.Second)
	}()
	waitUntil(t, "the waker's wakes", 20*time.Second, k.done.Load)
	late, rounds := slices.Clone(k.late), slices.Clone(k.rounds[1:])
	slices.Sort(late)
	slices.Sort(rounds)
	med, p90 := time.Duration(late[len(late)/2]), time.Duration(late[len(late)*9/10])
	t.Logf("wake lateness median %v, p90 %v; rounds between wakes median %d, p90 %d",
		med, p90, rounds[len(rounds)/2], rounds[len(rounds)*9/10])
	if late[0] < 0 {
		t.Errorf("a Wake came %v before its time", time.Duration(-late[0]))
	}
	// Woken by the tick instead, a wake would be up to a millisecond
	// late, 0.35 ms on average.
	if med > 200*time.Microsecond {
		t.Errorf("median lateness %v: the sleep does not end at the waker's time", med)
	}
	// Busy-waiting 0.3 ms is hundreds of rounds at least.
	if rounds[len(rounds)/2] > 20 {
		t.Errorf("median %d rounds between wakes: the worker polls instead of sleeping", rounds[len(rounds)/2])
	}
	if w.wait.polled.Load() == 0 {
		t.Error("the worker never slept on the descriptor")
	}
}
