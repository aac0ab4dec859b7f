package nat

import (
	"encoding/binary"

	"github.com/junction-dataplane/junction/elements/conntrack"
	"github.com/junction-dataplane/junction/packet"
)

// The rewrites below patch checksums incrementally (RFC 1624 eqn. 3 through
// packet.UpdateChecksum16/32), which equals a full recomputation, so the
// order in which DNAT, DecTTL and SNAT touch a header does not change the
// bytes: FastTrack's one-step rewrite (which calls the same functions)
// produces exactly what the slow path does.

// SetDst rewrites the destination address and port of IPv4 packet h (header
// at h[0], total length already checked by Conntrack) to addr:port.
func SetDst(h []byte, addr uint32, port uint16) { setEndpoint(h, 16, 2, addr, port) }

// SetSrc rewrites the source address and port.
func SetSrc(h []byte, addr uint32, port uint16) { setEndpoint(h, 12, 0, addr, port) }

// setEndpoint rewrites the address at aoff and, for TCP and UDP, the port
// at poff of the L4 header (ICMP echo: the identifier), patching the IP
// header checksum and the L4 checksum (whose pseudo-header covers the
// address). A UDP checksum of 0 means "none" and stays 0; a computed 0 is
// sent as 0xffff (RFC 768).
//
// The address's difference is summed once and goes into both checksums,
// and the L4 checksum takes the address's and the port's differences in
// one fold (packet.PatchChecksum: the same bytes as patching them one after
// the other; TestSetEndpointStepwise checks it).
func setEndpoint(h []byte, aoff, poff int, addr uint32, port uint16) {
	old := binary.BigEndian.Uint32(h[aoff:])
	ihl := int(h[0]&0x0f) * 4
	tl := int(binary.BigEndian.Uint16(h[2:]))
	l4 := h[ihl:tl]
	da := packet.ChecksumDelta32(old, addr)
	if old != addr {
		binary.BigEndian.PutUint32(h[aoff:], addr)
		binary.BigEndian.PutUint16(h[10:], packet.PatchChecksum(binary.BigEndian.Uint16(h[10:]), da))
	}
	switch h[9] {
	case packet.ProtoTCP:
		op := binary.BigEndian.Uint16(l4[poff:])
		cs := packet.PatchChecksum(binary.BigEndian.Uint16(l4[16:]), da+packet.ChecksumDelta16(op, port))
		binary.BigEndian.PutUint16(l4[poff:], port)
		binary.BigEndian.PutUint16(l4[16:], cs)
	case packet.ProtoUDP:
		cs := binary.BigEndian.Uint16(l4[6:])
		op := binary.BigEndian.Uint16(l4[poff:])
		binary.BigEndian.PutUint16(l4[poff:], port)
		if cs != 0 {
			cs = packet.PatchChecksum(cs, da+packet.ChecksumDelta16(op, port))
			if cs == 0 {
				cs = 0xffff
			}
			binary.BigEndian.PutUint16(l4[6:], cs)
		}
	case packet.ProtoICMP:
		// Echo: the identifier plays the port (no pseudo-header).
		if t := l4[0]; t == packet.ICMPEchoRequest || t == packet.ICMPEchoReply {
			op := binary.BigEndian.Uint16(l4[4:])
			if op != port {
				binary.BigEndian.PutUint16(l4[4:], port)
				binary.BigEndian.PutUint16(l4[2:], packet.UpdateChecksum16(binary.BigEndian.Uint16(l4[2:]), op, port))
			}
		}
	}
}

// Manip kinds: which endpoint a NAT element rewrites. DNAT rewrites
// destinations (it sits before routing), SNAT sources (after routing),
// whatever the direction, as Linux's PREROUTING/POSTROUTING manips do.
const (
	manipDst = iota
	manipSrc
)

// ApplyDst performs the destination rewrite flow c calls for in direction
// dir (original: the DNAT target; reply: back to the SNAT'd host) and
// reports whether it changed anything.
func ApplyDst(h []byte, c *conntrack.Conn, dir uint8) bool {
	if dir == 0 {
		if c.Flags&conntrack.FlagDNAT == 0 {
			return false
		}
		SetDst(h, c.T[1].Src, c.T[1].Sport)
		return true
	}
	if c.Flags&conntrack.FlagSNAT == 0 {
		return false
	}
	SetDst(h, c.T[0].Src, c.T[0].Sport)
	return true
}

