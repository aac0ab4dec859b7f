package pipeline

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"

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

// threadID is the calling OS thread's id.
func threadID() int { return unix.Gettid() }

// confineThreads sets the affinity of every thread of the process to cpus,
// except the workers' threads (workerTIDs, pinned before this runs: told
// apart by id, as a housekeeping thread confined to one CPU looks like a
// worker by its affinity). Threads that exit meanwhile are skipped.
func confineThreads(cpus, workerTIDs []int) (int, error) {
	var set unix.CPUSet
	set.Zero()
	for _, c := range cpus {
		set.Set(c)
	}
	// A thread the runtime starts while a pass runs is cloned from a
	// thread the pass may not have reached yet, and inherits its old
	// mask: passes go on until one finds every thread confined (a thread
	// started after that is cloned from a confined one, or from the
	// confined template thread for a locked one).
	done := map[int]bool{}
	for pass := 0; pass < 8; pass++ {
		tasks, err := os.ReadDir("/proc/self/task")
		if err != nil {
			return len(done), fmt.Errorf("housekeeping threads: %w", err)
		}
		changed := false
		for _, t := range tasks {
			tid, err := strconv.Atoi(t.Name())
			if err != nil || slices.Contains(workerTIDs, tid) {
				continue // not a thread, or a worker
			}
			if done[tid] {
				var cur unix.CPUSet
				if unix.SchedGetaffinity(tid, &cur) != nil || cur == set {
					continue
				}
			}
			if err := unix.SchedSetaffinity(tid, &set); err != nil {
				if errors.Is(err, unix.ESRCH) {
					continue
				}
				return len(done), fmt.Errorf("housekeeping thread %d: %w", tid, err)
			}
			done[tid], changed = true, true
		}
		if !changed {
			break
		}
	}
	return len(done), nil
}
