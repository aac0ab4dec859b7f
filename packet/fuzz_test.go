package packet

import (
	"encoding/binary"
	"net"
	"testing"

	"github.com/google/gopacket"
	"github.com/google/gopacket/layers"
)

// fuzzSeeds are valid frames built by gopacket, so that the fuzzer starts
// from inputs that get past every length check.
func fuzzSeeds(f *testing.F) [][]byte {
	eth := func(typ layers.EthernetType) *layers.Ethernet {
		return &layers.Ethernet{SrcMAC: hw("00:11:22:33:44:55"), DstMAC: hw("66:77:88:99:aa:bb"), EthernetType: typ}
	}
	v4 := func(p layers.IPProtocol) *layers.IPv4 {
		return &layers.IPv4{Version: 4, TTL: 64, Protocol: p, SrcIP: ip4("10.0.0.1"), DstIP: ip4("10.0.0.2")}
	}
	v6 := func(p layers.IPProtocol) *layers.IPv6 {
		return &layers.IPv6{Version: 6, HopLimit: 64, NextHeader: p, SrcIP: ip6("2001:db8::1"), DstIP: ip6("2001:db8::2")}
	}
	return [][]byte{
		serialize(f, eth(layers.EthernetTypeIPv4), v4(layers.IPProtocolUDP), &layers.UDP{SrcPort: 1234, DstPort: 53}, gopacket.Payload("query")),
		serialize(f, eth(layers.EthernetTypeIPv4), v4(layers.IPProtocolTCP), &layers.TCP{SrcPort: 40000, DstPort: 80, SYN: true, Seq: 7}),
		serialize(f, eth(layers.EthernetTypeIPv4), v4(layers.IPProtocolICMPv4), &layers.ICMPv4{TypeCode: layers.CreateICMPv4TypeCode(8, 0), Id: 1, Seq: 2}),
		serialize(f, eth(layers.EthernetTypeIPv6), v6(layers.IPProtocolUDP), &layers.UDP{SrcPort: 546, DstPort: 547}, gopacket.Payload("dhcp")),
		serialize(f, eth(layers.EthernetTypeIPv6), v6(layers.IPProtocolTCP), &layers.TCP{SrcPort: 443, DstPort: 50000, ACK: true}),
		serialize(f, eth(layers.EthernetTypeARP), &layers.ARP{AddrType: layers.LinkTypeEthernet, Protocol: layers.EthernetTypeIPv4, HwAddressSize: 6,
			ProtAddressSize: 4, Operation: 1, SourceHwAddress: hw("00:11:22:33:44:55"), SourceProtAddress: ip4("10.0.0.1"),
			DstHwAddress: make(net.HardwareAddr, 6), DstProtAddress: ip4("10.0.0.2")}),
		serialize(f, eth(layers.EthernetTypeIPv4), &layers.IPv4{Version: 4, TTL: 1, Protocol: layers.IPProtocolUDP, SrcIP: ip4("1.2.3.4"), DstIP: ip4("5.6.7.8"),
			Options: []layers.IPv4Option{{OptionType: 148, OptionLength: 4, OptionData: []byte{0, 0}}}}, &layers.UDP{SrcPort: 1, DstPort: 2}),
		{},
		{0x45},
		// Regression seeds: IPv4 headers with IHL 0 and IHL 15 in 20 bytes
		// once made ComputeChecksum/ChecksumValid slice out of range.
		append([]byte{0x40}, make([]byte, 19)...),
		append([]byte{0x4f}, make([]byte, 19)...),
	}
}

// within reports whether sub is a window of b starting at off (checked by
// capacity, so that it holds for empty windows too).
func within(sub, b []byte, off int) bool {
	return off >= 0 && off <= len(b) && len(sub) <= len(b)-off && cap(sub) == cap(b)-off
}

// FuzzHeaders feeds random bytes to every view, at the Ethernet header and
// at each L3/L4 offset: no accessor of a view that As* accepted may panic,
// Payload methods stay inside the input, and where gopacket decodes the same
// bytes the views agree with it.
func FuzzHeaders(f *testing.F) {
	for _, s := range fuzzSeeds(f) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		data = append([]byte(nil), data...) // the setters below write
		for _, off := range []int{0, EthernetLen} {
			if off > len(data) {
				continue
			}
			exerciseViews(t, data[off:])
		}
		if e, ok := AsEthernet(data); ok {
			_, _, _ = e.Dst(), e.Src(), e.Type()
			if p := e.Payload(); !within(p, data, EthernetLen) || len(p) != len(data)-EthernetLen {
				t.Fatalf("Ethernet.Payload out of place")
			}
		}
		for _, l3 := range []int{-1, 0, 12, 14, 18, len(data), len(data) + 1} {
			_ = FlowHashFrame(data, l3)
		}
	})
}

