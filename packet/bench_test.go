package packet

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

func BenchmarkChecksum(b *testing.B) {
	r := rand.New(rand.NewPCG(31, 32))
	for _, n := range []int{20, 64, 1500} {
		buf := randBytes(r, n)
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			b.SetBytes(int64(n))
			b.ReportAllocs()
			for b.Loop() {
				sink16 = Checksum(buf)
			}
		})
	}
}

func BenchmarkUpdateChecksum16(b *testing.B) {
	b.ReportAllocs()
	hc, old := uint16(0x1234), uint16(0x4011)
	for b.Loop() {
		hc = UpdateChecksum16(hc, old, old-0x100)
		old -= 0x100
	}
	sink16 = hc
}

func BenchmarkUpdateChecksum32(b *testing.B) {
	b.ReportAllocs()
	hc, old := uint16(0x1234), uint32(0x0a000001)
	for b.Loop() {
		hc = UpdateChecksum32(hc, old, old+1)
		old++
	}
	sink16 = hc
}

func BenchmarkIPv4DecTTL(b *testing.B) {
	h := randIPv4Header(rand.New(rand.NewPCG(33, 34)))
	b.ReportAllocs()
	for b.Loop() {
		h.DecTTL() // wraps at 0; the checksum stays right
	}
	sinkB = h.ChecksumValid()
}

func BenchmarkIPv4ComputeChecksum(b *testing.B) {
	h := randIPv4Header(rand.New(rand.NewPCG(35, 36)))
	b.ReportAllocs()
	for b.Loop() {
		sink16 = h.ComputeChecksum()
	}
}

func BenchmarkPoolGetFree(b *testing.B) {
	p := NewPool(DefaultBatch)
	b.ReportAllocs()
	for b.Loop() {
		p.Get().Free()
	}
}

// BenchmarkBatchCycle is the per-batch buffer cost of a source and sink: 64
// Gets into a batch and FreeAll. It reports ns per packet.
func BenchmarkBatchCycle(b *testing.B) {
	p := NewPool(DefaultBatch)
	bt := NewBatch(DefaultBatch)
	b.ReportAllocs()
	for b.Loop() {
		for range DefaultBatch {
			bt.Add(p.Get())
		}
		bt.FreeAll()
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*DefaultBatch), "ns/pkt")
}

func BenchmarkClone(b *testing.B) {
	src, dst := NewPool(1), NewPool(1)
	pk := src.Get()
	pk.SetFrame(make([]byte, 64))
	b.ReportAllocs()
	for b.Loop() {
		pk.Clone(dst).Free()
	}
}

// BenchmarkFlowHash hashes a ring of 1024 distinct frames so that the result
// is not one branch-predicted constant.
func BenchmarkFlowHash(b *testing.B) {
	r := rand.New(rand.NewPCG(37, 38))
	const ring = DefaultBatch // one batch: the headers are in cache, as after a receive
	cases := []struct {
		name  string
		frame func() []byte
	}{
		{"ipv4-udp", func() []byte { return frame4(r.Uint32(), r.Uint32(), uint16(r.Uint32()), uint16(r.Uint32()), ProtoUDP) }},
		{"ipv6-tcp", func() []byte { return frame6(rand16(r), rand16(r), uint16(r.Uint32()), uint16(r.Uint32()), ProtoTCP) }},
		{"arp", func() []byte {
			f := randBytes(r, 60)
			Ethernet(f).SetType(EtherTypeARP)
			return f
		}},
	}
	for _, c := range cases {
		pool := NewPool(ring)
		pkts := make([]*Packet, ring)
		for i := range pkts {
			pkts[i] = pool.Get()
			pkts[i].SetFrame(c.frame())
		}
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			i := 0
			var acc uint32
			for b.Loop() {
				acc += FlowHash(pkts[i&(ring-1)])
				i++
			}
			sink32 = acc
		})
	}
	b.Run("FlowHashV4", func(b *testing.B) {
		b.ReportAllocs()
		var acc uint32
		src := uint32(0x0a000001)
		for b.Loop() {
			acc += FlowHashV4(src, 0xc0a80101, uint16(src), 443, ProtoTCP)
			src++
		}
		sink32 = acc
	})
}
