package packet

import (
	"encoding/binary"
	"net/netip"
)

// IPv4 header (RFC 791):
//
//	 0                   1                   2                   3
//	 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|Version|  IHL  |Type of Service|          Total Length         |
//	|         Identification        |Flags|      Fragment Offset    |
//	|  Time to Live |    Protocol   |         Header Checksum       |
//	|                       Source Address                          |
//	|                    Destination Address                        |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
const (
	IPv4MinLen   = 20
	ipv4VerIHL   = 0
	ipv4TOS      = 1
	ipv4TotalLen = 2
	ipv4ID       = 4
	ipv4Frag     = 6
	ipv4TTL      = 8
	ipv4Proto    = 9
	ipv4Csum     = 10
	ipv4Src      = 12
	ipv4Dst      = 16

	// IPv4 flag bits in the 16-bit flags/fragment-offset word.
	IPv4FlagDF     = 0x4000
	IPv4FlagMF     = 0x2000
	IPv4FragOffset = 0x1fff
)

// IP protocol numbers.
const (
	ProtoICMP   = 1
	ProtoTCP    = 6
	ProtoUDP    = 17
	ProtoICMPv6 = 58
)

// IPv4 is a view of an IPv4 header followed by its payload. The accessors
// assume len >= IPv4MinLen; AsIPv4 checks that much, and CheckIPHeader
// checks the rest once so that later elements may trust the header.
type IPv4 []byte

// AsIPv4 returns the view if b holds at least a minimal IPv4 header.
func AsIPv4(b []byte) (IPv4, bool) {
	if len(b) < IPv4MinLen {
		return nil, false
	}
	return IPv4(b), true
}

func (h IPv4) Version() uint8      { return h[ipv4VerIHL] >> 4 }
func (h IPv4) IHL() int            { return int(h[ipv4VerIHL]&0xf) * 4 }
func (h IPv4) TOS() uint8          { return h[ipv4TOS] }
func (h IPv4) TotalLen() int       { return int(binary.BigEndian.Uint16(h[ipv4TotalLen:])) }
func (h IPv4) ID() uint16          { return binary.BigEndian.Uint16(h[ipv4ID:]) }
func (h IPv4) FlagsFrag() uint16   { return binary.BigEndian.Uint16(h[ipv4Frag:]) }
func (h IPv4) FragOffset() int     { return int(h.FlagsFrag()&IPv4FragOffset) * 8 }
func (h IPv4) MoreFragments() bool { return h.FlagsFrag()&IPv4FlagMF != 0 }
func (h IPv4) TTL() uint8          { return h[ipv4TTL] }
func (h IPv4) Protocol() uint8     { return h[ipv4Proto] }
func (h IPv4) Checksum() uint16    { return binary.BigEndian.Uint16(h[ipv4Csum:]) }
func (h IPv4) Src4() [4]byte       { return [4]byte(h[ipv4Src : ipv4Src+4]) }
func (h IPv4) Dst4() [4]byte       { return [4]byte(h[ipv4Dst : ipv4Dst+4]) }
func (h IPv4) SrcU32() uint32      { return binary.BigEndian.Uint32(h[ipv4Src:]) }
func (h IPv4) DstU32() uint32      { return binary.BigEndian.Uint32(h[ipv4Dst:]) }
func (h IPv4) Src() netip.Addr     { return netip.AddrFrom4(h.Src4()) }
func (h IPv4) Dst() netip.Addr     { return netip.AddrFrom4(h.Dst4()) }

func (h IPv4) SetVersionIHL(ihl int) { h[ipv4VerIHL] = 4<<4 | byte(ihl/4) }
func (h IPv4) SetTOS(v uint8)        { h[ipv4TOS] = v }
func (h IPv4) SetTotalLen(n int)     { binary.BigEndian.PutUint16(h[ipv4TotalLen:], uint16(n)) }
func (h IPv4) SetID(v uint16)        { binary.BigEndian.PutUint16(h[ipv4ID:], v) }
func (h IPv4) SetFlagsFrag(v uint16) { binary.BigEndian.PutUint16(h[ipv4Frag:], v) }
func (h IPv4) SetTTL(v uint8)        { h[ipv4TTL] = v }
func (h IPv4) SetProtocol(v uint8)   { h[ipv4Proto] = v }
func (h IPv4) SetChecksum(v uint16)  { binary.BigEndian.PutUint16(h[ipv4Csum:], v) }
func (h IPv4) SetSrc4(a [4]byte)     { copy(h[ipv4Src:ipv4Src+4], a[:]) }
func (h IPv4) SetDst4(a [4]byte)     { copy(h[ipv4Dst:ipv4Dst+4], a[:]) }
func (h IPv4) SetSrc(a netip.Addr)   { h.SetSrc4(a.As4()) }
func (h IPv4) SetDst(a netip.Addr)   { h.SetDst4(a.As4()) }

// Payload returns the bytes after the header (by IHL), bounded by the frame
// and by TotalLen when TotalLen is sane.
//
// It returns nil when IHL is below the minimum (5 words) or runs past the
// frame: there is no payload to speak of, and returning the header itself
// would let a caller parse it as L4.
func (h IPv4) Payload() []byte {
	ihl, tl := h.IHL(), h.TotalLen()
	if tl > len(h) || tl < ihl {
		tl = len(h)
	}
	if ihl < IPv4MinLen || ihl > tl {
		return nil
	}
	return h[ihl:tl]
}

// headerLen is IHL clamped to [IPv4MinLen, len(h)], so that checksum helpers
// never slice out of range on a malformed header (CheckIPHeader rejects those
// separately).
func (h IPv4) headerLen() int {
	return min(max(h.IHL(), IPv4MinLen), len(h))
}

// ComputeChecksum returns the header checksum over IHL bytes, as it should be
// stored (computed with the checksum field taken as zero). On a malformed
// IHL it covers IHL clamped to [20, len(h)] bytes instead of panicking.
func (h IPv4) ComputeChecksum() uint16 {
	n := h.headerLen()
	acc := Sum(h[:ipv4Csum], 0)
	acc = Sum(h[ipv4Csum+2:n], acc)
	return ^Fold(acc)
}

// ChecksumValid reports whether the header checksum verifies (the sum over the
// header including its checksum folds to 0xffff). A header whose IHL is below
// 20 bytes or past the end of h is not valid.
func (h IPv4) ChecksumValid() bool {
	ihl := h.IHL()
	if ihl < IPv4MinLen || ihl > len(h) {
		return false
	}
	return Fold(Sum(h[:ihl], 0)) == 0xffff
}

// DecTTL decrements the TTL and patches the checksum incrementally
// (RFC 1624): the TTL is the high byte of the 16-bit word TTL|protocol, so
// the word drops by 0x0100.
func (h IPv4) DecTTL() {
	old := binary.BigEndian.Uint16(h[ipv4TTL:])
	h[ipv4TTL]--
	h.SetChecksum(UpdateChecksum16(h.Checksum(), old, old-0x0100))
}

// AddrFromU32 is the IPv4 address held as a big-endian word, as SrcU32,
// DstU32 and flow tuples hold it.
func AddrFromU32(v uint32) netip.Addr {
	return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)})
}
