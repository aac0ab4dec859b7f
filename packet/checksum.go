package packet

import "encoding/binary"

// Checksum returns the Internet checksum (RFC 1071) of b, folded and
// complemented, ready to store.
func Checksum(b []byte) uint16 {
	return ^Fold(Sum(b, 0))
}

// Sum adds b, as big-endian 16-bit words, to the running one's-complement sum
// acc (unfolded, in 64 bits so that carries are folded once at the end).
func Sum(b []byte, acc uint64) uint64 {
	// Eight bytes at a time: the sum of 32-bit halves fits in 64 bits for any
	// frame size, and the final fold brings it back to 16 bits.
	for len(b) >= 8 {
		v := binary.BigEndian.Uint64(b)
		acc += v >> 32
		acc += v & 0xffffffff
		b = b[8:]
	}
	for len(b) >= 2 {
		acc += uint64(binary.BigEndian.Uint16(b))
		b = b[2:]
	}
	if len(b) == 1 {
		acc += uint64(b[0]) << 8
	}
	return acc
}

// Fold folds a running sum to 16 bits (without complementing it).
func Fold(acc uint64) uint16 {
	for acc > 0xffff {
		acc = (acc >> 16) + (acc & 0xffff)
	}
	return uint16(acc)
}

// UpdateChecksum16 returns the checksum hc after a 16-bit field changed from
// old to new, per RFC 1624 eqn. 3:
//
//	HC' = ~(~HC + ~m + m')
//
// Eqn. 3 (rather than RFC 1141's HC' = HC + m - m') never produces the
// +0 → −0 (0x0000 vs 0xffff) error that RFC 1624 section 3 describes.
func UpdateChecksum16(hc, old, new uint16) uint16 {
	s := uint32(^hc) + uint32(^old) + uint32(new)
	s = (s >> 16) + (s & 0xffff)
	s = (s >> 16) + (s & 0xffff)
	return ^uint16(s)
}

// UpdateChecksum32 is UpdateChecksum16 for a 32-bit field (an IPv4 address),
// treated as two 16-bit words.
func UpdateChecksum32(hc uint16, old, new uint32) uint16 {
	s := uint32(^hc) + (^old >> 16) + (^old & 0xffff) + (new >> 16) + (new & 0xffff)
	s = (s >> 16) + (s & 0xffff)
	s = (s >> 16) + (s & 0xffff)
	return ^uint16(s)
}

// PseudoHeaderSumV4 is the unfolded sum of the IPv4 pseudo-header used by
// TCP and UDP checksums.
func PseudoHeaderSumV4(src, dst [4]byte, proto uint8, length int) uint64 {
	return uint64(binary.BigEndian.Uint16(src[0:])) + uint64(binary.BigEndian.Uint16(src[2:])) +
		uint64(binary.BigEndian.Uint16(dst[0:])) + uint64(binary.BigEndian.Uint16(dst[2:])) +
		uint64(proto) + uint64(length)
}

// PseudoHeaderSumV6 is the unfolded sum of the IPv6 pseudo-header (RFC 8200
// section 8.1).
func PseudoHeaderSumV6(src, dst [16]byte, proto uint8, length int) uint64 {
	acc := Sum(src[:], 0)
	acc = Sum(dst[:], acc)
	return acc + uint64(proto) + uint64(length)
}

// ChecksumDelta32 is RFC 1624's ~m + m' for a 32-bit field (two 16-bit
// words) changing from old to new: the term a checksum update adds. Sums of
// such terms from several fields go through FoldDelta once.
func ChecksumDelta32(old, new uint32) uint32 {
	return (^old >> 16) + (^old & 0xffff) + (new >> 16) + (new & 0xffff)
}

// ChecksumDelta16 is ChecksumDelta32 for a 16-bit field.
func ChecksumDelta16(old, new uint16) uint32 { return uint32(^old) + uint32(new) }

// FoldDelta folds a sum of up to a few thousand 16-bit terms to 16 bits with
// end-around carries; the result is 0 only for a zero sum.
func FoldDelta(s uint32) uint16 {
	s = s>>16 + s&0xffff
	s = s>>16 + s&0xffff
	return uint16(s)
}

// AddOnes adds two 16-bit words in one's complement arithmetic: for two
// terms one end-around carry is enough (the sum is at most 0x1fffe), and
// the result is 0 only when both are. One's complement sums do not depend
// on byte order (RFC 1071 section 2.B), so a and b may both be byte-swapped
// and the result is then the swapped sum: a fast path can patch a
// checksum as the frame holds it.
func AddOnes(a, b uint16) uint16 {
	s := uint32(a) + uint32(b)
	return uint16(s + s>>16)
}

// RewriteFlow rewrites an IPv4 packet of protocol proto from the tuple
// (src, dst, sport, dport) to (nsrc, ndst, nsport, ndport) and lowers its
// TTL by ttlDec: what DNAT, SNAT and DecTTL do one after another, in one
// step. h is the IPv4 header (no options), l4 the transport header (TCP,
// UDP, or ICMP echo, whose identifier plays both ports). It is FlowDeltas
// then ApplyFlow. FastTrack applies it to packets, and the XDP fast path's
// tests take it as the reference for the kernel's rewrite.
func RewriteFlow(h, l4 []byte, proto uint8, src, dst uint32, sport, dport uint16, nsrc, ndst uint32, nsport, ndport uint16, ttlDec uint8) {
	r := FlowRewrite{NSrc: nsrc, NDst: ndst, NSport: nsport, NDport: ndport}
	r.IPSum, r.L4Sum = FlowDeltas(proto, src, dst, nsrc, ndst, sport, dport, nsport, ndport, ttlDec)
	ApplyFlow(h, l4, proto, ttlDec, &r)
}

