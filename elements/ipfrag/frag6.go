package ipfrag

import (
	"encoding/binary"

	"github.com/junction-dataplane/junction/packet"
)

// The IPv6 reassembly annotation. A router must not fragment IPv6 (RFC
// 8200 section 5), so a datagram IP6Reassembler put together for the
// tracker and the NAT leaves again in the pieces its sender chose: as
// Linux's nf_defrag_ipv6 records frag_max_size for ip6_fragment, the
// reassembler writes into the datagram's Packet.Scratch the longest
// fragment's size, the identification and where the fragment header
// stood, and IPFragmenter splits the datagram at that size (or sends it to
// packet too big when the link is narrower). No other element writes
// Scratch; a copy of the packet (Packet.CopyTo, the handoff) keeps it.
//
// Layout of Scratch: [0] frag6Mark, [2:4] the longest fragment's IPv6
// packet length, [4:8] the identification, [8:10] the length of the
// fixed header and the unfragmentable part, [10:12] the offset of the
// Next Header byte that named the fragment header (all from L3).
const frag6Mark = 0xf6

type frag6 struct {
	maxLen, unfrag, nhOff int
	id                    uint32
}

func setFrag6(p *packet.Packet, f frag6) {
	s := p.Scratch[:12]
	s[0], s[1] = frag6Mark, 0
	binary.BigEndian.PutUint16(s[2:], uint16(f.maxLen))
	binary.BigEndian.PutUint32(s[4:], f.id)
	binary.BigEndian.PutUint16(s[8:], uint16(f.unfrag))
	binary.BigEndian.PutUint16(s[10:], uint16(f.nhOff))
}

// getFrag6 reads p's annotation and clears its mark (the packet is being
// fragmented or sent on whole: either way it is done with).
func getFrag6(p *packet.Packet) (f frag6, ok bool) {
	s := p.Scratch[:12]
	if s[0] != frag6Mark {
		return f, false
	}
	s[0] = 0
	return frag6{maxLen: int(binary.BigEndian.Uint16(s[2:])), id: binary.BigEndian.Uint32(s[4:]),
		unfrag: int(binary.BigEndian.Uint16(s[8:])), nhOff: int(binary.BigEndian.Uint16(s[10:]))}, true
}

// fragHeader6 returns the offset, from the start of IPv6 packet h, of
// its fragment header and of the Next Header byte that names it (6: the
// fixed header's), walking the unfragmentable part (hop-by-hop,
// destination options, routing: RFC 8200 section 4.1's order); fo is 0
// when that part is followed by anything else, or when the walk leaves h
// (the fragment header included) or takes more than
// packet.MaxIPv6ExtHeaders headers.
func fragHeader6(h []byte) (fo, nhOff int) {
	nh, nhOff, off := h[6], 6, packet.IPv6Len
	for range packet.MaxIPv6ExtHeaders {
		if off+8 > len(h) {
			return 0, 0
		}
		switch nh {
		case packet.IPv6Fragment:
			return off, nhOff
		case packet.IPv6HopByHop, packet.IPv6DestOpts, packet.IPv6Routing:
		default:
			return 0, 0
		}
		nh, nhOff, off = h[off], off, off+(int(h[off+1])+1)*8
	}
	return 0, 0
}

// isFragment6 reports whether p is an IPv6 packet with a fragment header
// (atomic fragments included). What a packet without extension headers
// pays: the EtherType and the Next Header tests.
func isFragment6(p *packet.Packet) bool {
	d, l3 := p.Data, int(p.L3)
	if l3 < packet.EthernetLen || l3+packet.IPv6Len > len(d) ||
		binary.BigEndian.Uint16(d[l3-2:]) != packet.EtherTypeIPv6 {
		return false
	}
	switch d[l3+6] {
	case packet.IPv6Fragment, packet.IPv6HopByHop, packet.IPv6DestOpts, packet.IPv6Routing:
		fo, _ := fragHeader6(d[l3:])
		return fo != 0
	}
	return false
}

// upperMin is how much of the upper-layer header a first fragment must
// hold (RFC 7112: the whole header chain through the upper-layer header;
// the ports and TCP's flags, what a filter reads).
func upperMin(proto uint8) int {
	switch proto {
	case packet.ProtoTCP:
		return packet.TCPMinLen
	case packet.ProtoUDP, protoICMPv6:
		return 8
	}
	return 0
}

const protoICMPv6 = 58

// hash6Atomic is the flow hash FromDevice would give the packet an atomic
// fragment (h, its fragment header at fo) carries, had it no fragment
// header: the fixed header with the fragment header's Next Header, and
// the ports behind it (packet.FlowHashFrame on a copy of those 44 bytes).
func hash6Atomic(h []byte, fo int) uint32 {
	var f [packet.EthernetLen + packet.IPv6Len + 4]byte
	binary.BigEndian.PutUint16(f[12:], packet.EtherTypeIPv6)
	c := f[packet.EthernetLen:]
	copy(c, h[:packet.IPv6Len])
	c[6] = h[fo]
	binary.BigEndian.PutUint16(c[4:], 4)
	n := len(f)
	if len(h) < fo+8+4 || fo != packet.IPv6Len {
		// No ports, or headers before the fragment header: FromDevice
		// hashes such packets by their first Next Header, without ports.
		c[6], n = h[6], packet.EthernetLen+packet.IPv6Len
		binary.BigEndian.PutUint16(c[4:], 0)
	} else {
		copy(c[packet.IPv6Len:], h[fo+8:fo+12])
	}
	return packet.FlowHashFrame(f[:n], packet.EthernetLen)
}
