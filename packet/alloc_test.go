package packet

import (
	"testing"
)

// Sinks keep the compiler from discarding the work measured below.
var (
	sink16  uint16
	sink32  uint32
	sink64  uint64
	sinkInt int
	sinkB   bool
)

func TestAllocs(t *testing.T) {
	pool := NewPool(2 * DefaultBatch)
	other := NewPool(1)
	batch := NewBatch(DefaultBatch)
	frame := frame4(0x0a000001, 0x0a000002, 1234, 80, ProtoUDP)
	hdr := IPv4(append([]byte(nil), frame[EthernetLen:]...))
	hdr.SetChecksum(hdr.ComputeChecksum())
	big := make([]byte, 1500)
	pk := pool.Get()
	pk.SetFrame(frame)
	defer pk.Free()

	tests := []struct {
		name string
		f    func()
	}{
		{"Pool.Get+Free", func() { pool.Get().Free() }},
		{"Pool.GetRaw+Free", func() { pool.GetRaw().Free() }},
		{"Clone+Free", func() { pk.Clone(other).Free() }},
		{"SetFrame", func() { sinkB = pk.SetFrame(frame) }},
		{"Batch cycle", func() {
			for range DefaultBatch {
				batch.Add(pool.Get())
			}
			sinkInt = batch.Len() + batch.Bytes()
			batch.FreeAll()
		}},
		{"Batch Reset", func() {
			batch.Add(pk)
			batch.Reset()
		}},
		{"IPv4 accessors", func() {
			h, ok := AsIPv4(pk.Data[pk.L3:])
			if !ok {
				panic("short")
			}
			sink32 = h.DstU32() ^ h.SrcU32() ^ uint32(h.TTL()) ^ uint32(h.Protocol()) ^ uint32(h.IHL()) ^ uint32(h.TotalLen()) ^ uint32(h.FlagsFrag())
			sinkB = h.Src().Is4() && h.Dst() != h.Src() && h.Src4() != h.Dst4()
			sinkInt = len(h.Payload())
			h.SetTTL(h.TTL())
			h.SetDst4(h.Dst4())
		}},
		{"L4/Ethernet accessors", func() {
			e, _ := AsEthernet(pk.Data)
			u, _ := AsUDP(pk.Data[EthernetLen+IPv4MinLen:])
			c, _ := AsTCP(pk.Data[EthernetLen:])
			sink32 = uint32(e.Type()) ^ uint32(u.DstPort()) ^ uint32(u.SrcPort()) ^ uint32(c.Flags())
			sinkB = e.Dst() == e.Src()
		}},
		{"DecTTL", func() { hdr.DecTTL() }},
		{"ComputeChecksum+Valid", func() { sink16 = hdr.ComputeChecksum(); sinkB = hdr.ChecksumValid() }},
		{"Checksum 1500", func() { sink16 = Checksum(big) }},
		{"UpdateChecksum16/32", func() { sink16 = UpdateChecksum16(sink16, 1, 2) ^ UpdateChecksum32(sink16, 3, 4) }},
		{"PseudoHeaderSum", func() {
			sink64 = PseudoHeaderSumV4([4]byte{1, 2, 3, 4}, [4]byte{5, 6, 7, 8}, 17, 100) + PseudoHeaderSumV6([16]byte{1}, [16]byte{2}, 6, 40)
		}},
		{"FlowHash", func() {
			sink32 = FlowHash(pk) ^ FlowHashV4(1, 2, 3, 4, 6) ^ FlowHashV6([16]byte{1}, [16]byte{2}, 3, 4, 17)
		}},
		{"ParseMAC", func() { m, _ := ParseMAC("00:11:22:33:44:55"); sinkB = m == BroadcastMAC }},
	}
	for _, tt := range tests {
		if n := testing.AllocsPerRun(100, tt.f); n != 0 {
			t.Errorf("%s: %v allocs per run, want 0", tt.name, n)
		}
	}
	if pool.Outstanding() != 1 || other.Outstanding() != 0 {
		t.Errorf("leak: outstanding %d / %d", pool.Outstanding(), other.Outstanding())
	}
}
