package packet

import (
	"encoding/binary"
	"math/bits"
)

// Flow hashing steers both directions of a flow to one worker, so the hash is
// symmetric: swapping source and destination (addresses together with their
// ports) gives the same value. Each endpoint is first reduced to one 64-bit
// word (an IPv4 address and port fit exactly: addr<<16 | port); the two words
// are put in order with min/max, which is what makes the hash symmetric
// without weakening it the way XOR-ing the endpoints would (XOR maps every
// pair (a^k, b^k) to the same value). The ordered pair is then mixed with one
// 64x64→128 multiply (the wyhash "mum" step), which is a couple of
// nanoseconds and spreads every input bit into the low bits that a
// "hash mod workers" steering uses.
//
// What is hashed:
//   - IPv4/IPv6 TCP and UDP: addresses, ports and protocol;
//   - ICMP and ICMPv6 errors: the tuple of the packet they quote (the flow
//     they are about);
//   - other IP protocols, IPv4 fragments (only the first one carries the
//     ports, so none of them use ports) and IPv6 packets whose next header is
//     not TCP/UDP: addresses and protocol;
//   - everything else: the two MAC addresses and the EtherType.
//
// The result is never 0, so that 0 can keep meaning "not computed" in
// Packet.FlowHash.

const (
	fhK0 = 0xa0761d6478bd642f // wyhash's primes: odd, with mixed bit patterns
	fhK1 = 0xe7037ed1a0b428db
	fhK2 = 0x8ebc6af09c88c6e3
	fhK3 = 0x589965cc75374cc3

	// Domains keep an IPv4 flow, an IPv6 flow and a MAC pair with equal
	// reduced words from hashing alike.
	fhDomIPv4 = 4 << 8
	fhDomIPv6 = 6 << 8
	fhDomMAC  = 1 << 16 // above any EtherType
)

// fhMix hashes the ordered endpoint pair (lo, hi) and a small tag.
func fhMix(lo, hi, tag uint64) uint32 {
	h, l := bits.Mul64(lo^fhK0, hi^fhK1^(tag*fhK2))
	x := h ^ l
	r := uint32(x) ^ uint32(x>>32)
	if r == 0 {
		r = 0x9e3779b9
	}
	return r
}

// fhPair orders two endpoint words and hashes them with tag.
func fhPair(a, b, tag uint64) uint32 {
	return fhMix(min(a, b), max(a, b), tag)
}

// FlowHashV4 is the symmetric flow hash of an IPv4 5-tuple (addresses as
// IPv4.SrcU32/DstU32 return them). Pass zero ports for protocols without
// ports. A NAT can use it to pick a port whose reply hashes to a given worker.
func FlowHashV4(src, dst uint32, sport, dport uint16, proto uint8) uint32 {
	a := uint64(src)<<16 | uint64(sport)
	b := uint64(dst)<<16 | uint64(dport)
	return fhPair(a, b, fhDomIPv4|uint64(proto))
}

// FlowHashV6 is FlowHashV4 for IPv6.
func FlowHashV6(src, dst [16]byte, sport, dport uint16, proto uint8) uint32 {
	return fhPair(fhEndpoint6(src[:], sport), fhEndpoint6(dst[:], dport), fhDomIPv6|uint64(proto))
}

// fhEndpoint6 reduces a 128-bit address and a port to one word. It is a
// function of the endpoint alone, so ordering reduced words keeps symmetry
// (two endpoints that reduce alike hash alike in either order).
func fhEndpoint6(a []byte, port uint16) uint64 {
	_ = a[15]
	hi := binary.BigEndian.Uint64(a[0:8])
	lo := binary.BigEndian.Uint64(a[8:16])
	h, l := bits.Mul64(hi^fhK2, lo^fhK3^uint64(port))
	return h ^ l
}

// FlowHash returns the symmetric flow hash of p's frame, with the network
// header at p.L3. It does not store it: the caller may cache it in
// p.FlowHash (it is never 0).
func FlowHash(p *Packet) uint32 {
	return FlowHashFrame(p.Data, int(p.L3))
}

// FlowHashFrame is FlowHash for a frame whose network header starts at l3
// (14 for untagged Ethernet; more after VLAN tags). The EtherType is the
// 16-bit word just before l3. Any frame of any length is accepted; a frame
// too short for its headers falls back to a shorter key.
func FlowHashFrame(frame []byte, l3 int) uint32 {
	if l3 >= EthernetLen && l3 <= len(frame) {
		switch binary.BigEndian.Uint16(frame[l3-2:]) {
		case EtherTypeIPv4:
			if len(frame)-l3 >= IPv4MinLen {
				return flowHashIPv4(frame[l3:])
			}
		case EtherTypeIPv6:
			if len(frame)-l3 >= IPv6Len {
				return flowHashIPv6(frame[l3:])
			}
		}
	}
	return flowHashMAC(frame)
}

