package packet

import (
	"encoding/binary"
	"math/rand/v2"
	"net/netip"
	"testing"

	"github.com/google/gopacket/layers"
)

// frame4 builds an Ethernet/IPv4 frame with an 8-byte L4 header holding the
// ports (enough for TCP/UDP port parsing; the views do not care which).
func frame4(src, dst uint32, sport, dport uint16, proto uint8) []byte {
	b := make([]byte, EthernetLen+IPv4MinLen+8)
	Ethernet(b).SetType(EtherTypeIPv4)
	h := IPv4(b[EthernetLen:])
	h.SetVersionIHL(IPv4MinLen)
	h.SetTotalLen(len(h))
	h.SetTTL(64)
	h.SetProtocol(proto)
	binary.BigEndian.PutUint32(h[ipv4Src:], src)
	binary.BigEndian.PutUint32(h[ipv4Dst:], dst)
	binary.BigEndian.PutUint16(h[IPv4MinLen:], sport)
	binary.BigEndian.PutUint16(h[IPv4MinLen+2:], dport)
	return b
}

func frame6(src, dst [16]byte, sport, dport uint16, proto uint8) []byte {
	b := make([]byte, EthernetLen+IPv6Len+8)
	Ethernet(b).SetType(EtherTypeIPv6)
	h := IPv6(b[EthernetLen:])
	h.Init()
	h.SetPayloadLen(8)
	h.SetNextHeader(proto)
	h.SetSrc(netip.AddrFrom16(src))
	h.SetDst(netip.AddrFrom16(dst))
	binary.BigEndian.PutUint16(h[IPv6Len:], sport)
	binary.BigEndian.PutUint16(h[IPv6Len+2:], dport)
	return b
}

func rand16(r *rand.Rand) (a [16]byte) {
	binary.BigEndian.PutUint64(a[:], r.Uint64())
	binary.BigEndian.PutUint64(a[8:], r.Uint64())
	return
}

// TestFlowHashSymmetric: swapping source and destination (with their ports)
// never changes the hash, for IPv4 and IPv6, TCP, UDP and other protocols, and
// the frame path agrees with the tuple functions.
func TestFlowHashSymmetric(t *testing.T) {
	r := rand.New(rand.NewPCG(21, 22))
	protos := []uint8{ProtoTCP, ProtoUDP, ProtoICMP, ProtoICMPv6, 47, 132}
	for i := range 100_000 {
		proto := protos[i%len(protos)]
		hasPorts := proto == ProtoTCP || proto == ProtoUDP
		sport, dport := uint16(r.Uint32()), uint16(r.Uint32())
		if i%10 == 0 {
			sport = dport // equal ports
		}
		wantPorts := func(s, d uint16) (uint16, uint16) {
			if hasPorts {
				return s, d
			}
			return 0, 0
		}
		ps, pd := wantPorts(sport, dport)

		src, dst := r.Uint32(), r.Uint32()
		if i%13 == 0 {
			dst = src // equal addresses
		}
		fwd, rev := frame4(src, dst, sport, dport, proto), frame4(dst, src, dport, sport, proto)
		hf, hr := FlowHashFrame(fwd, EthernetLen), FlowHashFrame(rev, EthernetLen)
		if hf != hr || hf != FlowHashV4(src, dst, ps, pd, proto) || hf != FlowHashV4(dst, src, pd, ps, proto) || hf == 0 {
			t.Fatalf("IPv4 %#x:%d -> %#x:%d proto %d: fwd %#x rev %#x tuple %#x", src, sport, dst, dport, proto, hf, hr, FlowHashV4(src, dst, ps, pd, proto))
		}

		s6, d6 := rand16(r), rand16(r)
		if i%17 == 0 {
			copy(d6[:8], s6[:8]) // same /64
		}
		fwd, rev = frame6(s6, d6, sport, dport, proto), frame6(d6, s6, dport, sport, proto)
		hf, hr = FlowHashFrame(fwd, EthernetLen), FlowHashFrame(rev, EthernetLen)
		if hf != hr || hf != FlowHashV6(s6, d6, ps, pd, proto) || hf != FlowHashV6(d6, s6, pd, ps, proto) || hf == 0 {
			t.Fatalf("IPv6 proto %d: fwd %#x rev %#x tuple %#x", proto, hf, hr, FlowHashV6(s6, d6, ps, pd, proto))
		}
	}
}

