package vlan

import (
	"testing"

	"github.com/junction-dataplane/junction/elements"
	"github.com/junction-dataplane/junction/elements/elementtest"
	_ "github.com/junction-dataplane/junction/elements/standard" // Counter, BenchmarkRefill's baseline
	"github.com/junction-dataplane/junction/packet"
)

// benchFrames: 64 frames of 64..1450 bytes tagged with VLAN 10.
func benchFrames() [][]byte {
	var fs [][]byte
	for i := 0; i < 64; i++ {
		fs = append(fs, frame(46+i*22, [2]uint16{0x8100, 10}))
	}
	return fs
}

// nullSink keeps and frees nothing: the benchmark's packets go round.
type nullSink struct{}

func (nullSink) Push(int, *packet.Batch) {}

// BenchmarkDecapEncap times a VLANDecap and a VLANEncap on the same batch
// of 64 tagged frames, so that each iteration leaves them as it found them
// (tagged, at the same headroom): no refill is timed. ns/pkt is the cost
// of both, one decap and one encap per packet.
func BenchmarkDecapEncap(b *testing.B) {
	dec := elementtest.New(b, "VLANDecap", nil, nil)
	enc := elementtest.New(b, "VLANEncap", &EncapConfig{VLAN: 10}, nil)
	dec.Outputs[0].Connect(enc.Element, 0, &elements.Stats{})
	enc.Outputs[0].Connect(nullSink{}, 0, &elements.Stats{})
	batch := packet.NewBatch(64)
	var pkts []*packet.Packet
	for _, f := range benchFrames() {
		pkts = append(pkts, dec.Packet(f))
	}
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		batch.Pkts = append(batch.Pkts[:0], pkts...)
		dec.Element.Push(0, batch)
		n += len(pkts)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(n), "ns/pkt")
	if enc.Counter("truncated")+dec.Counter("untagged") != 0 {
		b.Fatal("drops in the loop")
	}
}

// BenchmarkDecap and BenchmarkEncap time one element each with the
// harness's refill (a copy of each frame into its buffer, as a driver's
// receive does) included; BenchmarkRefill is that refill alone, through
// a Counter.
func BenchmarkDecap(b *testing.B) {
	elementtest.New(b, "VLANDecap", nil, &elementtest.Options{Sink: true}).Bench(b, benchFrames()...)
}

func BenchmarkEncap(b *testing.B) {
	elementtest.New(b, "VLANEncap", &EncapConfig{VLAN: 10}, &elementtest.Options{Sink: true}).Bench(b, benchFrames()...)
}

func BenchmarkRefill(b *testing.B) {
	elementtest.New(b, "Counter", nil, &elementtest.Options{Sink: true}).Bench(b, benchFrames()...)
}
