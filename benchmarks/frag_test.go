package benchmarks

import (
	"runtime"
	"strings"
	"testing"

	"github.com/junction-dataplane/junction/pipeline"
)

// BenchmarkNATGraphReassembler is BenchmarkNATGraph's slow path (10k
// flows, 64-byte UDP, none of it fragmented) without reassemblers, with
// an IPReassembler before Conntrack, and with an IP6Reassembler before
// that, as nat-gateway.toml has both on the way to Conntrack: what the
// fragment paths cost the traffic that is not fragmented. Compare them
// with benchstat -col /reasm (cpu-ns/pkt: the worker thread's CPU time
// per packet, generator included).
func BenchmarkNATGraphReassembler(b *testing.B) {
	for _, with := range []string{"", "IPReassembler -> ", "IP6Reassembler -> IPReassembler -> "} {
		name := strings.ReplaceAll(strings.TrimSuffix(with, " -> "), " -> ", "+")
		if name == "" {
			name = "none"
		}
		b.Run("reasm="+name, func(b *testing.B) {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			cfg := string(natGraph(b, 10_000, false, 0))
			if with != "" {
				cfg = replaceOnce(b, "bench-nat.toml", cfg, `"cls[0] -> ct -> `, `"cls[0] -> `+with+`ct -> `)
			}
			r := buildStepped(b, "bench-nat.toml", []byte(cfg), pipeline.Options{})
			defer r.Close()
			for warm := 0; warm < 60_000; {
				warm += r.Round(0)
			}
			pkts, cpu := stepRounds(b, r)
			// The worker thread's own CPU time: what the graph costs,
			// without the time the shared machine took the CPU away.
			b.ReportMetric(float64(cpu.Nanoseconds())/float64(pkts), "cpu-ns/pkt")
		})
	}
}