// TestFlowHashInputs checks which fields count: the 5-tuple for TCP/UDP,
// addresses and protocol otherwise, never TTL or payload.
func TestFlowHashInputs(t *testing.T) {
	base := frame4(0x0a000001, 0x0a000002, 1000, 80, ProtoTCP)
	h0 := FlowHashFrame(base, EthernetLen)
	change := func(name string, off int, v byte, wantSame bool) {
		t.Helper()
		b := append([]byte(nil), base...)
		b[off] ^= v
		if same := FlowHashFrame(b, EthernetLen) == h0; same != wantSame {
			t.Errorf("%s: same hash %v, want %v", name, same, wantSame)
		}
	}
	l3 := EthernetLen
	change("src addr", l3+ipv4Src+3, 1, false)
	change("dst addr", l3+ipv4Dst, 0x80, false)
	change("src port", l3+IPv4MinLen+1, 1, false)
	change("dst port", l3+IPv4MinLen+2, 1, false)
	change("protocol", l3+ipv4Proto, ProtoTCP^ProtoUDP, false)
	change("ttl", l3+ipv4TTL, 1, true)
	change("id", l3+ipv4ID, 0xff, true)
	change("checksum", l3+ipv4Csum, 0xff, true)
	change("macs", 0, 0xff, true)
	change("tcp seq", l3+IPv4MinLen+4, 0xff, true)

	// Ports are ignored for other protocols.
	icmp := frame4(1, 2, 3, 4, ProtoICMP)
	icmp2 := frame4(1, 2, 5, 6, ProtoICMP)
	if FlowHashFrame(icmp, EthernetLen) != FlowHashFrame(icmp2, EthernetLen) {
		t.Error("ICMP hash depends on bytes where TCP/UDP keep ports")
	}
	// Every fragment of a datagram hashes alike, first one included.
	first := frame4(1, 2, 3, 4, ProtoUDP)
	IPv4(first[l3:]).SetFlagsFrag(IPv4FlagMF)
	later := frame4(1, 2, 0xaaaa, 0xbbbb, ProtoUDP) // payload bytes, not ports
	IPv4(later[l3:]).SetFlagsFrag(IPv4FlagMF | 185)
	last := frame4(1, 2, 0xcccc, 0xdddd, ProtoUDP)
	IPv4(last[l3:]).SetFlagsFrag(370)
	hfr := FlowHashV4(1, 2, 0, 0, ProtoUDP)
	for i, f := range [][]byte{first, later, last} {
		if FlowHashFrame(f, l3) != hfr {
			t.Errorf("fragment %d hashes apart", i)
		}
	}
	// IPv4 options move the ports.
	opt := make([]byte, EthernetLen+24+4)
	copy(opt, base[:EthernetLen+IPv4MinLen])
	IPv4(opt[l3:]).SetVersionIHL(24)
	binary.BigEndian.PutUint16(opt[l3+24:], 1000)
	binary.BigEndian.PutUint16(opt[l3+26:], 80)
	if FlowHashFrame(opt, l3) != h0 {
		t.Error("ports after IPv4 options not found")
	}
	// A VLAN-tagged frame with L3 at 18 hashes like the untagged one.
	tagged := make([]byte, len(base)+4)
	copy(tagged, base[:12])
	binary.BigEndian.PutUint16(tagged[12:], EtherTypeVLAN)
	binary.BigEndian.PutUint16(tagged[14:], 100)
	copy(tagged[16:], base[12:])
	if FlowHashFrame(tagged, 18) != h0 {
		t.Error("VLAN-tagged frame with L3 18 hashes differently")
	}
	// ...and through the Packet annotation.
	pool := NewPool(1)
	p := pool.Get()
	p.SetFrame(tagged)
	p.L3 = 18
	if FlowHash(p) != h0 {
		t.Error("FlowHash(p) does not use p.L3")
	}
	p.Free()

	// IPv4, IPv6 and MAC domains do not collide on equal words.
	if FlowHashV4(1, 2, 3, 4, 6) == FlowHashV6([16]byte{15: 1}, [16]byte{15: 2}, 3, 4, 6) {
		t.Error("IPv4 and IPv6 tuples with equal numbers hash alike")
	}
}

