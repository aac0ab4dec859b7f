package packet

import (
	"encoding/binary"
	"net/netip"
)

// IPv6 fixed header (RFC 8200):
//
//	+-------+---------------+-------------------------------+
//	|Version| Traffic Class |          Flow Label           |
//	|         Payload Length        |  Next Header  |Hop Lim|
//	|                    Source Address (16)                |
//	|                 Destination Address (16)              |
//	+-------------------------------------------------------+
const (
	IPv6Len      = 40
	ipv6PayLen   = 4
	ipv6Next     = 6
	ipv6HopLimit = 7
	ipv6Src      = 8
	ipv6Dst      = 24
)

// IPv6 is a view of an IPv6 fixed header followed by its payload.
type IPv6 []byte

// AsIPv6 returns the view if b holds at least the fixed header.
func AsIPv6(b []byte) (IPv6, bool) {
	if len(b) < IPv6Len {
		return nil, false
	}
	return IPv6(b), true
}

func (h IPv6) Version() uint8        { return h[0] >> 4 }
func (h IPv6) PayloadLen() int       { return int(binary.BigEndian.Uint16(h[ipv6PayLen:])) }
func (h IPv6) NextHeader() uint8     { return h[ipv6Next] }
func (h IPv6) HopLimit() uint8       { return h[ipv6HopLimit] }
func (h IPv6) Src16() [16]byte       { return [16]byte(h[ipv6Src : ipv6Src+16]) }
func (h IPv6) Dst16() [16]byte       { return [16]byte(h[ipv6Dst : ipv6Dst+16]) }
func (h IPv6) Src() netip.Addr       { return netip.AddrFrom16(h.Src16()) }
func (h IPv6) Dst() netip.Addr       { return netip.AddrFrom16(h.Dst16()) }
func (h IPv6) SetPayloadLen(n int)   { binary.BigEndian.PutUint16(h[ipv6PayLen:], uint16(n)) }
func (h IPv6) SetNextHeader(v uint8) { h[ipv6Next] = v }
func (h IPv6) SetHopLimit(v uint8)   { h[ipv6HopLimit] = v }
func (h IPv6) SetSrc(a netip.Addr)   { v := a.As16(); copy(h[ipv6Src:ipv6Src+16], v[:]) }
func (h IPv6) SetDst(a netip.Addr)   { v := a.As16(); copy(h[ipv6Dst:ipv6Dst+16], v[:]) }

// Init sets version 6 with zero traffic class and flow label.
func (h IPv6) Init() { binary.BigEndian.PutUint32(h[0:], 6<<28) }

// Payload returns the bytes after the fixed header, bounded by PayloadLen.
func (h IPv6) Payload() []byte {
	n := IPv6Len + h.PayloadLen()
	if n > len(h) {
		n = len(h)
	}
	return h[IPv6Len:n]
}
