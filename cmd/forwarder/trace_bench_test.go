package main

import (
	"testing"

	"github.com/junction-dataplane/junction/elements"
	"github.com/junction-dataplane/junction/elements/classifier"
)

// What tracing costs the default graph on one worker: disarmed (the state
// of a forwarder nobody traces), and armed with a filter no packet
// matches (every packet leaving a source is tested against it). Compare
// "disarmed" with BenchmarkDefaultGraph built from the code before
// tracing existed (benchmarks/control.md).
func BenchmarkDefaultGraphTrace(b *testing.B) {
	for _, mode := range []string{"disarmed", "armed-nomatch"} {
		b.Run(mode, func(b *testing.B) {
			r := buildDefault(b)
			if mode == "armed-nomatch" {
				f, err := classifier.ParseFilter("tcp")
				if err != nil {
					b.Fatal(err)
				}
				s := elements.NewTraceSession(1)
				s.Trace, s.Match = true, f.MatchPacket
				if err := r.Tracer().Arm(s); err != nil {
					b.Fatal(err)
				}
				defer r.Tracer().Disarm(s)
			}
			b.ReportAllocs()
			pkts := 0
			for b.Loop() {
				pkts += r.Round(0)
			}
			ns := float64(b.Elapsed().Nanoseconds())
			b.ReportMetric(ns/float64(pkts), "ns/pkt")
			b.ReportMetric(float64(pkts)/ns*1e3, "Mpps")
		})
	}
}

// TestTraceAllocs: neither a disarmed tracer nor an armed one that matches
// nothing allocates on the workers.
func TestTraceAllocs(t *testing.T) {
	r := buildDefault(t)
	for range 10 {
		r.Round(0)
	}
	if a := testing.AllocsPerRun(200, func() { r.Round(0) }); a != 0 {
		t.Errorf("disarmed: %v allocations per round", a)
	}
	f, _ := classifier.ParseFilter("tcp")
	s := elements.NewTraceSession(1)
	s.Trace, s.Match = true, f.MatchPacket
	if err := r.Tracer().Arm(s); err != nil {
		t.Fatal(err)
	}
	if a := testing.AllocsPerRun(200, func() { r.Round(0) }); a != 0 {
		t.Errorf("armed, matching nothing: %v allocations per round", a)
	}
	if s.Left() != 1 {
		t.Errorf("a filter matching nothing took %d packets", 1-s.Left())
	}
	r.Tracer().Disarm(s)
}
