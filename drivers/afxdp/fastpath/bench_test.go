package fastpath

import (
	"testing"
	"time"
)

// BenchmarkRouteHit: the program's cost for a routed frame (checks 1-11,
// the LPM trie, neighbour and fp_egress lookups, TTL and checksum patch,
// MACs, counters, redirect), by BPF_PROG_TEST_RUN's own timing, with no
// flow installed (the flow path is skipped, as on a router that
// offloads none). It also reports the loaded program's size.
func BenchmarkRouteHit(b *testing.B) {
	f := newFixture(b)
	f.route("10.8.0.0/16", Route{Ifindex: 9})
	f.neigh(9, "10.8.0.5", ourMAC, peerMAC, time.Hour)
	in := frame("10.1.0.2", "10.8.0.5", 255, 26)
	f.wantForwarded("benchmark frame", in, ourMAC, peerMAC)
	benchProgram(b, f, in, xdpRedirect)
}

// benchProgram runs f's program on in b.N times, each run to return
// want, and reports its time per run (BPF_PROG_TEST_RUN's timing) and
// the loaded program's size. BPF_PROG_TEST_RUN repeats the program on
// the same buffer, which a forwarding program rewrites: each call runs
// at most 200 repetitions on a fresh frame, before TTL 255 runs out (the
// caller's neighbour MACs are the frame's own, so that its destination
// stays ours).
func benchProgram(b *testing.B, f *fixture, in []byte, want uint32) {
	const chunk = 200
	var total time.Duration
	b.ResetTimer()
	for done := 0; done < b.N; done += chunk {
		n := min(chunk, b.N-done)
		ret, d, err := f.p.prog.Benchmark(append([]byte(nil), in...), n, nil)
		if err != nil || ret != want {
			b.Fatalf("ret %d (want %d), err %v", ret, want, err)
		}
		total += d * time.Duration(n)
	}
	b.ReportMetric(float64(total.Nanoseconds())/float64(b.N), "ns/run")
	if info, err := f.p.prog.Info(); err == nil {
		if n, err := info.TranslatedSize(); err == nil {
			b.ReportMetric(float64(n/8), "insns")
		}
		if n, err := info.JitedSize(); err == nil {
			b.ReportMetric(float64(n), "jited-bytes")
		}
	}
}