func flowHashIPv4(h []byte) uint32 {
	// An ICMP error hashes as the packet it quotes, as an ICMPv6 error
	// does (flowHashIPv6): the symmetric hash of the quoted tuple is the
	// hash of the flow the error is about, so it reaches the worker that
	// tracks that flow whatever its own addresses are (the error's
	// sender is often a router on the way, not the flow's other end).
	if q, ok := ICMPErrorQuote4(h); ok {
		h = q
	}
	return FlowHashV4(Tuple4(h))
}

// Tuple4 is the tuple the flow hash takes from the IPv4 header h (at least
// IPv4MinLen bytes; ports only for TCP and UDP packets that are not
// fragments and hold them, else zero).
func Tuple4(h []byte) (src, dst uint32, sport, dport uint16, proto uint8) {
	_ = h[IPv4MinLen-1]
	proto = h[ipv4Proto]
	src = binary.BigEndian.Uint32(h[ipv4Src:])
	dst = binary.BigEndian.Uint32(h[ipv4Dst:])
	ihl := int(h[ipv4VerIHL]&0xf) * 4
	// Fragments (MF set or offset != 0) have no ports past the first one, so
	// all of them hash without ports and stay together.
	if (proto == ProtoTCP || proto == ProtoUDP) && ihl >= IPv4MinLen && len(h) >= ihl+4 &&
		binary.BigEndian.Uint16(h[ipv4Frag:])&(IPv4FlagMF|IPv4FragOffset) == 0 {
		sport = binary.BigEndian.Uint16(h[ihl:])
		dport = binary.BigEndian.Uint16(h[ihl+2:])
	}
	return
}

// ICMPErrorQuote4 returns the IPv4 header quoted by h when h (an IPv4
// header and what follows it, at least IPv4MinLen bytes) is an ICMP error
// (destination unreachable, source quench, redirect, time exceeded,
// parameter problem) that is not a fragment and quotes at least a whole
// IPv4 header; the quote runs to the end of h. Not an error: ok is false.
func ICMPErrorQuote4(h []byte) (q []byte, ok bool) {
	ihl := int(h[ipv4VerIHL]&0xf) * 4
	if h[ipv4Proto] != ProtoICMP || ihl < IPv4MinLen || len(h) < ihl+ICMPLen+IPv4MinLen ||
		binary.BigEndian.Uint16(h[ipv4Frag:])&(IPv4FlagMF|IPv4FragOffset) != 0 ||
		!ICMP(h[ihl:]).IsError() {
		return nil, false
	}
	q = h[ihl+ICMPLen:]
	if q[ipv4VerIHL]>>4 != 4 {
		return nil, false
	}
	return q, true
}

func flowHashIPv6(h []byte) uint32 {
	_ = h[IPv6Len-1]
	proto := h[ipv6Next]
	// An ICMPv6 error (type < 128) hashes as the packet it quotes, which
	// went the other way in the flow it is about: the symmetric hash
	// sends it to the worker that tracks that flow (its quote is the
	// packet as the error's sender got it).
	if proto == 58 && len(h) >= IPv6Len+8+IPv6Len && h[IPv6Len] < 128 && h[IPv6Len+8]>>4 == 6 {
		h = h[IPv6Len+8:]
		proto = h[ipv6Next]
	}
	var sport, dport uint16
	if (proto == ProtoTCP || proto == ProtoUDP) && len(h) >= IPv6Len+4 {
		sport = binary.BigEndian.Uint16(h[IPv6Len:])
		dport = binary.BigEndian.Uint16(h[IPv6Len+2:])
	}
	a := fhEndpoint6(h[ipv6Src:ipv6Src+16], sport)
	b := fhEndpoint6(h[ipv6Dst:ipv6Dst+16], dport)
	return fhPair(a, b, fhDomIPv6|uint64(proto))
}

// flowHashMAC hashes the MAC pair and EtherType of frame; a runt frame
// (shorter than an Ethernet header) hashes as if zero-padded.
func flowHashMAC(frame []byte) uint32 {
	var e [EthernetLen]byte
	copy(e[:], frame)
	dst := uint64(binary.BigEndian.Uint16(e[0:]))<<32 | uint64(binary.BigEndian.Uint32(e[2:]))
	src := uint64(binary.BigEndian.Uint16(e[6:]))<<32 | uint64(binary.BigEndian.Uint32(e[8:]))
	typ := uint64(binary.BigEndian.Uint16(e[12:]))
	return fhPair(dst, src, fhDomMAC|typ)
}