// FlowRewrite is what ApplyFlow writes: the new addresses and ports, and
// the FlowDeltas sums for the two checksums.
type FlowRewrite struct {
	NSrc, NDst     uint32
	NSport, NDport uint16
	IPSum, L4Sum   uint16
}

// FlowDeltas returns the constant parts of a flow direction's checksum
// updates (RFC 1624 eqn. 3, HC' = ~(~HC + Σ(~m + m'))): the sums Σ(~m +
// m') over the words the rewrite changes, for the IPv4 header (addresses
// and TTL) and for the L4 checksum (TCP and UDP: addresses through the
// pseudo-header, and ports; ICMP echo: the identifier), each folded to 16
// bits with end-around carries. Folding first changes no result, because
// fold(x) is 0 only for x = 0 and otherwise is the one value in [1, 0xffff]
// congruent to x modulo 0xffff; so each checksum is patched once with the
// sum of all its changed words, and that is exactly what the
// one-field-at-a-time patches produce. An ICMP echo whose identifier does
// not change gets 0. FastTrack's flow cache and the XDP fast path compute
// them once per flow direction; ApplyFlow uses them per packet.
func FlowDeltas(proto uint8, src, dst, nsrc, ndst uint32, sport, dport, nsport, ndport uint16, ttlDec uint8) (ip, l4 uint16) {
	addrs := ChecksumDelta32(src, nsrc) + ChecksumDelta32(dst, ndst)
	// The TTL is the high byte of the word TTL<<8|protocol:
	// ~m + m' = -(d<<8) = ^(d<<8).
	ip = FoldDelta(addrs + uint32(^(uint16(ttlDec) << 8)))
	switch proto {
	case ProtoTCP, ProtoUDP:
		l4 = FoldDelta(addrs + ChecksumDelta16(sport, nsport) + ChecksumDelta16(dport, ndport))
	case ProtoICMP:
		if sport != nsport {
			l4 = FoldDelta(ChecksumDelta16(sport, nsport))
		}
	}
	return ip, l4
}

// ApplyFlow writes a flow direction's rewrite r into IPv4 header h (no
// options) and its L4 header l4: the new addresses and ports, the TTL
// lowered by ttlDec, and each checksum patched with its FlowDeltas sum. A
// UDP checksum of 0 (none) stays 0, and a computed 0 is sent as 0xffff
// (RFC 768); an ICMP echo's checksum is not touched when its identifier
// already is r.NSport. It runs for every fast-tracked packet: the rewrite
// is passed by pointer and the headers through fixed-size views, so that
// the call takes its arguments in registers and checks each length once.
func ApplyFlow(h, l4 []byte, proto, ttlDec uint8, r *FlowRewrite) {
	ih := (*[IPv4MinLen]byte)(h)
	ih[8] -= ttlDec
	binary.BigEndian.PutUint32(ih[12:], r.NSrc)
	binary.BigEndian.PutUint32(ih[16:], r.NDst)
	binary.BigEndian.PutUint16(ih[10:], patch(binary.BigEndian.Uint16(ih[10:]), r.IPSum))
	switch proto {
	case ProtoTCP:
		th := (*[TCPMinLen]byte)(l4)
		binary.BigEndian.PutUint16(th[0:], r.NSport)
		binary.BigEndian.PutUint16(th[2:], r.NDport)
		binary.BigEndian.PutUint16(th[16:], patch(binary.BigEndian.Uint16(th[16:]), r.L4Sum))
	case ProtoUDP:
		uh := (*[UDPLen]byte)(l4)
		binary.BigEndian.PutUint16(uh[0:], r.NSport)
		binary.BigEndian.PutUint16(uh[2:], r.NDport)
		if old := binary.BigEndian.Uint16(uh[6:]); old != 0 {
			cs := patch(old, r.L4Sum)
			if cs == 0 {
				cs = 0xffff
			}
			binary.BigEndian.PutUint16(uh[6:], cs)
		}
	case ProtoICMP:
		ch := (*[ICMPLen]byte)(l4)
		if binary.BigEndian.Uint16(ch[4:]) != r.NSport {
			binary.BigEndian.PutUint16(ch[4:], r.NSport)
			binary.BigEndian.PutUint16(ch[2:], patch(binary.BigEndian.Uint16(ch[2:]), r.L4Sum))
		}
	}
}

// patch is HC' = ~fold(~HC + delta).
func patch(hc, delta uint16) uint16 { return PatchChecksum(hc, uint32(delta)) }

// PatchChecksum is checksum hc with d added: d is an unfolded sum of
// ChecksumDelta32/ChecksumDelta16 terms (RFC 1624 eqn. 3,
// HC' = ~fold(~HC + d)). Several fields' changes summed and patched at
// once write the same bytes as UpdateChecksum32/16 one field after the
// other: a fold of a positive sum is the one value in 1–0xffff congruent
// to it mod 0xffff, however it is grouped.
func PatchChecksum(hc uint16, d uint32) uint16 { return ^FoldDelta(uint32(^hc) + d) }
