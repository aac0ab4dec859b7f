// Package wakeup lets a worker that hands another worker work through a
// ring wake it when it sleeps in poll(2) (elements.Sleeper).
//
// The receiver, about to sleep, arms its Bell (sets its asleep flag) and
// then checks its incoming rings; a sender publishes to a ring, then rings
// the receiver's Bell, which takes the flag and, when it was set, writes the
// receiver's eventfd. Go's atomics are sequentially consistent, so either
// the receiver sees the work or the sender sees the flag: never neither.
package wakeup

import (
	"encoding/binary"
	"fmt"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// one is what a ring writes to the eventfd (read only).
var one = [8]byte{1}

// Bell is one receiving worker's wake-up: an eventfd and its flag. Ring
// may be called by any worker; Arm, Woke and Close only by the receiver.
type Bell struct {
	fd     int
	asleep atomic.Bool
	armed  bool   // Arm ran, Woke not yet
	due    uint64 // writes owed by senders that took the flag, not yet read
	buf    [8]byte
}

// New makes a Bell (a non-blocking eventfd).
func New() (*Bell, error) {
	fd, err := unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("eventfd: %w", err)
	}
	return &Bell{fd: fd}, nil
}

// Arm sets the flag; the caller must then check its rings, and not sleep
// if they hold work, else wait for FD to become readable.
func (b *Bell) Arm() {
	b.asleep.Store(true)
	b.armed = true
}

// FD is the eventfd a Ring writes.
func (b *Bell) FD() int { return b.fd }

// Ring wakes the receiver if it is asleep (once per sleep: the flag is
// taken). Call it after publishing to the receiver's ring.
func (b *Bell) Ring() {
	if b.asleep.Load() && b.asleep.Swap(false) {
		unix.Write(b.fd, one[:]) // EAGAIN: the counter is already set
	}
}

// Woke disarms the Bell and consumes the eventfd's writes, without a
// system call when none is due. A sender that took the flag writes once,
// perhaps only after this runs: due counts the writes owed and not yet
// read, so that a late one is read at the next wake instead of leaving the
// eventfd readable for good.
func (b *Bell) Woke() {
	if b.armed {
		b.armed = false
		if !b.asleep.Swap(false) {
			b.due++ // a sender took it
		}
	}
	if b.due > 0 {
		if n, _ := unix.Read(b.fd, b.buf[:]); n == 8 {
			b.due -= min(b.due, binary.NativeEndian.Uint64(b.buf[:]))
		}
	}
}

// Close closes the eventfd.
func (b *Bell) Close() error { return unix.Close(b.fd) }
