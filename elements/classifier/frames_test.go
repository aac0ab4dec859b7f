package classifier

import (
	"encoding/binary"
	"net"
	"net/netip"

	"github.com/google/gopacket"
	"github.com/google/gopacket/layers"
)

// Frames for the tests are built with gopacket from a spec, and the spec
// also says what a correct classifier may see in the frame (truth): the
// tests compare the compiled program against a reference evaluator over
// that truth, never against the program's own header parsing.

const (
	kARP = iota
	kIP4
	kIP6
	kOther // LLDP
	kVLAN  // an 802.1Q-tagged IPv4 frame: not handled, so matches nothing
)

type extHdr struct {
	typ      uint8 // 0 hop-by-hop, 43 routing, 44 fragment, 60 destination options, 51 AH
	units    uint8 // the length field (not for fragment)
	nonFirst bool  // fragment with a non-zero offset
}

type spec struct {
	kind         int
	arpOp        uint16
	proto        uint8
	src, dst     netip.Addr
	sport, dport uint16
	v4frag       int // 0 unfragmented, 1 first fragment, 2 non-first fragment
	v4opts       bool
	ext          []extHdr
	// shortLen, when >= 0, replaces the IPv4 total length or IPv6 payload
	// length with a smaller claim (padding after the IP packet).
	shortLen int
	trunc    int // frame length after truncation; -1 for the whole frame
}

func newSpec(kind int) spec { return spec{kind: kind, shortLen: -1, trunc: -1} }

// truth is what the frame shows; -1 (or false) where it does not.
type truth struct {
	etype        int
	arpOp        int
	ipVer        int
	proto        int // IPv4 protocol or IPv6 fixed next header
	upper        int // upper-layer protocol, -1 when not reachable
	src, dst     netip.Addr
	portsOK      bool
	sport, dport int
}

var (
	macA = net.HardwareAddr{0x02, 0, 0, 0, 0, 1}
	macB = net.HardwareAddr{0x02, 0, 0, 0, 0, 2}
)

func ser(ls ...gopacket.SerializableLayer) []byte {
	buf := gopacket.NewSerializeBuffer()
	if err := gopacket.SerializeLayers(buf, gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true}, ls...); err != nil {
		panic(err)
	}
	return append([]byte(nil), buf.Bytes()...)
}

// l4 returns the L4 layers for proto (a header + 8 payload bytes), and the
// header's length.
func l4(s spec, nl gopacket.NetworkLayer) []gopacket.SerializableLayer {
	pay := gopacket.Payload([]byte("abcdefgh"))
	switch s.proto {
	case 6:
		t := &layers.TCP{SrcPort: layers.TCPPort(s.sport), DstPort: layers.TCPPort(s.dport), Seq: 1, SYN: true, Window: 1000}
		t.SetNetworkLayerForChecksum(nl)
		return []gopacket.SerializableLayer{t, pay}
	case 17:
		u := &layers.UDP{SrcPort: layers.UDPPort(s.sport), DstPort: layers.UDPPort(s.dport)}
		u.SetNetworkLayerForChecksum(nl)
		return []gopacket.SerializableLayer{u, pay}
	case 1:
		return []gopacket.SerializableLayer{&layers.ICMPv4{TypeCode: layers.CreateICMPv4TypeCode(8, 0), Id: 1, Seq: 1}, pay}
	case 58:
		i := &layers.ICMPv6{TypeCode: layers.CreateICMPv6TypeCode(128, 0)}
		i.SetNetworkLayerForChecksum(nl)
		return []gopacket.SerializableLayer{i, gopacket.Payload([]byte{0, 1, 0, 1}), pay}
	}
	// Another protocol: bytes that would read as ports 80 and 53 if a
	// classifier wrongly took them for a TCP/UDP header.
	return []gopacket.SerializableLayer{gopacket.Payload([]byte{0, 80, 0, 53, 1, 2, 3, 4}), pay}
}

func extBytes(e extHdr, next uint8) []byte {
	switch e.typ {
	case 44:
		b := make([]byte, 8)
		b[0] = next
		off := uint16(0)
		if e.nonFirst {
			off = 185
		}
		binary.BigEndian.PutUint16(b[2:], off<<3|1) // M flag set
		binary.BigEndian.PutUint32(b[4:], 0x1234)
		return b
	case 51:
		b := make([]byte, (int(e.units)+2)*4)
		b[0], b[1] = next, e.units
		return b
	}
	b := make([]byte, (int(e.units)+1)*8)
	b[0], b[1] = next, e.units
	if len(b) > 2 {
		b[2] = 1 // PadN option
		b[3] = byte(len(b) - 4)
	}
	return b
}

