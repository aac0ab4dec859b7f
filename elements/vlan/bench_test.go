package vlan

import (
	"encoding/binary"
	"runtime"
	"testing"

	"github.com/junction-dataplane/junction/elements"
	"github.com/junction-dataplane/junction/elements/elementtest"
	"github.com/junction-dataplane/junction/internal/cputime"
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
	benchPush(b, dec, benchFrames(), nil)
	noDrops(b, enc)
}

// BenchmarkDecap and BenchmarkEncap time one element each on a batch of
// 64 frames that is put back between iterations (Decap: the frames'
// start moved back 4 bytes and the tag rewritten; Encap: the start moved
// forward 4 bytes, where the untagged frame's EtherType still is), that
// is a slice assignment (and Decap a 4-byte store) per packet besides the
// element's own work. cpu-ns/pkt is the benchmark thread's CPU time: on
// a loaded machine it may run a fraction of the wall time.
func BenchmarkDecap(b *testing.B) {
	h := elementtest.New(b, "VLANDecap", nil, nil)
	h.Outputs[0].Connect(nullSink{}, 0, &elements.Stats{})
	benchPush(b, h, benchFrames(), func(p *packet.Packet, d []byte) {
		binary.BigEndian.PutUint32(d[12:], 0x8100_000a)
		p.Data = d
	})
}

func BenchmarkEncap(b *testing.B) {
	h := elementtest.New(b, "VLANEncap", &EncapConfig{VLAN: 10}, nil)
	var fs [][]byte
	for i := 0; i < 64; i++ {
		fs = append(fs, frame(46+i*22))
	}
	h.Outputs[0].Connect(nullSink{}, 0, &elements.Stats{})
	benchPush(b, h, fs, func(p *packet.Packet, d []byte) { p.Data = d })
}

// benchPush pushes the same packets through h's element (its outputs
// connected by the caller), calling restore, if any, on each (with its
// frame as it was) after every push; it reports ns/pkt and cpu-ns/pkt
// and fails on any drop.
func benchPush(b *testing.B, h *elementtest.Harness, frames [][]byte, restore func(*packet.Packet, []byte)) {
	batch := packet.NewBatch(len(frames))
	var pkts []*packet.Packet
	var data [][]byte
	for _, f := range frames {
		p := h.Packet(f)
		pkts = append(pkts, p)
		data = append(data, p.Data)
	}
	b.ReportAllocs()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	cpu0 := cputime.Thread()
	n := 0
	for b.Loop() {
		batch.Pkts = append(batch.Pkts[:0], pkts...)
		h.Element.Push(0, batch)
		if restore != nil {
			for i, p := range pkts {
				restore(p, data[i])
			}
		}
		n += len(pkts)
	}
	cpu := cputime.Thread() - cpu0
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(n), "ns/pkt")
	b.ReportMetric(float64(cpu.Nanoseconds())/float64(n), "cpu-ns/pkt")
	noDrops(b, h)
}

// noDrops fails b if h's element counted anything (every counter of
// these elements is a drop).
func noDrops(b *testing.B, h *elementtest.Harness) {
	for _, c := range h.Stats.Counters() {
		if c.Value != 0 {
			b.Fatalf("drops in the loop: %s %d", c.Name, c.Value)
		}
	}
}
