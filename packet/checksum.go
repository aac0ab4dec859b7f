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