// TestFlowHashNonIP: other EtherTypes hash the MAC pair, symmetrically.
func TestFlowHashNonIP(t *testing.T) {
	r := rand.New(rand.NewPCG(23, 24))
	types := []uint16{EtherTypeARP, EtherTypeVLAN, 0x88cc, 0x8847, EtherTypeIPv4, EtherTypeIPv6}
	for i := range 20_000 {
		b := make([]byte, 60)
		for j := range b {
			b[j] = byte(r.Uint32())
		}
		typ := types[i%len(types)]
		binary.BigEndian.PutUint16(b[12:], typ)
		// An IPv4/IPv6 frame too short for its header falls back to MACs.
		n := 60
		if typ == EtherTypeIPv4 {
			n = EthernetLen + IPv4MinLen - 1
		} else if typ == EtherTypeIPv6 {
			n = EthernetLen + IPv6Len - 1
		}
		f := b[:n]
		sw := append([]byte(nil), f...)
		copy(sw[0:6], f[6:12])
		copy(sw[6:12], f[0:6])
		h := FlowHashFrame(f, EthernetLen)
		if h != FlowHashFrame(sw, EthernetLen) || h == 0 {
			t.Fatalf("type %#x: MAC-swapped frame hashes %#x vs %#x", typ, FlowHashFrame(sw, EthernetLen), h)
		}
		// Only the Ethernet header counts.
		for j := EthernetLen; j < n; j++ {
			f[j] ^= 0xff
		}
		if FlowHashFrame(f, EthernetLen) != h {
			t.Fatalf("type %#x: payload changed the MAC hash", typ)
		}
		f[3] ^= 1
		if FlowHashFrame(f, EthernetLen) == h {
			t.Fatalf("type %#x: MAC change did not change the hash", typ)
		}
	}
	// Runts and odd L3 offsets: no panic, symmetric where there are MACs.
	b := make([]byte, 64)
	for i := range b {
		b[i] = byte(i)
	}
	binary.BigEndian.PutUint16(b[12:], EtherTypeIPv4)
	for n := 0; n <= len(b); n++ {
		for _, l3 := range []int{-1, 0, 13, 14, 18, n, n + 1, 1 << 20} {
			_ = FlowHashFrame(b[:n], l3)
		}
	}
	_ = FlowHashFrame(nil, 14)
}

