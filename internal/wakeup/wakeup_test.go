package wakeup

import (
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// readable reports whether fd is readable within d.
func readable(t *testing.T, fd int, d time.Duration) bool {
	t.Helper()
	pfd := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
	n, err := unix.Poll(pfd, int(d/time.Millisecond))
	if err != nil && err != unix.EINTR {
		t.Fatal(err)
	}
	return n > 0
}

// TestBell: a ring wakes an armed receiver once; a ring while it is awake
// writes nothing; a ring that took the flag after Woke is read at the next
// wake, so the eventfd does not stay readable.
func TestBell(t *testing.T) {
	b, err := New()
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()

	b.Ring() // awake: nothing written
	if readable(t, b.fd, 10*time.Millisecond) {
		t.Fatal("a ring to an awake receiver wrote the eventfd")
	}

	b.Arm()
	b.Ring()
	b.Ring() // the flag is taken: one write
	if !readable(t, b.fd, time.Second) {
		t.Fatal("a ring to an armed receiver did not wake it")
	}
	b.Woke()
	if readable(t, b.fd, 10*time.Millisecond) {
		t.Fatal("Woke left the eventfd readable")
	}

	// Armed, woken by something else; Woke finds the flag still set.
	b.Arm()
	b.Woke()
	b.Ring()
	if readable(t, b.fd, 10*time.Millisecond) {
		t.Fatal("a ring after Woke wrote the eventfd")
	}

	// The race: a sender takes the flag, the receiver's Woke runs before
	// its write lands; the next Woke reads it.
	b.Arm()
	if !b.asleep.Swap(false) { // the sender's take, its write pending
		t.Fatal("flag not set by Arm")
	}
	b.Woke()
	if b.due != 1 {
		t.Fatalf("due %d after a taken flag, want 1", b.due)
	}
	unix.Write(b.fd, one[:]) // the late write
	b.Arm()
	b.Woke()
	if b.due != 0 || readable(t, b.fd, 10*time.Millisecond) {
		t.Fatalf("due %d, eventfd readable after the late write was read", b.due)
	}
}
