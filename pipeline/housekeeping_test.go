package pipeline

import (
	"os"
	"runtime"
	"slices"
	"strconv"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// threadAffinities maps each thread of the process to its CPU set.
func threadAffinities(t *testing.T) map[int]unix.CPUSet {
	t.Helper()
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		t.Skip(err)
	}
	m := map[int]unix.CPUSet{}
	for _, e := range tasks {
		tid, _ := strconv.Atoi(e.Name())
		var s unix.CPUSet
		if unix.SchedGetaffinity(tid, &s) == nil {
			m[tid] = s
		}
	}
	return m
}

// TestHousekeep: with a worker pinned to one CPU and others free, every
// other thread of the process is confined to the free CPUs, and the
// scheduler has a P beyond the workers'.
func TestHousekeep(t *testing.T) {
	if len(processCPUs) < 2 {
		t.Skip("needs 2 CPUs")
	}
	procs := runtime.GOMAXPROCS(0)
	defer func() {
		// Give every thread the process's CPUs back for the other tests.
		var all unix.CPUSet
		for _, c := range processCPUs {
			all.Set(c)
		}
		for tid := range threadAffinities(t) {
			unix.SchedSetaffinity(tid, &all)
		}
		runtime.GOMAXPROCS(procs)
	}()
	resetRtCounters()
	workerCPU := processCPUs[0]
	c := rtGraph{workers: 1, queues: 1, failOn: -1}
	r, err := Start(c.graph(t), Options{CPUs: []int{workerCPU}})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { r.Stop(); waitRouter(t, r, 5*time.Second) }()
	runtime.GOMAXPROCS(1) // as if there were one CPU per worker
	h, err := r.Housekeep()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(h.WorkerCPUs, []int{workerCPU}) || !slices.Equal(h.CPUs, processCPUs[1:]) || h.Threads == 0 {
		t.Fatalf("housekeeping %+v, process CPUs %v", h, processCPUs)
	}
	if runtime.GOMAXPROCS(0) < 2 || h.Procs != runtime.GOMAXPROCS(0) {
		t.Errorf("GOMAXPROCS %d, Procs %d: want ≥ workers + 1", runtime.GOMAXPROCS(0), h.Procs)
	}
	workers := 0
	for tid, s := range threadAffinities(t) {
		switch {
		case s.Count() == 1 && s.IsSet(workerCPU):
			workers++
		case s.IsSet(workerCPU):
			t.Errorf("thread %d may still run on the worker's CPU %d", tid, workerCPU)
		}
	}
	// At least the worker (a worker thread of an earlier test's router may
	// still be exiting).
	if workers < 1 {
		t.Errorf("no thread pinned to the worker's CPU")
	}
	// Closing the router gives every thread the process's CPUs back.
	r.Stop()
	waitRouter(t, r, 5*time.Second)
	for tid, s := range threadAffinities(t) {
		if s.Count() != len(processCPUs) {
			t.Errorf("after close, thread %d may run on %d CPUs, want %d", tid, s.Count(), len(processCPUs))
		}
	}
}

// TestHousekeepEveryCPU: when every CPU has a worker nothing is confined.
func TestHousekeepEveryCPU(t *testing.T) {
	if len(processCPUs) == 0 {
		t.Skip("pinning is not supported here")
	}
	procs := runtime.GOMAXPROCS(0)
	defer runtime.GOMAXPROCS(procs)
	resetRtCounters()
	c := rtGraph{workers: len(processCPUs), queues: len(processCPUs), failOn: -1}
	r, err := Start(c.graph(t), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { r.Stop(); waitRouter(t, r, 5*time.Second) }()
	h, err := r.Housekeep()
	if err != nil {
		t.Fatal(err)
	}
	if len(h.CPUs) != 0 || h.Threads != 0 || len(h.WorkerCPUs) != len(processCPUs) {
		t.Errorf("housekeeping %+v with a worker on each of %v", h, processCPUs)
	}
}
