package pipeline

import "golang.org/x/sys/unix"

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
