package elements

import (
	"testing"

	"github.com/junction-dataplane/junction/packet"
)

type passEl struct{ out *Output }

func (e *passEl) Push(_ int, b *packet.Batch) { e.out.Push(b) }

type sinkEl struct{}

func (sinkEl) Push(int, *packet.Batch) {}

// BenchmarkPushChain is the accounting's own cost: a batch of 64 through
// ten pass-through elements, one clock round per batch (as a worker does
// per poll), untimed rounds only so that the clock reads do not dominate.
// It measures what tracing adds while disarmed (benchmarks/control.md):
// run it on the code before and after.
func BenchmarkPushChain(b *testing.B) {
	const depth = 10
	c := NewClock(1 << 30) // never timed
	setupTracer(c)
	outs := make([]*Output, depth)
	for i := range outs {
		outs[i] = NewOutput(c)
	}
	for i := 0; i < depth-1; i++ {
		outs[i].Connect(&passEl{outs[i+1]}, 0, &Stats{})
	}
	outs[depth-1].Connect(sinkEl{}, 0, &Stats{})
	pool := packet.NewPool(64)
	pkts := make([]*packet.Packet, 64)
	for i := range pkts {
		pkts[i] = pool.Get()
	}
	batch := packet.NewBatch(64)
	b.ReportAllocs()
	for b.Loop() {
		c.Round(0)
		batch.Pkts = append(batch.Pkts[:0], pkts...)
		outs[0].Push(batch)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*64*depth), "ns/pkt/element")
}
