package packet

import (
	"encoding/binary"
	"testing"
)

func TestIPv6Upper(t *testing.T) {
	hdr := func(next uint8, ext ...byte) []byte {
		h := make([]byte, 40, 200)
		h[0] = 0x60
		h[6] = next
		h = append(h, ext...)
		h[4], h[5] = byte((len(h)-40)>>8), byte(len(h)-40)
		return h
	}
	// hop-by-hop (8 bytes) -> fragment (offset 0, M) -> UDP.
	h := hdr(0, 44, 0, 1, 4, 0, 0, 0, 0, 17, 0, 0, 1, 0, 0, 0, 1, 0x12, 0x34, 0x56, 0x78, 0, 8, 0, 0)
	r := IPv6Upper(h)
	if !r.OK || r.Proto != 17 || r.Off != 56 || !r.Frag || r.FragOff != 0 || !r.FragMore {
		t.Fatalf("%+v", r)
	}
	// A non-first fragment.
	h = hdr(44, 17, 0, 0x01, 0x00, 0, 0, 0, 1, 1, 2, 3, 4)
	if r := IPv6Upper(h); !r.OK || r.FragOff != 0x100 {
		t.Fatalf("%+v", r)
	}
	// A chain of destination options that never ends within the packet,
	// and one longer than the bound.
	if r := IPv6Upper(hdr(60, 60, 200, 0, 0, 0, 0, 0, 0)); r.OK {
		t.Fatalf("truncated chain: %+v", r)
	}
	var long []byte
	for i := 0; i < MaxIPv6ExtHeaders+1; i++ {
		long = append(long, 60, 0, 0, 0, 0, 0, 0, 0)
	}
	if r := IPv6Upper(hdr(60, long...)); r.OK {
		t.Fatalf("endless chain: %+v", r)
	}
	if r := IPv6Upper(hdr(58, 128, 0, 0, 0)); !r.OK || r.Proto != 58 || r.Off != 40 {
		t.Fatalf("%+v", r)
	}
}

func FuzzIPv6Upper(f *testing.F) {
	f.Add([]byte{0x60, 0, 0, 0, 0, 16, 0, 64, 39: 0, 44, 0, 0, 0, 0, 0, 0, 0, 17, 0, 0, 0, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		r := IPv6Upper(b)
		if r.OK && (r.Off > r.End || r.End > len(b)) {
			t.Fatalf("%+v beyond %d", r, len(b))
		}
	})
}

// TestFlowHashICMPv6Error: an ICMPv6 error hashes as the flow it quotes,
// so that it reaches the worker tracking that flow.
func TestFlowHashICMPv6Error(t *testing.T) {
	src := [16]byte{0x20, 0x01, 0x0d, 0xb8, 0, 1, 15: 0x10}
	dst := [16]byte{0x20, 0x01, 0x0d, 0xb8, 0, 2, 15: 0x02}
	router := [16]byte{0x20, 0x01, 0x0d, 0xb8, 0, 2, 15: 0x09}
	udp := make([]byte, 14+48)
	udp[12], udp[13] = 0x86, 0xdd
	h := udp[14:]
	h[0], h[6] = 0x60, 17
	copy(h[8:], src[:])
	copy(h[24:], dst[:])
	h[40], h[41], h[42], h[43] = 0x9c, 0x40, 0, 53
	flow := FlowHashFrame(udp, 14)
	// The error travels dst -> src (from a router beyond) and quotes udp.
	e := make([]byte, 14+48)
	e[12], e[13] = 0x86, 0xdd
	eh := e[14:]
	eh[0], eh[6] = 0x60, 58
	copy(eh[8:], router[:])
	copy(eh[24:], src[:])
	eh[40] = 1 // destination unreachable
	e = append(e, h...)
	if got := FlowHashFrame(e, 14); got != flow {
		t.Fatalf("error hashes %#x, its flow %#x", got, flow)
	}
	e[14+40] = 128 // an echo request is its own flow
	if FlowHashFrame(e, 14) == flow {
		t.Fatalf("an echo request hashed as the quoted flow")
	}
}

// TestFlowHashICMPError: an ICMP error hashes as the flow it quotes (the
// quote's tuple, symmetrically: the error travels against the quoted
// packet), so that it reaches the worker tracking that flow; an echo
// request with the same bytes is its own flow.
func TestFlowHashICMPError(t *testing.T) {
	for _, proto := range []uint8{ProtoUDP, ProtoTCP, ProtoICMP} {
		quoted := frame4(0xcb007101, 0xc6336402, 41234, 53, proto) // 203.0.113.1 -> 198.51.100.2
		flow := FlowHashFrame(quoted, EthernetLen)
		// From a router on the way back to the packet's source: its
		// header and 8 bytes quoted.
		e := frame4(0xcb007102, 0xcb007101, uint16(ICMPDestUnreachable)<<8|4, 0, ProtoICMP)
		e = append(e, quoted[EthernetLen:]...)
		IPv4(e[EthernetLen:]).SetTotalLen(len(e) - EthernetLen)
		if got := FlowHashFrame(e, EthernetLen); got != flow {
			t.Errorf("proto %d: error hashes %#x, its flow %#x", proto, got, flow)
		}
		e[EthernetLen+IPv4MinLen] = ICMPTimeExceeded
		if got := FlowHashFrame(e, EthernetLen); got != flow {
			t.Errorf("proto %d: time exceeded hashes %#x, its flow %#x", proto, got, flow)
		}
		e[EthernetLen+IPv4MinLen] = 8 // echo request
		if FlowHashFrame(e, EthernetLen) != FlowHashV4(0xcb007102, 0xcb007101, 0, 0, ProtoICMP) {
			t.Errorf("proto %d: an echo request hashed as its payload", proto)
		}
	}
}

// TestIPv6RoutingHeader: the routing header is found right after the
// fixed header and behind a hop-by-hop header; a packet without one, or
// with one cut short, has none.
func TestIPv6RoutingHeader(t *testing.T) {
	mk := func(hbh bool, rhLen int) []byte {
		h := make([]byte, IPv6Len)
		h[0] = 0x60
		h[ipv6Next] = IPv6Routing
		var ext []byte
		if hbh {
			h[ipv6Next] = IPv6HopByHop
			ext = append(ext, IPv6Routing, 0, 1, 4, 0, 0, 0, 0) // PadN
		}
		rh := []byte{ProtoUDP, 2, 0, 1, 0, 0, 0, 0} // type 0, 1 segment left
		rh = append(rh, make([]byte, 16)...)
		ext = append(ext, rh[:rhLen]...)
		h = append(h, ext...)
		binary.BigEndian.PutUint16(h[ipv6PayLen:], uint16(len(ext)))
		return h
	}
	for _, c := range []struct {
		name string
		h    []byte
		off  int
		ok   bool
	}{
		{"after the fixed header", mk(false, 24), 40, true},
		{"behind hop-by-hop", mk(true, 24), 48, true},
		{"cut short", mk(false, 3), 0, false},
	} {
		off, typ, sl, ok := IPv6RoutingHeader(c.h)
		if ok != c.ok || off != c.off || ok && (typ != 0 || sl != 1) {
			t.Errorf("%s: off %d type %d left %d ok %v, want off %d ok %v", c.name, off, typ, sl, ok, c.off, c.ok)
		}
	}
	udp := mk(false, 24)
	udp[ipv6Next] = ProtoUDP
	if _, _, _, ok := IPv6RoutingHeader(udp); ok {
		t.Errorf("a routing header found in a UDP packet")
	}
}
