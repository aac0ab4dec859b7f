package ndp

import (
	"encoding/binary"
	"net/netip"

	"github.com/junction-dataplane/junction/packet"
)

// ICMPv6 types of neighbour discovery (RFC 4861 section 4).
const (
	TypeRouterSolicitation    = 133
	TypeRouterAdvertisement   = 134
	TypeNeighborSolicitation  = 135
	TypeNeighborAdvertisement = 136
	TypeRedirect              = 137

	// ProtoICMPv6 is ICMPv6's IPv6 next header.
	ProtoICMPv6 = 58

	// Option types.
	optSourceLLA = 1
	optTargetLLA = 2

	// NA flags (first byte of the reserved word).
	FlagRouter    = 0x80
	FlagSolicited = 0x40
	FlagOverride  = 0x20

	// ndLen is the fixed part of an NS or NA: type, code, checksum, 4
	// reserved/flags bytes, target address.
	ndLen = 24
	// llaOptLen is a link-layer address option for Ethernet.
	llaOptLen = 8
	// frameLen is an NS or NA with one link-layer address option, with
	// its Ethernet header.
	frameLen = packet.EthernetLen + packet.IPv6Len + ndLen + llaOptLen
	// maxOptions bounds the option walk: a solicitation with more
	// options than this is malformed (a flood of tiny options costs
	// nothing more than this).
	maxOptions = 16
)

// Why a frame is not a valid NS or NA (the reasons are counted).
const (
	okND = iota
	errNotND
	errTruncated
	errHopLimit
	errChecksum
	errCode
	errTarget
	errOption
	errDADSource
)

var errNames = [...]string{
	errNotND:     "not nd",
	errTruncated: "truncated",
	errHopLimit:  "hop limit not 255",
	errChecksum:  "bad checksum",
	errCode:      "bad code",
	errTarget:    "multicast target",
	errOption:    "malformed option",
	errDADSource: "bad dad probe",
}

// msg is a parsed neighbour solicitation or advertisement.
type msg struct {
	typ      uint8
	flags    uint8 // NA: router, solicited, override
	src, dst [16]byte
	target   [16]byte
	lla      packet.MAC // the source (NS) or target (NA) link-layer option
	hasLLA   bool
	l3       int // offset of the IPv6 header in the frame
}

// parse validates an NS or NA as RFC 4861 sections 7.1.1 and 7.1.2 ask:
// IPv6 next header 58 with no extension header, hop limit 255, code 0,
// ICMP length >= 24, a correct checksum, a unicast target, options of
// non-zero length within the message, and for an NS from the unspecified
// address (a DAD probe) a solicited-node destination and no source
// link-layer option. It returns okND or the reason.
func parse(f []byte, l3 int, m *msg) int {
	if l3 < packet.EthernetLen || l3 > len(f) || len(f)-l3 < packet.IPv6Len {
		return errNotND
	}
	if binary.BigEndian.Uint16(f[l3-2:]) != packet.EtherTypeIPv6 {
		return errNotND
	}
	h := packet.IPv6(f[l3:])
	if h.Version() != 6 || h.NextHeader() != ProtoICMPv6 {
		return errNotND
	}
	plen := h.PayloadLen()
	if plen > len(h)-packet.IPv6Len {
		return errTruncated
	}
	if plen < 4 {
		return errTruncated
	}
	icmp := h[packet.IPv6Len : packet.IPv6Len+plen]
	t := icmp[0]
	if t != TypeNeighborSolicitation && t != TypeNeighborAdvertisement {
		return errNotND
	}
	if len(icmp) < ndLen {
		return errTruncated
	}
	if h.HopLimit() != 255 {
		return errHopLimit
	}
	if icmp[1] != 0 {
		return errCode
	}
	m.typ, m.l3 = t, l3
	m.src, m.dst = h.Src16(), h.Dst16()
	if !checksumOK(m.src, m.dst, icmp) {
		return errChecksum
	}
	m.flags = icmp[4] & (FlagRouter | FlagSolicited | FlagOverride)
	copy(m.target[:], icmp[8:24])
	if m.target[0] == 0xff {
		return errTarget
	}
	m.hasLLA = false
	want := uint8(optSourceLLA)
	if t == TypeNeighborAdvertisement {
		want = optTargetLLA
	}
	opts := icmp[ndLen:]
	for n := 0; len(opts) > 0; n++ {
		if n == maxOptions || len(opts) < 8 || opts[1] == 0 || int(opts[1])*8 > len(opts) {
			return errOption
		}
		l := int(opts[1]) * 8
		if opts[0] == want {
			if l != llaOptLen {
				return errOption // Ethernet addresses take exactly one unit
			}
			m.lla, m.hasLLA = packet.MAC(opts[2:8]), true
		}
		opts = opts[l:]
	}
	if t == TypeNeighborSolicitation && m.src == ([16]byte{}) {
		// A DAD probe (RFC 4862 5.4): to the target's solicited-node
		// group, without a source link-layer option (7.1.1).
		if m.hasLLA || m.dst != solicitedNode(m.target) {
			return errDADSource
		}
	}
	if t == TypeNeighborAdvertisement && m.dst[0] == 0xff && m.flags&FlagSolicited != 0 {
		return errDADSource // a solicited NA is never multicast (7.1.2)
	}
	return okND
}

