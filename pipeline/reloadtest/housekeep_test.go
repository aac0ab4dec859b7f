package reloadtest

import (
	"os"
	"slices"
	"strconv"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/junction-dataplane/junction/pipeline"
)

// TestWorkersChangeRehousekeeps: a reload that changes the number of
// workers confines the other threads again, as Housekeep did at start:
// off an added worker's CPU, onto a removed one's.
func TestWorkersChangeRehousekeeps(t *testing.T) {
	cpus := pipeline.ProcessCPUs()
	if len(cpus) < 2 {
		t.Skip("needs two CPUs")
	}
	graph := func(workers int) *pipeline.Graph {
		return genGraphW(t, workers, `flows = 64
rate  = 1000

[graph]
links = ["FromDevice(g, on) -> Discard"]`)
	}
	r, err := pipeline.Start(graph(1), pipeline.Options{CPUs: cpus})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		r.Stop()
		r.Wait()
	}()
	h, err := r.Housekeep()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(h.CPUs, cpus[1:]) {
		t.Fatalf("at start, housekeeping on %v; want %v", h.CPUs, cpus[1:])
	}
	// mayRun reports the threads other than the workers (one CPU each,
	// a worker's) that may run on cpu.
	mayRun := func(cpu int, workerCPUs []int) []int {
		tasks, err := os.ReadDir("/proc/self/task")
		if err != nil {
			t.Skip(err)
		}
		var tids []int
		for _, e := range tasks {
			tid, _ := strconv.Atoi(e.Name())
			var s unix.CPUSet
			if unix.SchedGetaffinity(tid, &s) != nil {
				continue
			}
			if s.Count() == 1 && slices.ContainsFunc(workerCPUs, s.IsSet) {
				continue
			}
			if s.IsSet(cpu) {
				tids = append(tids, tid)
			}
		}
		return tids
	}
	reload := func(workers int) *pipeline.WorkerChange {
		rep, err := r.ReloadGraph(graph(workers), false)
		if err != nil {
			t.Fatal(err)
		}
		if rep.WorkerChange == nil || rep.WorkerChange.Housekeeping == nil {
			t.Fatalf("reload to %d workers: no housekeeping in the report %+v", workers, rep.WorkerChange)
		}
		return rep.WorkerChange
	}
	// 1 → 2: CPU 1 has a worker now; the other threads leave it (on a
	// two-CPU machine they get every CPU back: each has a worker).
	wc := reload(2)
	if want := cpus[2:]; !slices.Equal(wc.Housekeeping.CPUs, want) {
		t.Errorf("after 1 → 2 workers, housekeeping on %v; want %v", wc.Housekeeping.CPUs, want)
	}
	if len(cpus) > 2 {
		if tids := mayRun(cpus[1], cpus[:2]); len(tids) > 0 {
			t.Errorf("after 1 → 2 workers, threads %v may run on worker 1's CPU %d", tids, cpus[1])
		}
	} else if tids := mayRun(cpus[0], cpus); len(tids) == 0 {
		t.Errorf("after 1 → 2 workers on %d CPUs, no other thread got worker 0's CPU %d back", len(cpus), cpus[0])
	}
	// 2 → 1: CPU 1 is free again; no other thread may run on worker
	// 0's CPU.
	time.Sleep(10 * time.Millisecond)
	wc = reload(1)
	if !slices.Equal(wc.Housekeeping.CPUs, cpus[1:]) || wc.Housekeeping.Threads == 0 {
		t.Errorf("after 2 → 1 workers, housekeeping %+v; want CPUs %v", wc.Housekeeping, cpus[1:])
	}
	if tids := mayRun(cpus[0], cpus[:1]); len(tids) > 0 {
		t.Errorf("after 2 → 1 workers, threads %v may run on worker 0's CPU %d", tids, cpus[0])
	}
}
