package main

import (
	"testing"

	"github.com/junction-dataplane/junction/pipeline"
)

// buildDefault builds the embedded default graph on one worker without
// starting it.
func buildDefault(tb testing.TB) *pipeline.Router {
	tb.Helper()
	g, err := pipeline.Parse(defaultGraphName, defaultGraph)
	if err != nil {
		tb.Fatal(err)
	}
	r, err := pipeline.Build(g, pipeline.Options{Workers: 1})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		if err := r.Close(); err != nil {
			tb.Error(err)
		}
	})
	return r
}

// TestDefaultGraphAllocs: a round of the whole L3 graph (gen → Classifier →
// CheckIPHeader → DecTTL → IPLookup → EtherRewrite → ToDevice → gen sink)
// allocates nothing.
func TestDefaultGraphAllocs(t *testing.T) {
	r := buildDefault(t)
	for range 10 { // warm up (the gen pool is made on first receive)
		r.Round(0)
	}
	allocs := testing.AllocsPerRun(500, func() {
		if r.Round(0) == 0 {
			t.Fatal("empty round")
		}
	})
	if allocs != 0 {
		t.Errorf("%v allocations per round of the default graph", allocs)
	}
}

// BenchmarkDefaultGraph runs the default graph's rounds on one worker (the
// generator's cost included) and reports ns/packet and Mpps.
func BenchmarkDefaultGraph(b *testing.B) {
	r := buildDefault(b)
	b.ReportAllocs()
	pkts := 0
	for b.Loop() {
		pkts += r.Round(0)
	}
	ns := float64(b.Elapsed().Nanoseconds())
	b.ReportMetric(ns/float64(pkts), "ns/pkt")
	b.ReportMetric(float64(pkts)/ns*1e3, "Mpps")
}
