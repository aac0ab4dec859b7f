package fastpath

import (
	"testing"
	"time"
)

// BenchmarkRouteHit6 is BenchmarkRouteHit for an IPv6 UDP frame (checks
// 1-11 of the IPv6 rules, routes6, neighbors6, fp_egress, hop limit,
// MACs, counters, redirect), no flow installed; chunks of 200 runs on a
// fresh frame, before hop limit 255 runs out.
func BenchmarkRouteHit6(b *testing.B) {
	f := newFixture(b)
	f.route("2001:db8:8::/48", Route{Ifindex: 9})
	f.neigh6(9, "2001:db8:8::5", ourMAC, peerMAC, 1500, time.Hour)
	in := v6{src: "2001:db8:1::2", dst: "2001:db8:8::5", next: protoUDP, hop: 255, sport: 5000, dport: 53, payload: 18}.frame()
	f.wantForwarded6("benchmark frame", in, ourMAC, peerMAC, 1)
	const chunk = 200
	var total time.Duration
	b.ResetTimer()
	for done := 0; done < b.N; done += chunk {
		n := min(chunk, b.N-done)
		ret, d, err := f.p.prog.Benchmark(append([]byte(nil), in...), n, nil)
		if err != nil || ret != xdpRedirect {
			b.Fatalf("ret %d, err %v", ret, err)
		}
		total += d * time.Duration(n)
	}
	b.ReportMetric(float64(total.Nanoseconds())/float64(b.N), "ns/run")
}

// BenchmarkFlowHit6 is BenchmarkFlowHit for an IPv6 UDP flow with no
// hop-limit decrement (so that the repeated runs on one buffer never
// expire it), its own MACs.
func BenchmarkFlowHit6(b *testing.B) {
	f := newFixture(b)
	p := v6{src: "2001:db8:1::2", dst: "2001:db8:8::5", next: protoUDP, hop: 64, sport: 40000, dport: 53, payload: 18}
	f.setFlow(p.key(loIfindex), FlowAction{Ifindex: 9, EthDst: ourMAC, EthSrc: peerMAC, MTU: 1500})
	in := p.frame()
	f.wantForwarded6("benchmark frame", in, ourMAC, peerMAC, 0)
	b.ResetTimer()
	ret, d, err := f.p.prog.Benchmark(in, b.N, b.ResetTimer)
	if err != nil || ret != xdpRedirect {
		b.Fatalf("ret %d, err %v", ret, err)
	}
	b.ReportMetric(float64(d.Nanoseconds()), "ns/run")
}
