//go:build linux

package pipeline

import (
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestYieldUnderContention: the idle backoff's yield rounds must give the
// CPU away without being held off it afterwards. A thread pinned to one
// CPU with a busy loop pinned there too sleeps (as an idle worker does
// in ppoll) and then makes an idle period's yield rounds, again and again
// for two seconds; no one round may keep it off the CPU for long. With
// sched_yield(2) as the yield, Linux's EEVDF scheduler pushed the
// yielding thread's deadline one slice further per call, and single
// rounds took 0.5–2.8 s; a sleep's wake-up waits a few of the busy
// loop's slices at most.
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
		worst  time.Duration
		rounds int
		err    error
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
			for i := spinEmpty + 1; i < yieldEmpty; i++ {
				t0 := time.Now()
				yieldOrSleep(true, false, &sleep)
				r.worst = max(r.worst, time.Since(t0))
				r.rounds++
			}
		}
		done <- r
	}()
	r := <-done
	if r.err != nil {
		t.Skipf("pinning to CPU %d: %v", cpu, r.err)
	}
	t.Logf("%d yield rounds on CPU %d beside a busy loop: the longest took %v", r.rounds, cpu, r.worst)
	if r.worst > 400*time.Millisecond {
		t.Errorf("a yield round beside a busy loop kept the thread off its CPU for %v", r.worst)
	}
}

// TestYieldCPUAllocs: the yield round allocates nothing.
func TestYieldCPUAllocs(t *testing.T) {
	if n := testing.AllocsPerRun(100, yieldCPU); n != 0 {
		t.Errorf("yieldCPU: %.1f allocations per call", n)
	}
}