// checksumOK verifies an ICMPv6 checksum over the pseudo-header (RFC 4443
// section 2.3).
func checksumOK(src, dst [16]byte, icmp []byte) bool {
	return Checksum(src, dst, icmp) == 0
}

// Checksum is the ICMPv6 checksum of icmp (its checksum field included as
// it is) from src to dst: 0 when the stored checksum is right; with the
// field zeroed, the value to store.
func Checksum(src, dst [16]byte, icmp []byte) uint16 {
	acc := packet.PseudoHeaderSumV6(src, dst, ProtoICMPv6, len(icmp))
	return ^packet.Fold(packet.Sum(icmp, acc))
}

// solicitedNode is the solicited-node multicast group of a (RFC 4291 2.7.1):
// ff02::1:ff00:0/104 with a's low 24 bits.
func solicitedNode(a [16]byte) [16]byte {
	g := [16]byte{0xff, 0x02, 11: 0x01, 12: 0xff}
	g[13], g[14], g[15] = a[13], a[14], a[15]
	return g
}

// multicastMAC is the Ethernet group of an IPv6 multicast address (RFC 2464
// section 7): 33:33 and its low 32 bits.
func multicastMAC(a [16]byte) packet.MAC {
	return packet.MAC{0x33, 0x33, a[12], a[13], a[14], a[15]}
}

// allNodes is ff02::1.
var allNodes = [16]byte{0xff, 0x02, 15: 0x01}

// LinkLocal is the EUI-64 link-local address of mac (RFC 4291 appendix A,
// RFC 2464 section 5): fe80::/64 with mac's bytes around ff:fe and the
// universal/local bit inverted.
func LinkLocal(mac packet.MAC) netip.Addr {
	return netip.AddrFrom16([16]byte{0xfe, 0x80,
		8: mac[0] ^ 0x02, 9: mac[1], 10: mac[2], 11: 0xff, 12: 0xfe, 13: mac[3], 14: mac[4], 15: mac[5]})
}

// build writes an NS or NA with one link-layer address option (unless mac
// option is omitted: withLLA false) into f, which must hold frameLen bytes,
// and returns the frame's length.
func build(f []byte, ethDst, ethSrc packet.MAC, src, dst [16]byte, typ, flags uint8, target [16]byte, lla packet.MAC, withLLA bool) int {
	n := frameLen
	if !withLLA {
		n -= llaOptLen
	}
	f = f[:n]
	copy(f[0:6], ethDst[:])
	copy(f[6:12], ethSrc[:])
	binary.BigEndian.PutUint16(f[12:], packet.EtherTypeIPv6)
	h := packet.IPv6(f[packet.EthernetLen:])
	h.Init()
	h.SetPayloadLen(n - packet.EthernetLen - packet.IPv6Len)
	h.SetNextHeader(ProtoICMPv6)
	h.SetHopLimit(255)
	copy(h[8:24], src[:])
	copy(h[24:40], dst[:])
	icmp := h[packet.IPv6Len:]
	icmp[0], icmp[1], icmp[2], icmp[3] = typ, 0, 0, 0
	icmp[4], icmp[5], icmp[6], icmp[7] = flags, 0, 0, 0
	copy(icmp[8:24], target[:])
	if withLLA {
		o := icmp[ndLen:]
		o[0] = optSourceLLA
		if typ == TypeNeighborAdvertisement {
			o[0] = optTargetLLA
		}
		o[1] = 1
		copy(o[2:8], lla[:])
	}
	binary.BigEndian.PutUint16(icmp[2:], Checksum(src, dst, icmp))
	return n
}

// ourAddrs is a device's IPv6 addresses: its configured prefixes' hosts and
// the link-local address derived from its MAC (unless configured).
type ourAddrs struct {
	prefixes []netip.Prefix
	addrs    [][16]byte
	ll       [16]byte
}

func newOurAddrs(mac packet.MAC, prefixes []netip.Prefix) ourAddrs {
	var o ourAddrs
	hasLL := false
	for _, p := range prefixes {
		if !p.Addr().Is6() || p.Addr().Is4In6() {
			continue
		}
		o.prefixes = append(o.prefixes, p)
		o.addrs = append(o.addrs, p.Addr().As16())
		if p.Addr().IsLinkLocalUnicast() && !hasLL {
			o.ll, hasLL = p.Addr().As16(), true
		}
	}
	if !hasLL {
		o.ll = LinkLocal(mac).As16()
		o.addrs = append(o.addrs, o.ll)
		o.prefixes = append(o.prefixes, netip.PrefixFrom(LinkLocal(mac), 64))
	}
	return o
}

func (o *ourAddrs) has(a [16]byte) bool {
	for i := range o.addrs {
		if o.addrs[i] == a {
			return true
		}
	}
	return false
}

// sourceFor picks the source of a solicitation for target: the address on
// target's prefix, else the link-local one (RFC 4861 7.2.2 prefers the
// address of the packet that prompted it; the on-link one is the same for
// a router's next hops, and link-local is always acceptable).
func (o *ourAddrs) sourceFor(target [16]byte) [16]byte {
	if target[0] == 0xfe && target[1]&0xc0 == 0x80 {
		return o.ll
	}
	t := netip.AddrFrom16(target)
	for i, p := range o.prefixes {
		if p.Contains(t) {
			return o.addrs[i]
		}
	}
	return o.ll
}
