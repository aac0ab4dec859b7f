package gen

import (
	"encoding/binary"
	"net/netip"
	"strings"

	"github.com/junction-dataplane/junction/conf"
	"github.com/junction-dataplane/junction/packet"
)

// IPv6 traffic: when src and dst are IPv6, the frames are
// Ethernet/IPv6/UDP (or TCP). The addresses vary in their low 32 bits only
// (a prefix's first 96 bits are kept), so that fill6 rewrites two 32-bit
// words and the port, as fill does for IPv4, and patches the L4 checksum
// (IPv6 has no header checksum) incrementally.

// DefaultSrc6 is the source when dst is IPv6 and src is left at its
// default: an address of 2001:2::/48, the range RFC 5180 reserves for
// benchmarking.
const DefaultSrc6 = "2001:2::1"

// Offsets of the IPv6 template's varying fields.
const (
	l4Off6    = l3Off + packet.IPv6Len
	ip6SrcLo  = l3Off + 8 + 12 // the source address's low 32 bits
	ip6DstLo  = l3Off + 24 + 12
	udpCsum6  = l4Off6 + 6
	tcpCsum6  = l4Off6 + 16
	minUDP6   = l4Off6 + packet.UDPLen
	minTCP6   = l4Off6 + packet.TCPMinLen
	v6Marker  = ":"
	maxHost32 = uint64(1) << 32
)

// isV6 reports whether the config asks for IPv6 traffic.
func (c *Config) isV6() bool {
	return strings.Contains(c.Dst, v6Marker) || strings.Contains(c.Src, v6Marker)
}

// parseRange6 parses an IPv6 address or prefix: the first 96 bits are
// kept, the low 32 vary over the prefix's hosts (a prefix shorter than /96
// uses its first 2^32 addresses); the all-zeros host (the subnet-router
// anycast address) is left out.
func parseRange6(key, s string) (base [16]byte, r addrRange, err error) {
	s = strings.TrimSpace(s)
	if !strings.Contains(s, "/") {
		a, perr := netip.ParseAddr(s)
		if perr != nil || !a.Is6() || a.Is4In6() {
			return base, r, conf.Errorf(key, "bad IPv6 address %q (src and dst must both be IPv4 or both IPv6)", s)
		}
		base = a.As16()
		return base, addrRange{first: binary.BigEndian.Uint32(base[12:]), n: 1}, nil
	}
	p, perr := netip.ParsePrefix(s)
	if perr != nil || !p.Addr().Is6() || p.Addr().Is4In6() {
		return base, r, conf.Errorf(key, "bad IPv6 prefix %q (src and dst must both be IPv4 or both IPv6)", s)
	}
	p = p.Masked()
	base = p.Addr().As16()
	n := maxHost32
	if hb := 128 - p.Bits(); hb < 32 {
		n = uint64(1) << hb
	}
	r = addrRange{first: binary.BigEndian.Uint32(base[12:]), n: n}
	if n >= 2 {
		r.first++
		r.n--
	}
	return base, r, nil
}

// buildTemplate6 is buildTemplate for IPv6.
func (d *Device) buildTemplate6() {
	s := &d.s
	f := d.newFrame(packet.EtherTypeIPv6)
	d.tSrc, d.tDst, d.tSport = s.src.first, s.dst.first, FirstSrcPort
	ip := packet.IPv6(f[l3Off:])
	ip.Init()
	ip.SetPayloadLen(s.size - l4Off6)
	ip.SetNextHeader(s.proto)
	ip.SetHopLimit(64)
	copy(ip[8:24], s.src6[:])
	copy(ip[24:40], s.dst6[:])
	binary.BigEndian.PutUint32(f[ip6SrcLo:], d.tSrc)
	binary.BigEndian.PutUint32(f[ip6DstLo:], d.tDst)
	l4 := f[l4Off6:]
	writeL4(l4, s.proto, d.tSport, DstPort)
	d.l4CsumOff = tcpCsum6
	if d.udp {
		d.l4CsumOff = udpCsum6
	}
	acc := packet.PseudoHeaderSumV6(ip.Src16(), ip.Dst16(), s.proto, len(l4))
	d.setTemplate(f, ^packet.Fold(packet.Sum(l4, acc)))
	d.l4Base = uint32(^d.tL4Csum) + complementSum(d.tSrc, d.tDst) + uint32(^d.tSport)
}

// fill6 is fill for IPv6 (see fill for why it is shaped so).
func (d *Device) fill6(qs *queue, q uint16, b *packet.Batch, n int) int {
	start := len(b.Pkts)
	made := qs.pool.GetRawN(b, n)
	tmpl := d.tmpl
	head := &d.head
	size := len(tmpl)
	rng := qs.rng
	srcFirst, dstFirst := d.s.src.first, d.s.dst.first
	srcN, srcM, dstN, nflows := uint32(d.srcN), d.srcM, d.dstN, qs.nflows
	flow0, stride := qs.flow0, qs.stride
	sport0 := uint32(d.tSport)
	l4Base := d.l4Base
	csOff, udp, index := d.l4CsumOff, d.udp, d.index
	inHead := csOff < headLen
	for _, p := range b.Pkts[start : start+made] {
		buf, f := stamp(p, head)
		r := wyrand(&rng)
		dst := dstFirst + uint32((uint64(uint32(r>>32))*dstN)>>32)
		fl := flow0 + stride*uint32((uint64(uint32(r))*nflows)>>32)
		src, sport := srcFirst, sport0
		if srcN == 1 {
			sport += fl
		} else {
			qt := fastDiv(fl, srcM)
			src += fl - qt*srcN
			sport += qt
		}
		binary.BigEndian.PutUint32(f[ip6SrcLo:], src)
		binary.BigEndian.PutUint32(f[ip6DstLo:], dst)
		binary.BigEndian.PutUint16(f[l4Off6:], uint16(sport))
		l4cs := ^packet.FoldDelta(l4Base + src>>16 + src&0xffff + dst>>16 + dst&0xffff + sport)
		if udp && l4cs == 0 {
			l4cs = 0xffff
		}
		if inHead {
			binary.BigEndian.PutUint16(f[csOff&(headLen-2):], l4cs)
		}
		arrived(p, buf, size, index, q)
	}
	copyTail(b.Pkts[start:start+made], tmpl)
	if !inHead {
		// TCP: the checksum lies past the copied head; recompute its
		// patch from the words written above.
		for _, p := range b.Pkts[start : start+made] {
			f := p.Data
			src, dst := binary.BigEndian.Uint32(f[ip6SrcLo:]), binary.BigEndian.Uint32(f[ip6DstLo:])
			sport := uint32(binary.BigEndian.Uint16(f[l4Off6:]))
			binary.BigEndian.PutUint16(f[csOff:], ^packet.FoldDelta(l4Base+src>>16+src&0xffff+dst>>16+dst&0xffff+sport))
		}
	}
	qs.rng = rng
	return made
}
