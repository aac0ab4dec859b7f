package benchmarks

import (
	"os"
	"testing"
	"time"

	"github.com/junction-dataplane/junction/internal/cputime"
	"github.com/junction-dataplane/junction/pipeline"
)

// buildL3 builds configs/bench-l3.toml on one worker without starting it,
// so that a test or benchmark can step its rounds on its own goroutine.
func buildL3(t testing.TB, timingEvery int) *pipeline.Router {
	src, err := os.ReadFile("../configs/bench-l3.toml")
	if err != nil {
		t.Fatal(err)
	}
	r := buildStepped(t, "bench-l3.toml", src, pipeline.Options{TimingEvery: timingEvery})
	t.Cleanup(func() { r.Close() })
	return r
}

// buildStepped builds the graph src (named name in errors) on one
// unpinned worker without starting it, for a test or benchmark to step
// its rounds (Round(0)) on its own goroutine; o gives any other options.
// The caller closes it (a benchmark before its function returns: the
// next run of the function builds the graph again).
func buildStepped(t testing.TB, name string, src []byte, o pipeline.Options) *pipeline.Router {
	t.Helper()
	g, err := pipeline.Parse(name, src)
	if err != nil {
		t.Fatal(err)
	}
	o.Workers, o.NoPin = 1, true
	r, err := pipeline.Build(g, o)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestL3GraphAllocs: a whole round of the L3 graph — receive a batch, run
// it through every element, transmit it — allocates nothing.
func TestL3GraphAllocs(t *testing.T) {
	for _, every := range []int{1, 8} {
		// warm up: the gen pools are made on first receive
		if allocs := roundAllocs(t, buildL3(t, every), 10, 1000); allocs != 0 {
			t.Errorf("timing every %d rounds: %v allocations per round", every, allocs)
		}
	}
}

// roundAllocs steps worker 0 of r warm rounds, then returns the average
// allocations of a round over runs more; an empty round fails the test.
func roundAllocs(t *testing.T, r *pipeline.Router, warm, runs int) float64 {
	t.Helper()
	for range warm {
		r.Round(0)
	}
	return testing.AllocsPerRun(runs, func() {
		if r.Round(0) == 0 {
			t.Fatal("empty round")
		}
	})
}

// BenchmarkL3Round steps the L3 graph on one worker with element timing in
// every round, in one round of eight (the default), and practically never,
// to show what the accounting costs. ns/pkt includes the generator.
func BenchmarkL3Round(b *testing.B) {
	for _, c := range []struct {
		name  string
		every int
	}{{"timing=every", 1}, {"timing=1in8", 8}, {"timing=off", 1 << 30}} {
		b.Run(c.name, func(b *testing.B) { benchRounds(b, buildL3(b, c.every)) })
	}
}

// benchRounds steps r's rounds on worker 0, after a warm-up (the gen pools
// are made on first receive), and reports ns/pkt and Mpps.
func benchRounds(b *testing.B, r *pipeline.Router) {
	for range 10 {
		r.Round(0)
	}
	pkts, _ := stepRounds(b, r)
	b.ReportMetric(float64(pkts)/float64(b.Elapsed().Nanoseconds())*1e3, "Mpps")
}

// measureRounds runs worker 0's rounds for the benchmark's loop, reports
// ns/pkt, Mpps and, from the thread's CPU time (what a shared machine
// inflates least), Mpps-cpu, and returns the packets the rounds moved.
func measureRounds(b *testing.B, r *pipeline.Router) int {
	pkts, cpu := stepRounds(b, r)
	b.ReportMetric(float64(pkts)/float64(b.Elapsed().Nanoseconds())*1e3, "Mpps")
	if cpu > 0 {
		b.ReportMetric(float64(pkts)/cpu.Seconds()/1e6, "Mpps-cpu")
	}
	return pkts
}

// stepRounds is the timed loop of the benchmarks that step a graph: it
// runs worker 0's rounds for the benchmark's loop with allocations
// reported, reports ns/pkt (wall time), and returns the packets the rounds
// moved and the CPU time the calling thread spent on them (what a shared
// machine inflates least; the caller locks the thread for it to be the
// rounds' alone).
func stepRounds(b *testing.B, r *pipeline.Router) (pkts int, cpu time.Duration) {
	b.ReportAllocs()
	cpu0 := cputime.Thread()
	for b.Loop() {
		pkts += r.Round(0)
	}
	cpu = cputime.Thread() - cpu0
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(pkts), "ns/pkt")
	return pkts, cpu
}