func exerciseViews(t *testing.T, b []byte) {
	if a, ok := AsARP(b); ok {
		_, _, _, _, _ = a.Op(), a.SenderMAC(), a.TargetMAC(), a.SenderIP(), a.TargetIP()
		a.SetOp(a.Op())
		a.SetSenderMAC(a.SenderMAC())
		a.SetTargetMAC(a.TargetMAC())
		a.SetSenderIP(a.SenderIP())
		a.SetTargetIP(a.TargetIP())
	}
	if h, ok := AsIPv4(b); ok {
		_, _, _, _, _ = h.Version(), h.IHL(), h.TOS(), h.TotalLen(), h.ID()
		_, _, _, _, _ = h.FlagsFrag(), h.FragOffset(), h.MoreFragments(), h.TTL(), h.Protocol()
		_, _, _, _, _, _ = h.Src4(), h.Dst4(), h.SrcU32(), h.DstU32(), h.Src(), h.Dst()
		p := h.Payload()
		if p != nil && (h.IHL() < IPv4MinLen || !within(p, b, h.IHL())) {
			t.Fatalf("IPv4.Payload (%d bytes) not at IHL %d of %d", len(p), h.IHL(), len(b))
		}
		if p == nil && h.IHL() >= IPv4MinLen && h.IHL() <= len(b) {
			t.Fatalf("IPv4.Payload nil with IHL %d of %d", h.IHL(), len(b))
		}
		valid := h.ChecksumValid()
		c := h.ComputeChecksum()
		if valid && h.Checksum() != c && !(h.Checksum() == 0xffff && c == 0) && !(h.Checksum() == 0 && c == 0xffff) {
			t.Fatalf("checksum valid but stored %#04x != computed %#04x", h.Checksum(), c)
		}
		if h.IHL() >= IPv4MinLen && h.IHL() <= len(b) {
			old := h.Checksum()
			h.SetChecksum(c)
			if !h.ChecksumValid() {
				t.Fatal("ComputeChecksum does not verify")
			}
			ttl := h.TTL()
			h.DecTTL()
			if h.TTL() != ttl-1 || !h.ChecksumValid() {
				t.Fatal("DecTTL broke the checksum")
			}
			h.SetTTL(ttl)
			h.SetChecksum(old)
		}
		checkIPv4Gopacket(t, h)
		if u, ok := AsUDP(p); ok {
			_, _, _, _ = u.SrcPort(), u.DstPort(), u.Length(), u.Checksum()
		}
		if c, ok := AsTCP(p); ok {
			_, _, _, _, _, _, _, _ = c.SrcPort(), c.DstPort(), c.Seq(), c.Ack(), c.DataOffset(), c.Flags(), c.Window(), c.Checksum()
		}
		if c, ok := AsICMP(p); ok {
			_, _, _, _, _, _, _ = c.Type(), c.Code(), c.Checksum(), c.Ident(), c.Seq(), c.Rest(), c.IsError()
		}
	}
	if h, ok := AsIPv6(b); ok {
		_, _, _, _ = h.Version(), h.PayloadLen(), h.NextHeader(), h.HopLimit()
		_, _, _, _ = h.Src16(), h.Dst16(), h.Src(), h.Dst()
		p := h.Payload()
		if !within(p, b, IPv6Len) || len(p) > h.PayloadLen() || len(p) != min(h.PayloadLen(), len(b)-IPv6Len) {
			t.Fatalf("IPv6.Payload (%d bytes) out of place (PayloadLen %d, len %d)", len(p), h.PayloadLen(), len(b))
		}
		h.SetHopLimit(h.HopLimit())
		h.SetSrc(h.Src())
		h.SetDst(h.Dst())
	}
	if u, ok := AsUDP(b); ok {
		_, _, _, _ = u.SrcPort(), u.DstPort(), u.Length(), u.Checksum()
		u.SetSrcPort(u.SrcPort())
		u.SetDstPort(u.DstPort())
		u.SetLength(u.Length())
		u.SetChecksum(u.Checksum())
	}
	if c, ok := AsTCP(b); ok {
		_, _, _, _, _, _, _, _ = c.SrcPort(), c.DstPort(), c.Seq(), c.Ack(), c.DataOffset(), c.Flags(), c.Window(), c.Checksum()
		c.SetSeq(c.Seq())
		c.SetAck(c.Ack())
		c.SetFlags(c.Flags())
		c.SetWindow(c.Window())
		c.SetChecksum(c.Checksum())
	}
	if c, ok := AsICMP(b); ok {
		_, _, _, _, _, _, _ = c.Type(), c.Code(), c.Checksum(), c.Ident(), c.Seq(), c.Rest(), c.IsError()
		c.SetRest(c.Rest())
		c.SetChecksum(c.Checksum())
	}
}

