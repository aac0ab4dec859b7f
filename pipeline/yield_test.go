//go:build linux

package pipeline

import (
	"runtime"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestYieldUnderContention: the idle backoff's yield rounds must give the
// CPU away without being held off it afterwards. A thread pinned to one
// CPU with a busy loop pinned there too sleeps (as an idle worker does
// in ppoll) and then makes an idle period's yield rounds, again and again
// for two seconds. With sched_yield(2) as the yield, Linux's EEVDF
// scheduler pushed the yielding thread's deadline one slice further per
// call, and one idle period's rounds took 2 s or more (the thread got
// its CPU back only after the busy loop had run through the debt); with
// a sleep they take tens of milliseconds. The median period is what is
// checked: on a loaded machine any thread that wakes may now and then
// wait long for its CPU, and a single period says little.
func TestYieldUnderContention(t *testing.T) {
	if testing.Short() {
		t.Skip("takes two seconds")
	}
	cpus := allowedCPUs()
	if len(cpus) == 0 {
		t.Skip("no CPU affinity")
	}
	cpu := cpus[0]
	// The busy loop and the measuring goroutine each hold a P.
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(max(3, runtime.GOMAXPROCS(0))))

	var stop atomic.Bool
	hogUp := make(chan error, 1)
	hogDone := make(chan struct{})
	go func() {
		// Locked and never unlocked: the thread, pinned, ends with
		// the goroutine.
		defer close(hogDone)
		runtime.LockOSThread()
		hogUp <- pinThread(cpu)
		for !stop.Load() {
		}
	}()
	defer func() { stop.Store(true); <-hogDone }()
	if err := <-hogUp; err != nil {
		t.Skipf("pinning to CPU %d: %v", cpu, err)
	}

	type result struct {
		periods []time.Duration // each idle period's yield rounds
		worst   time.Duration   // the longest single round
		err     error
	}
	done := make(chan result, 1)
	go func() {
		runtime.LockOSThread()
		setTimerSlack() // as a worker's thread
		if err := pinThread(cpu); err != nil {
			done <- result{err: err}
			return
		}
		var r result
		sleep := idleSleep
		nap := unix.NsecToTimespec(int64(2 * time.Millisecond))
		for end := time.Now().Add(2 * time.Second); time.Now().Before(end); {
			unix.Nanosleep(&nap, nil)
			p0 := time.Now()
			for i := spinEmpty + 1; i < yieldEmpty; i++ {
				t0 := time.Now()
				yieldOrSleep(true, false, &sleep)
				r.worst = max(r.worst, time.Since(t0))
			}
			r.periods = append(r.periods, time.Since(p0))
		}
		done <- r
	}()
	r := <-done
	if r.err != nil {
		t.Skipf("pinning to CPU %d: %v", cpu, r.err)
	}
	slices.Sort(r.periods)
	med := r.periods[len(r.periods)/2]
	t.Logf("%d idle periods of %d yield rounds on CPU %d beside a busy loop: median %v, longest %v; longest single round %v",
		len(r.periods), yieldEmpty-spinEmpty-1, cpu, med, r.periods[len(r.periods)-1], r.worst)
	if med > 500*time.Millisecond {
		t.Errorf("an idle period's yield rounds beside a busy loop took %v (median of %d)", med, len(r.periods))
	}
}

// TestYieldCPUAllocs: the yield round allocates nothing.
func TestYieldCPUAllocs(t *testing.T) {
	if n := testing.AllocsPerRun(100, yieldCPU); n != 0 {
		t.Errorf("yieldCPU: %.1f allocations per call", n)
	}
}
