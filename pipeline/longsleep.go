package pipeline

import (
	"fmt"
	"os"
	"slices"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// longSleeper is where a worker sleeps past the millisecond tick: an epoll
// instance holding the worker's descriptors, itself registered with Go's
// network poller. A worker parked on it holds no P and no system call, so
// a forwarder whose workers are all asleep has every P idle, and the
// runtime's sysmon sleeps too. In ppoll(2) (a system call through the
// runtime) each sleeping worker held its P in a system call: sysmon took
// it back once the sleep passed 10 ms, and each wake-up from such a
// sleep woke sysmon into its 20 µs polling again, about 3,000 wake-ups a
// second of an idle forwarder (benchmarks/drivers.md, "Long sleeps on the
// runtime's poller"). A packet still ends the sleep at once: the
// epoll instance becomes readable when any descriptor does. A worker
// parks here only after parkAfter sleeps past the tick in a row; shorter
// idle spells stay in ppoll, whose wake-up costs one thread, not two.
type longSleeper struct {
	f  *os.File // the epoll instance; nil until the first long sleep
	rc syscall.RawConn
	ep int // its descriptor (f's)
	// fds are the descriptors it holds. They are the sources', which
	// change only with a reload; initWait closes the instance then, as a
	// descriptor closed by the reload and its number taken by a new file
	// would leave the old entry gone and the new file unwatched.
	fds   []int
	evs   [8]unix.EpollEvent
	ready func(fd uintptr) bool // drain, made once
	// why is set when setting the poller up failed, for good: the worker
	// sleeps in ppoll instead, at ppoll's idle cost, and its stats say
	// why (WorkerStats.SleepFallback).
	why    atomic.Pointer[string]
	parked atomic.Uint64 // sleeps taken here (tests read it)
}

// sleep waits until one of fds is readable or d has passed; false (at
// once) if the poller cannot be used, and the caller sleeps in ppoll.
func (p *longSleeper) sleep(fds []int, d time.Duration) bool {
	if p.why.Load() != nil {
		return false
	}
	if p.f == nil || !slices.Equal(p.fds, fds) {
		if err := p.open(fds); err != nil {
			return p.fail(err)
		}
	}
	// Armed for one event each (EPOLLONESHOT): once the sleep has ended,
	// the packets that follow reach neither the instance nor the
	// runtime's poller, which would otherwise be woken for every one of
	// them while the worker is busy.
	for _, fd := range fds {
		ev := unix.EpollEvent{Events: unix.EPOLLIN | unix.EPOLLONESHOT, Fd: int32(fd)}
		if err := unix.EpollCtl(p.ep, unix.EPOLL_CTL_MOD, fd, &ev); err != nil {
			return p.fail(fmt.Errorf("re-arming descriptor %d: %w", fd, err))
		}
	}
	if err := p.f.SetReadDeadline(time.Now().Add(d)); err != nil {
		return p.fail(err)
	}
	p.rc.Read(p.ready) // ends at the deadline with ErrDeadlineExceeded
	p.parked.Add(1)
	return true
}

// fail gives up the poller for good, keeping why, and returns false.
func (p *longSleeper) fail(err error) bool {
	why := "runtime poller: " + err.Error()
	p.why.Store(&why)
	return false
}

// fallback is why the worker sleeps in ppoll, "" while it may park.
func (p *longSleeper) fallback() string {
	if why := p.why.Load(); why != nil {
		return *why
	}
	return ""
}

// open makes the epoll instance for fds (closing any earlier one).
func (p *longSleeper) open(fds []int) error {
	p.close()
	ep, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return fmt.Errorf("epoll_create1: %w", err)
	}
	for _, fd := range fds {
		ev := unix.EpollEvent{Events: unix.EPOLLIN | unix.EPOLLONESHOT, Fd: int32(fd)}
		if err := unix.EpollCtl(ep, unix.EPOLL_CTL_ADD, fd, &ev); err != nil && err != unix.EEXIST {
			unix.Close(ep)
			return fmt.Errorf("watching descriptor %d: %w", fd, err)
		}
	}
	// Non-blocking before NewFile, which then registers it with the
	// runtime's poller (and deadlines work).
	if err := unix.SetNonblock(ep, true); err != nil {
		unix.Close(ep)
		return err
	}
	f := os.NewFile(uintptr(ep), "worker sleep")
	rc, err := f.SyscallConn()
	if err != nil {
		f.Close()
		return err
	}
	p.f, p.rc, p.ep, p.fds = f, rc, ep, append(p.fds[:0], fds...)
	if p.ready == nil {
		p.ready = p.drain
	}
	return nil
}

// drain reports whether a descriptor is ready, taking the epoll instance's
// ready list, so that the next packet makes it readable anew and the
// runtime's poller, which watches it edge-triggered, is told.
func (p *longSleeper) drain(fd uintptr) bool {
	n, err := unix.EpollWait(int(fd), p.evs[:], 0)
	return n > 0 || (err != nil && err != unix.EINTR)
}

// close releases the epoll instance; the next long sleep makes another.
func (p *longSleeper) close() {
	if p.f != nil {
		p.f.Close()
		p.f, p.rc = nil, nil
	}
}