// checkIPv4Gopacket compares the view with gopacket's decoder where gopacket
// accepts the header.
func checkIPv4Gopacket(t *testing.T, h IPv4) {
	var g layers.IPv4
	if g.DecodeFromBytes(h, nopFeedback{}) != nil {
		return
	}
	// gopacket replaces a TotalLen of 0 (TSO) with the buffer length.
	if h.Version() != g.Version || h.IHL() != int(g.IHL)*4 || (h.TotalLen() != int(g.Length) && h.TotalLen() != 0) || h.TTL() != g.TTL ||
		h.Protocol() != uint8(g.Protocol) || h.ID() != g.Id || h.FlagsFrag() != uint16(g.Flags)<<13|g.FragOffset ||
		h.SrcU32() != be32(g.SrcIP) || h.DstU32() != be32(g.DstIP) || h.Checksum() != g.Checksum {
		t.Fatalf("view and gopacket disagree on %x: %+v", []byte(h[:IPv4MinLen]), g)
	}
}

// FuzzChecksum: on a 20-byte header with a correct checksum, changing any
// 16-bit word (or an aligned 32-bit field) and updating per RFC 1624 gives the
// checksum computed from scratch.
func FuzzChecksum(f *testing.F) {
	f.Add([]byte{0x45, 0, 0, 0x54, 0x12, 0x34, 0x40, 0, 64, 1, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2}, uint8(4), uint16(0x3f01), uint32(0))
	f.Add([]byte{0x45, 0, 0, 0x1c, 0, 0, 0, 0, 1, 17, 0, 0, 0xc0, 0xa8, 1, 1, 0xc0, 0xa8, 1, 2}, uint8(0x86), uint16(0), uint32(0x0a000001))
	f.Add(make([]byte, 20), uint8(2), uint16(0xffff), uint32(0xffffffff))
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0, 0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, uint8(9), uint16(0), uint32(0))
	f.Fuzz(func(t *testing.T, hdr []byte, sel uint8, new16 uint16, new32 uint32) {
		h := make(IPv4, IPv4MinLen)
		copy(h, hdr)
		h.SetChecksum(0)
		h.SetChecksum(h.ComputeChecksum())
		hc := h.Checksum()

		var got uint16
		if sel&0x80 == 0 {
			w := int(sel%10) * 2
			if w == ipv4Csum {
				w = 0
			}
			old := binary.BigEndian.Uint16(h[w:])
			binary.BigEndian.PutUint16(h[w:], new16)
			got = UpdateChecksum16(hc, old, new16)
		} else {
			off := []int{0, 2, 4, 6, 12, 14, 16}[int(sel&0x7f)%7]
			old := binary.BigEndian.Uint32(h[off:])
			binary.BigEndian.PutUint32(h[off:], new32)
			got = UpdateChecksum32(hc, old, new32)
		}
		want := h.ComputeChecksum()
		if got != want {
			// The only exception: data that became all zero (see
			// TestUpdateChecksumRFC1624), where 0x0000 and 0xffff are the
			// same one's-complement zero and no incremental update can know
			// which a recompute gives.
			if got == 0 && want == 0xffff && Fold(Sum(h[:ipv4Csum], Sum(h[ipv4Csum+2:], 0))) == 0 {
				return
			}
			t.Fatalf("header %x: incremental %#04x, recompute %#04x", []byte(h), got, want)
		}
		h.SetChecksum(got)
		ttl := h.TTL()
		h.DecTTL()
		if h.TTL() != ttl-1 || h.Checksum() != h.ComputeChecksum() {
			// DecTTL is a 16-bit update; only the all-zero case may differ.
			if !(h.Checksum() == 0 && h.ComputeChecksum() == 0xffff) {
				t.Fatalf("DecTTL: %#04x, recompute %#04x", h.Checksum(), h.ComputeChecksum())
			}
		}
	})
}

// FuzzFlowHash: for any frame, swapping the endpoints (MACs, IP addresses and
// the first four L4 bytes) leaves the flow hash unchanged.
func FuzzFlowHash(f *testing.F) {
	for _, s := range fuzzSeeds(f) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		h := FlowHashFrame(data, EthernetLen)
		if h == 0 {
			t.Fatal("hash 0")
		}
		sw := append([]byte(nil), data...)
		swap := func(a, b, n int) {
			if b+n <= len(sw) {
				for i := range n {
					sw[a+i], sw[b+i] = sw[b+i], sw[a+i]
				}
			}
		}
		swap(0, 6, 6)
		if len(sw) >= EthernetLen {
			switch Ethernet(sw).Type() {
			case EtherTypeIPv4:
				if v, ok := AsIPv4(sw[EthernetLen:]); ok {
					swap(EthernetLen+ipv4Src, EthernetLen+ipv4Dst, 4)
					if ihl := v.IHL(); ihl >= IPv4MinLen {
						swap(EthernetLen+ihl, EthernetLen+ihl+2, 2)
					}
				}
			case EtherTypeIPv6:
				if _, ok := AsIPv6(sw[EthernetLen:]); ok {
					swap(EthernetLen+ipv6Src, EthernetLen+ipv6Dst, 16)
					swap(EthernetLen+IPv6Len, EthernetLen+IPv6Len+2, 2)
				}
			}
		}
		if h2 := FlowHashFrame(sw, EthernetLen); h2 != h {
			t.Fatalf("swapped frame hashes %#x, original %#x", h2, h)
		}
	})
}
