package packet

import "encoding/binary"

// MaxIPv6ExtHeaders bounds the extension-header walk: a chain longer than
// this (or one that never ends within the packet) is treated as having no
// known upper-layer protocol.
const MaxIPv6ExtHeaders = 8

// IPv6 extension header numbers walked by IPv6Upper.
const (
	IPv6HopByHop = 0
	IPv6Routing  = 43
	IPv6Fragment = 44
	IPv6DestOpts = 60
	IPv6AH       = 51
	IPv6NoNext   = 59
)

// IPv6L4 is where IPv6Upper found the upper layer.
type IPv6L4 struct {
	Proto uint8 // the upper-layer protocol (valid when OK)
	Off   int   // its offset from the start of the IPv6 header
	End   int   // end of the packet: 40 + payload length, bounded by the frame
	// Frag is set when a fragment header was seen; FragOff is its
	// offset (non-zero: a non-first fragment, with no L4 header) and
	// FragMore its M flag.
	Frag     bool
	FragOff  uint16
	FragMore bool
	// OK is false when the chain was truncated, longer than
	// MaxIPv6ExtHeaders, or ended in ESP or no-next-header.
	OK bool
}

// IPv6Upper walks h's extension headers (hop-by-hop, routing, fragment,
// destination options, AH) to the upper-layer protocol. h starts with the
// IPv6 fixed header (at least 40 bytes). It allocates nothing and reads no
// byte beyond h or the payload length.
func IPv6Upper(h []byte) IPv6L4 {
	var r IPv6L4
	if len(h) < IPv6Len {
		return r
	}
	nh := h[ipv6Next]
	r.End = min(IPv6Len+int(binary.BigEndian.Uint16(h[ipv6PayLen:])), len(h))
	off := IPv6Len
	for i := 0; ; i++ {
		switch nh {
		case IPv6HopByHop, IPv6Routing, IPv6DestOpts, IPv6AH, IPv6Fragment:
		default:
			r.Proto, r.Off, r.OK = nh, off, nh != IPv6NoNext && off <= r.End
			return r
		}
		if i == MaxIPv6ExtHeaders || off+8 > r.End {
			return r
		}
		switch nh {
		case IPv6AH:
			nh, off = h[off], off+(int(h[off+1])+2)*4
		case IPv6Fragment:
			fo := binary.BigEndian.Uint16(h[off+2:])
			r.Frag = true
			r.FragOff |= fo & 0xfff8
			r.FragMore = r.FragMore || fo&1 != 0
			nh, off = h[off], off+8
		default:
			nh, off = h[off], off+(int(h[off+1])+1)*8
		}
	}
}

// IPv6RoutingHeader returns the offset, from the start of the IPv6 header
// h, of the first Routing header in h's extension-header chain, with its
// routing type and segments left; ok is false when the chain (walked as
// IPv6Upper walks it) holds none whose first 4 bytes are in the packet.
// It allocates nothing.
func IPv6RoutingHeader(h []byte) (off int, typ, segLeft uint8, ok bool) {
	if len(h) < IPv6Len {
		return 0, 0, 0, false
	}
	nh := h[ipv6Next]
	end := min(IPv6Len+int(binary.BigEndian.Uint16(h[ipv6PayLen:])), len(h))
	off = IPv6Len
	for i := 0; i <= MaxIPv6ExtHeaders; i++ {
		switch nh {
		case IPv6Routing:
			if off+4 > end {
				return 0, 0, 0, false
			}
			return off, h[off+2], h[off+3], true
		case IPv6HopByHop, IPv6DestOpts, IPv6AH, IPv6Fragment:
		default:
			return 0, 0, 0, false
		}
		if off+8 > end {
			return 0, 0, 0, false
		}
		switch nh {
		case IPv6AH:
			nh, off = h[off], off+(int(h[off+1])+2)*4
		case IPv6Fragment:
			nh, off = h[off], off+8
		default:
			nh, off = h[off], off+(int(h[off+1])+1)*8
		}
	}
	return 0, 0, 0, false
}
