package pipeline

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// processCPUs is the affinity the process started with, read before any
// worker thread narrowed its own.
var processCPUs = allowedCPUs()

// allowedCPUs lists the CPUs this process may run on (its affinity mask,
// which a container or taskset may restrict), in order. Worker w is pinned
// to allowedCPUs()[w mod len].
func allowedCPUs() []int {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		return nil
	}
	var cpus []int
	for c, want := 0, set.Count(); len(cpus) < want && c < 1<<16; c++ {
		if set.IsSet(c) {
			cpus = append(cpus, c)
		}
	}
	return cpus
}

// pinThread pins the calling OS thread (the caller has locked its goroutine
// to it) to one CPU.
func pinThread(cpu int) error {
	var set unix.CPUSet
	set.Zero()
	set.Set(cpu)
	return unix.SchedSetaffinity(0, &set)
}

// threadCPUNanos is the calling thread's CPU time: what the kernel gave it,
// which on a shared CPU is less than the wall time it was busy. It is a raw
// system call (1.42–1.47 µs here, no vDSO for this clock: `go test
// ./pipeline -run xxx -bench ThreadCPUNanos -count 3). Raw, because the
// call is short and never blocks: the runtime's syscall bookkeeping, which
// lets another thread take the worker's P, buys nothing here.
func threadCPUNanos() uint64 {
	var ts unix.Timespec
	_, _, errno := unix.RawSyscall(unix.SYS_CLOCK_GETTIME, unix.CLOCK_THREAD_CPUTIME_ID, uintptr(unsafe.Pointer(&ts)), 0)
	if errno != 0 {
		return 0
	}
	return uint64(ts.Nano())
}
