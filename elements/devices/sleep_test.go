package devices

import (
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/junction-dataplane/junction/elements"
)

// readable polls fd once without waiting.
func readable(t *testing.T, fd int) bool {
	t.Helper()
	p := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
	n, err := unix.Poll(p, 0)
	if err != nil {
		t.Fatal(err)
	}
	return n > 0
}

// A receiver about to sleep gives its eventfd; a sender's publish while it
// sleeps makes the eventfd readable, once; Woke consumes it; a publish
// while the receiver is awake writes nothing; packets published before
// the receiver prepares keep it awake.
func TestSpreadWakesSleeper(t *testing.T) {
	r := newRig(t, 2, flowFrames(64), 1<<30)
	defer func() {
		for _, f := range r.srcs {
			f.Close()
		}
	}()
	snd, rcv := r.srcs[0], r.srcs[1]

	// The sender serves the queue: it has no eventfd of its own.
	fds, mode := snd.PrepareSleep(nil)
	if mode != elements.SleepTimed || len(fds) != 0 {
		t.Fatalf("sender on a device without descriptors: %v %v, want SleepTimed and no fds", fds, mode)
	}
	snd.Woke()

	fds, mode = rcv.PrepareSleep(nil)
	if mode != elements.SleepOnFDs || len(fds) != 1 {
		t.Fatalf("idle receiver: fds %v mode %v, want its eventfd and SleepOnFDs", fds, mode)
	}
	efd := fds[0]
	if readable(t, efd) {
		t.Fatal("eventfd readable before anything was handed over")
	}
	snd.Poll() // hands worker 1 its share of a batch
	if counter(r.stats[0], "handed off") == 0 {
		t.Fatal("nothing handed off")
	}
	if !readable(t, efd) {
		t.Fatal("the sender's publish did not wake the sleeping receiver")
	}
	rcv.Woke()
	if readable(t, efd) {
		t.Fatal("Woke left the eventfd readable")
	}

	// Awake receiver: no write, and what is waiting keeps it awake.
	snd.Poll()
	if readable(t, efd) {
		t.Fatal("a publish to an awake receiver wrote its eventfd")
	}
	if _, mode = rcv.PrepareSleep(nil); mode != elements.SleepNot {
		t.Fatalf("receiver with packets waiting: mode %v, want SleepNot", mode)
	}
	rcv.Woke()
	for rcv.Poll() > 0 {
	}
	if _, mode = rcv.PrepareSleep(nil); mode != elements.SleepOnFDs {
		t.Fatalf("drained receiver: mode %v, want SleepOnFDs", mode)
	}
	rcv.Woke()

	// (A sender that takes the flag but writes only after the receiver
	// woke is the Bell's case: internal/wakeup's TestBell.)
}

// A receiver that sleeps in ppoll whenever it finds nothing, against a
// sender that hands it packets now and then, concurrently (run with
// -race): it never misses a wake-up (its timeout, 2 s, would show), and
// gets everything.
func TestSpreadSleeperConcurrent(t *testing.T) {
	const rounds = 300
	r := newRig(t, 2, flowFrames(64), 1<<30)
	r.dev.limit = -1 // nothing yet
	snd, rcv := r.srcs[0], r.srcs[1]
	var stop atomic.Bool
	var timeouts, sleeps atomic.Int64
	var efd atomic.Int64
	done := make(chan struct{})
	go func() {
		defer close(done)
		pfd := make([]unix.PollFd, 0, 4)
		ts := unix.NsecToTimespec(int64(2 * time.Second))
		for !stop.Load() {
			if rcv.Poll() > 0 {
				continue
			}
			fds, mode := rcv.PrepareSleep(nil)
			if mode == elements.SleepOnFDs && len(fds) > 0 {
				efd.Store(int64(fds[0]))
				pfd = pfd[:0]
				for _, fd := range fds {
					pfd = append(pfd, unix.PollFd{Fd: int32(fd), Events: unix.POLLIN})
				}
				sleeps.Add(1)
				if n, _ := unix.Ppoll(pfd, &ts, nil); n == 0 {
					timeouts.Add(1)
				}
			}
			rcv.Woke()
		}
	}()
	for i := 0; i < rounds; i++ {
		r.dev.limit = 8 * (i + 1) // the sender's queue gets a few more packets
		for snd.Poll() > 0 {
		}
		time.Sleep(200 * time.Microsecond)
	}
	deadline := time.Now().Add(time.Second)
	for r.sinks[0].count.Load()+r.sinks[1].count.Load() != rounds*8 && time.Now().Before(deadline) {
		time.Sleep(100 * time.Microsecond)
	}
	got := r.sinks[0].count.Load() + r.sinks[1].count.Load()
	stop.Store(true)
	if fd := efd.Load(); fd > 0 {
		b := [8]byte{1}
		unix.Write(int(fd), b[:])
	}
	<-done
	for _, f := range r.srcs {
		f.Close()
	}
	t.Logf("receiver slept %d times, %d timeouts; worker 1 got %d packets", sleeps.Load(), timeouts.Load(), r.sinks[1].count.Load())
	if got != rounds*8 {
		t.Errorf("delivered %d of %d within 1 s of the last send: a sleeping receiver missed a wake-up", got, rounds*8)
	}
	if timeouts.Load() != 0 {
		t.Errorf("%d sleeps ended by the 2 s timeout: a wake-up was missed", timeouts.Load())
	}
	if sleeps.Load() < rounds/4 {
		t.Errorf("the receiver slept only %d times in %d rounds", sleeps.Load(), rounds)
	}
}
