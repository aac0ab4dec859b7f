package cputime

import (
	"runtime"
	"testing"
	"time"
)

// TestThreadCountsWork: a thread that spins for 20 ms of wall time has
// CPU time, and no more than the wall time that passed.
func TestThreadCountsWork(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("measured on Linux only")
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	c0, w0 := Thread(), time.Now()
	for time.Since(w0) < 20*time.Millisecond {
	}
	c, w := Thread()-c0, time.Since(w0)
	if c <= 0 || c > w+time.Millisecond {
		t.Fatalf("CPU time %v over %v of wall time", c, w)
	}
}

// BenchmarkThread: what one reading costs (a system call; a pipeline
// worker makes one every 64 ms).
func BenchmarkThread(b *testing.B) {
	var sink time.Duration
	for b.Loop() {
		sink += Thread()
	}
	if sink == 0 && runtime.GOOS == "linux" {
		b.Fatal("no CPU time read")
	}
}
