package pipeline

import "testing"

// BenchmarkThreadCPUNanos: what one reading of the worker thread's CPU
// time costs (a system call; the worker makes one every 64 ms).
func BenchmarkThreadCPUNanos(b *testing.B) {
	var sink uint64
	for b.Loop() {
		sink += threadCPUNanos()
	}
	if sink == 0 {
		b.Fatal("no CPU time read")
	}
}
