package pipeline

import (
	"os"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestLongSleepWakes: a long sleep on the runtime's poller ends when a
// descriptor becomes readable, not at its deadline; it ends at the
// deadline when none does; and after a descriptor is closed and its number
// taken by a new file (as a reload does, when initWait closes the poller),
// the sleep watches the new one.
func TestLongSleepWakes(t *testing.T) {
	var p longSleeper
	defer p.close()
	efd := func() int {
		fd, err := unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC)
		if err != nil {
			t.Fatal(err)
		}
		return fd
	}
	// sleepFor sleeps on fds for up to d, writing to kick (if >= 0) after
	// 20 ms, and returns how long the sleep took.
	sleepFor := func(fds []int, d time.Duration, kick int) time.Duration {
		t.Helper()
		if kick >= 0 {
			go func() {
				time.Sleep(20 * time.Millisecond)
				unix.Write(kick, []byte{1, 0, 0, 0, 0, 0, 0, 0})
			}()
		}
		t0 := time.Now()
		if !p.sleep(fds, d) {
			t.Fatal("the runtime's poller could not be used")
		}
		return time.Since(t0)
	}
	a := efd()
	if took := sleepFor([]int{a}, 50*time.Millisecond, -1); took < 40*time.Millisecond {
		t.Errorf("nothing readable: slept %v, want the deadline (50ms)", took)
	}
	if took := sleepFor([]int{a}, 2*time.Second, a); took > time.Second {
		t.Errorf("a readable descriptor ended the sleep after %v", took)
	}
	unix.Close(a)
	p.close()  // initWait's, on a reload
	b := efd() // the lowest free number: a's
	defer unix.Close(b)
	if b != a {
		t.Logf("the new eventfd is %d, not %d: the reuse is not exercised", b, a)
	}
	if took := sleepFor([]int{b}, 2*time.Second, b); took > time.Second {
		t.Errorf("after the descriptor's number was reused, a readable one ended the sleep after %v", took)
	}
	if p.parked.Load() != 3 {
		t.Errorf("parked %d times, want 3", p.parked.Load())
	}
}

// TestLongSleepAllocs: a long sleep (after the first, which makes the
// epoll instance) allocates nothing, whether a descriptor or the deadline
// ends it.
func TestLongSleepAllocs(t *testing.T) {
	var p longSleeper
	defer p.close()
	fd := newEventfd(t)
	fds := []int{fd}
	p.sleep(fds, time.Microsecond)
	one := []byte{1, 0, 0, 0, 0, 0, 0, 0}
	var buf [8]byte
	if a := testing.AllocsPerRun(50, func() { p.sleep(fds, 100*time.Microsecond) }); a != 0 {
		t.Errorf("a long sleep ended by its deadline allocates %v times", a)
	}
	if a := testing.AllocsPerRun(50, func() {
		unix.Write(fd, one)
		p.sleep(fds, time.Second)
		unix.Read(fd, buf[:])
	}); a != 0 {
		t.Errorf("a long sleep ended by a descriptor allocates %v times", a)
	}
}

// TestLongSleepFallsBack: a descriptor epoll cannot watch (a regular file)
// makes the poller refuse at once, for good, and the worker sleeps in
// ppoll instead (idleWait's fallback), as on a system without it.
func TestLongSleepFallsBack(t *testing.T) {
	f, err := os.CreateTemp(t.TempDir(), "plain")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var p longSleeper
	defer p.close()
	t0 := time.Now()
	if p.sleep([]int{int(f.Fd())}, time.Second) {
		t.Fatal("slept on the poller with a descriptor epoll cannot watch")
	}
	if took := time.Since(t0); took > 100*time.Millisecond {
		t.Errorf("the refusal took %v", took)
	}
	if p.fallback() == "" {
		t.Error("the refusal is not kept: every sleep would try again")
	}
	// The reason reaches the worker's stats: EPERM is what epoll says of
	// a regular file.
	if why := p.fallback(); !strings.Contains(why, "watching descriptor") || !strings.Contains(why, "operation not permitted") {
		t.Errorf("fallback reason %q does not name the descriptor and the error", why)
	}
}