// TestFlowHashDistribution: over 100k random tuples, and over the narrow
// tuples a generator produces (one /24, sequential ports), hash mod 2 and
// mod 8 (and the low/high bits in general) stay within a few % of uniform.
func TestFlowHashDistribution(t *testing.T) {
	const n = 100_000
	r := rand.New(rand.NewPCG(25, 26))
	sets := map[string]func(i int) uint32{
		"random v4 tcp": func(int) uint32 {
			return FlowHashV4(r.Uint32(), r.Uint32(), uint16(r.Uint32()), uint16(r.Uint32()), ProtoTCP)
		},
		"random v6 udp": func(int) uint32 {
			return FlowHashV6(rand16(r), rand16(r), uint16(r.Uint32()), uint16(r.Uint32()), ProtoUDP)
		},
		"gen: one /24, sequential source ports": func(i int) uint32 {
			return FlowHashV4(0x0a000001, 0xc0a80100|uint32(i%256), uint16(1024+i/256), 80, ProtoUDP)
		},
		"sequential addresses, no ports": func(i int) uint32 {
			return FlowHashV4(0x0a000000+uint32(i), 0x08080808, 0, 0, ProtoICMP)
		},
		"v6 sequential interface ids": func(i int) uint32 {
			a := [16]byte{0x20, 0x01, 0x0d, 0xb8}
			binary.BigEndian.PutUint32(a[12:], uint32(i))
			return FlowHashV6(a, [16]byte{15: 1}, 443, 50000, ProtoTCP)
		},
		"frames: macs only": func(i int) uint32 {
			var f [EthernetLen]byte
			binary.BigEndian.PutUint32(f[2:], uint32(i))
			f[11] = 1
			binary.BigEndian.PutUint16(f[12:], EtherTypeARP)
			return FlowHashFrame(f[:], EthernetLen)
		},
	}
	for name, gen := range sets {
		var mod2 [2]int
		var mod8 [8]int
		var top8 [8]int
		seen := make(map[uint32]struct{}, n)
		for i := range n {
			h := gen(i)
			mod2[h%2]++
			mod8[h%8]++
			top8[h>>29]++
			seen[h] = struct{}{}
		}
		check := func(what string, buckets []int) {
			want := float64(n) / float64(len(buckets))
			for b, c := range buckets {
				if dev := (float64(c) - want) / want; dev > 0.03 || dev < -0.03 {
					t.Errorf("%s: %s bucket %d has %d, expected %.0f (%.1f%%)", name, what, b, c, want, 100*dev)
				}
			}
		}
		check("mod 2", mod2[:])
		check("mod 8", mod8[:])
		check("top 3 bits", top8[:])
		// 100k values in 2^32: about one collision expected.
		if len(seen) < n-10 {
			t.Errorf("%s: %d distinct hashes of %d", name, len(seen), n)
		}
	}
}

// TestFlowHashGopacket hashes frames gopacket built (with options-free
// headers and real checksums) in both directions.
func TestFlowHashGopacket(t *testing.T) {
	eth := func(typ layers.EthernetType) *layers.Ethernet {
		return &layers.Ethernet{SrcMAC: hw("00:00:00:00:00:01"), DstMAC: hw("00:00:00:00:00:02"), EthernetType: typ}
	}
	a, b := ip4("192.0.2.1"), ip4("198.51.100.7")
	fwd := serialize(t, eth(layers.EthernetTypeIPv4), &layers.IPv4{Version: 4, TTL: 64, Protocol: layers.IPProtocolTCP, SrcIP: a, DstIP: b},
		&layers.TCP{SrcPort: 40000, DstPort: 443, SYN: true})
	rev := serialize(t, eth(layers.EthernetTypeIPv4), &layers.IPv4{Version: 4, TTL: 50, Protocol: layers.IPProtocolTCP, SrcIP: b, DstIP: a},
		&layers.TCP{SrcPort: 443, DstPort: 40000, SYN: true, ACK: true})
	if FlowHashFrame(fwd, EthernetLen) != FlowHashFrame(rev, EthernetLen) ||
		FlowHashFrame(fwd, EthernetLen) != FlowHashV4(be32(a), be32(b), 40000, 443, ProtoTCP) {
		t.Error("gopacket TCP flow: directions differ")
	}
	a6, b6 := ip6("2001:db8::1"), ip6("2001:db8:1::2")
	fwd = serialize(t, eth(layers.EthernetTypeIPv6), &layers.IPv6{Version: 6, HopLimit: 64, NextHeader: layers.IPProtocolUDP, SrcIP: a6, DstIP: b6},
		&layers.UDP{SrcPort: 5353, DstPort: 53})
	rev = serialize(t, eth(layers.EthernetTypeIPv6), &layers.IPv6{Version: 6, HopLimit: 64, NextHeader: layers.IPProtocolUDP, SrcIP: b6, DstIP: a6},
		&layers.UDP{SrcPort: 53, DstPort: 5353})
	if FlowHashFrame(fwd, EthernetLen) != FlowHashFrame(rev, EthernetLen) ||
		FlowHashFrame(fwd, EthernetLen) != FlowHashV6([16]byte(a6), [16]byte(b6), 5353, 53, ProtoUDP) {
		t.Error("gopacket UDP/IPv6 flow: directions differ")
	}
}
