package fastpath

import (
	"net/netip"
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

// BenchmarkRouteHitFull is BenchmarkRouteHit with a full table: 2^20
// /24s (and the frame's own /16 under them), so that the route look-up
// is that of a router holding an Internet table.
func BenchmarkRouteHitFull(b *testing.B) {
	f := newFixtureSized(b, 1<<21, 64)
	f.route("10.8.0.0/16", Route{Ifindex: 9})
	const n = 1 << 20
	cs := make([]RouteChange, 0, 4096)
	errs := make([]error, 4096)
	for i := range n {
		a := uint32(0x0b000000) + uint32(i)<<8 // 11.0.0.0 on
		cs = append(cs, RouteChange{Prefix: netip.PrefixFrom(netip.AddrFrom4([4]byte{byte(a >> 24), byte(a >> 16), byte(a >> 8), 0}), 24),
			Route: Route{Ifindex: 9, Gateway: netip.AddrFrom4([4]byte{10, 8, 0, byte(1 + i%4)})}})
		if len(cs) == cap(cs) {
			f.t.SetRoutes(cs, errs)
			if errs[0] != nil {
				b.Fatal(errs[0])
			}
			cs = cs[:0]
		}
	}
	f.route("10.8.0.0/24", Route{Ifindex: 9})
	f.neigh(9, "10.8.0.5", ourMAC, peerMAC, time.Hour)
	in := frame("10.1.0.2", "10.8.0.5", 255, 26)
	f.wantForwarded("benchmark frame", in, ourMAC, peerMAC)
	benchProgram(b, f, in, xdpRedirect)
}
