package cputime

import (
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Thread is the calling thread's CPU time (CLOCK_THREAD_CPUTIME_ID), 0 if
// it cannot be read. The caller's goroutine must be locked to its thread
// (runtime.LockOSThread) for two readings to be about one thread.
//
// It is a raw system call (there is no vDSO for this clock; its cost is in
// benchmarks/l3.md, "A thread's CPU time"). Raw, because the call
// is short and never blocks: the runtime's syscall bookkeeping, which
// lets another thread take the caller's P, buys nothing here.
func Thread() time.Duration {
	var ts unix.Timespec
	_, _, errno := unix.RawSyscall(unix.SYS_CLOCK_GETTIME, unix.CLOCK_THREAD_CPUTIME_ID, uintptr(unsafe.Pointer(&ts)), 0)
	if errno != 0 {
		return 0
	}
	return time.Duration(ts.Nano())
}
