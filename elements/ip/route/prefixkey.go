package route

import (
	"encoding/binary"
	"net/netip"
)

// Prefixes as map keys without pointers, for the mirrors that keep a
// million of them (kernelmirror, fpmirror): a netip.Prefix holds a
// pointer (the address's zone handle), which the collector scans in
// every entry, and its 32 bytes take the generic hash; an IPv4 prefix as
// one word takes the map's 8-byte fast path.

// Key4 returns IPv4 prefix p as one word: the address above the length.
func Key4(p netip.Prefix) uint64 {
	a := p.Addr().As4()
	return uint64(binary.BigEndian.Uint32(a[:]))<<8 | uint64(p.Bits())
}

// PrefixOfKey4 is the prefix Key4 gave k.
func PrefixOfKey4(k uint64) netip.Prefix {
	var a [4]byte
	binary.BigEndian.PutUint32(a[:], uint32(k>>8))
	return netip.PrefixFrom(netip.AddrFrom4(a), int(k&0xff))
}

// Key6 is an IPv6 prefix as a map key: the address's two halves and the
// length.
type Key6 struct {
	Hi, Lo uint64
	Bits   uint8
}

// Key6Of returns IPv6 prefix p's key.
func Key6Of(p netip.Prefix) Key6 {
	a := p.Addr().As16()
	return Key6{binary.BigEndian.Uint64(a[:8]), binary.BigEndian.Uint64(a[8:]), uint8(p.Bits())}
}

// Prefix is the prefix k names.
func (k Key6) Prefix() netip.Prefix {
	var a [16]byte
	binary.BigEndian.PutUint64(a[:8], k.Hi)
	binary.BigEndian.PutUint64(a[8:], k.Lo)
	return netip.PrefixFrom(netip.AddrFrom16(a), int(k.Bits))
}