// build makes the frame for s and what it shows.
func build(s spec) ([]byte, truth) {
	var f []byte
	tr := truth{etype: -1, arpOp: -1, proto: -1, upper: -1, sport: -1, dport: -1}
	eth := &layers.Ethernet{SrcMAC: macA, DstMAC: macB}
	l4off, ipEndClaim, extOff := 0, 0, []int(nil)
	fixedNH := int(s.proto)
	switch s.kind {
	case kARP:
		eth.EthernetType = layers.EthernetTypeARP
		f = ser(eth, &layers.ARP{AddrType: layers.LinkTypeEthernet, Protocol: layers.EthernetTypeIPv4,
			HwAddressSize: 6, ProtAddressSize: 4, Operation: s.arpOp,
			SourceHwAddress: macA, SourceProtAddress: []byte{10, 0, 0, 1},
			DstHwAddress: make([]byte, 6), DstProtAddress: []byte{10, 0, 0, 2}})
	case kIP4, kVLAN:
		ip := &layers.IPv4{Version: 4, TTL: 64, Protocol: layers.IPProtocol(s.proto),
			SrcIP: s.src.AsSlice(), DstIP: s.dst.AsSlice(), Id: 7}
		if s.v4opts {
			ip.Options = []layers.IPv4Option{{OptionType: 1}, {OptionType: 1}, {OptionType: 1}, {OptionType: 0}}
		}
		switch s.v4frag {
		case 1:
			ip.Flags = layers.IPv4MoreFragments
		case 2:
			ip.FragOffset = 185
		}
		ls := []gopacket.SerializableLayer{eth}
		if s.kind == kVLAN {
			eth.EthernetType = layers.EthernetTypeDot1Q
			ls = append(ls, &layers.Dot1Q{VLANIdentifier: 5, Type: layers.EthernetTypeIPv4})
		} else {
			eth.EthernetType = layers.EthernetTypeIPv4
		}
		ls = append(ls, ip)
		f = ser(append(ls, l4(s, ip)...)...)
		if s.kind == kVLAN {
			break
		}
		l4off = 14 + int(f[14]&0xf)*4
		ipEndClaim = len(f)
		if s.shortLen >= 0 {
			binary.BigEndian.PutUint16(f[16:], uint16(s.shortLen))
			ipEndClaim = 14 + s.shortLen
		}
	case kIP6:
		eth.EthernetType = layers.EthernetTypeIPv6
		ip := &layers.IPv6{Version: 6, HopLimit: 64, SrcIP: s.src.AsSlice(), DstIP: s.dst.AsSlice()}
		var ext []byte
		next := s.proto
		off := 54
		for i := len(s.ext) - 1; i >= 0; i-- {
			ext = append(extBytes(s.ext[i], next), ext...)
			next = s.ext[i].typ
		}
		for _, e := range s.ext {
			extOff = append(extOff, off)
			off += len(extBytes(e, 0))
		}
		fixedNH = int(next)
		ip.NextHeader = layers.IPProtocol(next)
		ls := []gopacket.SerializableLayer{eth, ip}
		if len(ext) > 0 {
			ls = append(ls, gopacket.Payload(ext))
		}
		f = ser(append(ls, l4(s, ip)...)...)
		l4off = off
		ipEndClaim = len(f)
		if s.shortLen >= 0 {
			binary.BigEndian.PutUint16(f[18:], uint16(s.shortLen))
			ipEndClaim = 54 + s.shortLen
		}
	case kOther:
		eth.EthernetType = 0x88cc
		f = ser(eth, gopacket.Payload(make([]byte, 46)))
	}

	n := len(f)
	if s.trunc >= 0 && s.trunc < n {
		n = s.trunc
		f = f[:n]
	}
	if n >= 14 {
		tr.etype = int(binary.BigEndian.Uint16(f[12:]))
	}
	switch {
	case s.kind == kARP && n >= 22:
		tr.arpOp = int(s.arpOp)
	case s.kind == kIP4 && n >= 34, s.kind == kIP6 && n >= 54:
		tr.ipVer = 4
		if s.kind == kIP6 {
			tr.ipVer = 6
		}
		tr.src, tr.dst = s.src, s.dst
		tr.proto = fixedNH
		end := min(n, ipEndClaim)
		reach := true
		for i, e := range s.ext {
			need := 2
			if e.typ == 44 {
				need = 8
			}
			if extOff[i]+need > end {
				reach = false
				break
			}
		}
		if !reach {
			break
		}
		tr.upper = int(s.proto)
		nonFirst := s.v4frag == 2
		for _, e := range s.ext {
			nonFirst = nonFirst || e.typ == 44 && e.nonFirst
		}
		if (s.proto == 6 || s.proto == 17) && !nonFirst && l4off+4 <= end {
			tr.portsOK, tr.sport, tr.dport = true, int(s.sport), int(s.dport)
		}
	}
	return f, tr
}

// Hand-made frames for the tables.

func arpFrame(op uint16) []byte {
	s := newSpec(kARP)
	s.arpOp = op
	f, _ := build(s)
	return f
}

func ip4Frame(proto uint8, src, dst string, sport, dport uint16) []byte {
	f, _ := build(ip4Spec(proto, src, dst, sport, dport))
	return f
}

func ip4Spec(proto uint8, src, dst string, sport, dport uint16) spec {
	s := newSpec(kIP4)
	s.proto, s.src, s.dst, s.sport, s.dport = proto, netip.MustParseAddr(src), netip.MustParseAddr(dst), sport, dport
	return s
}

func ip6Frame(proto uint8, src, dst string, sport, dport uint16, ext ...extHdr) []byte {
	f, _ := build(ip6Spec(proto, src, dst, sport, dport, ext...))
	return f
}

func ip6Spec(proto uint8, src, dst string, sport, dport uint16, ext ...extHdr) spec {
	s := newSpec(kIP6)
	s.proto, s.src, s.dst, s.sport, s.dport, s.ext = proto, netip.MustParseAddr(src), netip.MustParseAddr(dst), sport, dport, ext
	return s
}