// ApplySrc performs the source rewrite (original: the SNAT address and
// port; reply: back to the public address of a DNAT'd service).
func ApplySrc(h []byte, c *conntrack.Conn, dir uint8) bool {
	if dir == 0 {
		if c.Flags&conntrack.FlagSNAT == 0 {
			return false
		}
		SetSrc(h, c.T[1].Dst, c.T[1].Dport)
		return true
	}
	if c.Flags&conntrack.FlagDNAT == 0 {
		return false
	}
	SetSrc(h, c.T[0].Dst, c.T[0].Dport)
	return true
}

// applyICMPError translates an ICMP error about flow c (it travels in
// direction dir, the quoted packet went the other way): the outer header
// gets this element's manip as any packet of direction dir, and the quoted
// header the inverse manip, so that the host receiving the error
// recognises its own packet. The ICMP checksum is recomputed over the
// message (errors are rare and short; Conntrack checked it verified).
func applyICMPError(h []byte, c *conntrack.Conn, dir uint8, kind int) bool {
	var changed bool
	if kind == manipDst {
		changed = ApplyDst(h, c, dir)
	} else {
		changed = ApplySrc(h, c, dir)
	}
	ihl := int(h[0]&0x0f) * 4
	tl := int(binary.BigEndian.Uint16(h[2:]))
	icmp := h[ihl:tl]
	in := icmp[packet.ICMPLen:]
	iihl := int(in[0]&0x0f) * 4
	// The quoted packet travelled in direction 1-dir: the outer
	// destination corresponds to its source, and vice versa.
	qdir := 1 - dir
	var want conntrack.Tuple // what the quoted endpoint must become
	var aoff, poff int
	if kind == manipDst {
		// Outer dst rewritten → quoted src.
		aoff, poff = 12, 0
		if qdir == 0 {
			want.Src, want.Sport = c.T[0].Src, c.T[0].Sport // untranslated original source
		} else {
			want.Src, want.Sport = c.T[1].Src, c.T[1].Sport
		}
		if qdir == 0 && c.Flags&conntrack.FlagSNAT == 0 || qdir == 1 && c.Flags&conntrack.FlagDNAT == 0 {
			return changed
		}
	} else {
		aoff, poff = 16, 2
		if qdir == 0 {
			want.Src, want.Sport = c.T[0].Dst, c.T[0].Dport
		} else {
			want.Src, want.Sport = c.T[1].Dst, c.T[1].Dport
		}
		if qdir == 0 && c.Flags&conntrack.FlagDNAT == 0 || qdir == 1 && c.Flags&conntrack.FlagSNAT == 0 {
			return changed
		}
	}
	setQuoted(in, iihl, aoff, poff, want.Src, want.Sport)
	binary.BigEndian.PutUint16(icmp[2:], 0)
	binary.BigEndian.PutUint16(icmp[2:], packet.Checksum(icmp))
	return true
}

// setQuoted rewrites an endpoint of a quoted (possibly truncated) packet:
// its IP header checksum, the port, and the L4 checksum if quoted.
func setQuoted(in []byte, ihl, aoff, poff int, addr uint32, port uint16) {
	old := binary.BigEndian.Uint32(in[aoff:])
	binary.BigEndian.PutUint32(in[aoff:], addr)
	binary.BigEndian.PutUint16(in[10:], packet.UpdateChecksum32(binary.BigEndian.Uint16(in[10:]), old, addr))
	l4 := in[ihl:]
	switch in[9] {
	case packet.ProtoTCP, packet.ProtoUDP:
		op := binary.BigEndian.Uint16(l4[poff:])
		binary.BigEndian.PutUint16(l4[poff:], port)
		csOff := 16
		if in[9] == packet.ProtoUDP {
			csOff = 6
		}
		if len(l4) >= csOff+2 {
			cs := binary.BigEndian.Uint16(l4[csOff:])
			if in[9] == packet.ProtoUDP && cs == 0 {
				return
			}
			cs = packet.PatchChecksum(cs, packet.ChecksumDelta32(old, addr)+packet.ChecksumDelta16(op, port))
			if in[9] == packet.ProtoUDP && cs == 0 {
				cs = 0xffff
			}
			binary.BigEndian.PutUint16(l4[csOff:], cs)
		}
	case packet.ProtoICMP:
		op := binary.BigEndian.Uint16(l4[4:])
		binary.BigEndian.PutUint16(l4[4:], port)
		binary.BigEndian.PutUint16(l4[2:], packet.UpdateChecksum16(binary.BigEndian.Uint16(l4[2:]), op, port))
	}
}
