package cttest

import (
	"net/netip"

	"github.com/google/gopacket"
	"github.com/google/gopacket/layers"
)

// TCP flag sets for F.Flags.
const (
	FIN = 1 << iota
	SYN
	RST
	PSH
	ACK
	URG
)

// F describes one frame.
type F struct {
	Proto        string // "tcp", "udp", "icmp" (echo request), "icmpreply"
	Src, Dst     string
	Sport, Dport uint16
	Flags        uint8 // TCP
	ID           uint16
	TTL          uint8 // default 64
	Payload      int
	NoUDPSum     bool
	SrcMAC       string
	DstMAC       string
}

var (
	macA = []byte{2, 0, 0, 0, 0, 0xa}
	macB = []byte{2, 0, 0, 0, 0, 0xb}
)

func addr(s string) []byte { a := netip.MustParseAddr(s).As4(); return a[:] }

// Frame serializes f as Ethernet/IPv4/L4 with correct checksums.
func Frame(f F) []byte {
	ttl := f.TTL
	if ttl == 0 {
		ttl = 64
	}
	eth := &layers.Ethernet{SrcMAC: macA, DstMAC: macB, EthernetType: layers.EthernetTypeIPv4}
	ip := &layers.IPv4{Version: 4, IHL: 5, TTL: ttl, Id: 0x1234, SrcIP: addr(f.Src), DstIP: addr(f.Dst)}
	pay := gopacket.Payload(make([]byte, f.Payload))
	for i := range pay {
		pay[i] = byte(i*7 + 3)
	}
	var l4 gopacket.SerializableLayer
	switch f.Proto {
	case "tcp":
		ip.Protocol = layers.IPProtocolTCP
		t := &layers.TCP{SrcPort: layers.TCPPort(f.Sport), DstPort: layers.TCPPort(f.Dport), Seq: 1000, Ack: 2000, Window: 65535,
			FIN: f.Flags&FIN != 0, SYN: f.Flags&SYN != 0, RST: f.Flags&RST != 0, PSH: f.Flags&PSH != 0, ACK: f.Flags&ACK != 0, URG: f.Flags&URG != 0}
		t.SetNetworkLayerForChecksum(ip)
		l4 = t
	case "udp":
		ip.Protocol = layers.IPProtocolUDP
		u := &layers.UDP{SrcPort: layers.UDPPort(f.Sport), DstPort: layers.UDPPort(f.Dport)}
		u.SetNetworkLayerForChecksum(ip)
		l4 = u
	case "icmp", "icmpreply":
		ip.Protocol = layers.IPProtocolICMPv4
		typ := uint8(layers.ICMPv4TypeEchoRequest)
		if f.Proto == "icmpreply" {
			typ = uint8(layers.ICMPv4TypeEchoReply)
		}
		l4 = &layers.ICMPv4{TypeCode: layers.CreateICMPv4TypeCode(typ, 0), Id: f.ID, Seq: 1}
	default:
		panic("cttest: proto " + f.Proto)
	}
	buf := gopacket.NewSerializeBuffer()
	if err := gopacket.SerializeLayers(buf, gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true}, eth, ip, l4, pay); err != nil {
		panic(err)
	}
	out := append([]byte(nil), buf.Bytes()...)
	if f.NoUDPSum && f.Proto == "udp" {
		out[14+20+6], out[14+20+7] = 0, 0
	}
	return out
}

// ICMPError builds an ICMP error (type, code) from src to dst quoting the
// first 28 bytes (or more, up to quote) of the IP packet in frame.
func ICMPError(typ, code uint8, src, dst string, frame []byte, quote int) []byte {
	inner := frame[14:]
	if quote > 0 && quote < len(inner) {
		inner = inner[:quote]
	}
	eth := &layers.Ethernet{SrcMAC: macB, DstMAC: macA, EthernetType: layers.EthernetTypeIPv4}
	ip := &layers.IPv4{Version: 4, IHL: 5, TTL: 64, Protocol: layers.IPProtocolICMPv4, SrcIP: addr(src), DstIP: addr(dst)}
	ic := &layers.ICMPv4{TypeCode: layers.CreateICMPv4TypeCode(typ, code)}
	buf := gopacket.NewSerializeBuffer()
	if err := gopacket.SerializeLayers(buf, gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true}, eth, ip, ic, gopacket.Payload(inner)); err != nil {
		panic(err)
	}
	return append([]byte(nil), buf.Bytes()...)
}

// Decoded is what gopacket makes of a frame, with every checksum verified
// by recomputation.
type Decoded struct {
	IP   *layers.IPv4
	TCP  *layers.TCP
	UDP  *layers.UDP
	ICMP *layers.ICMPv4
	// Inner is the quoted packet of an ICMP error.
	InnerIP  *layers.IPv4
	InnerTCP *layers.TCP
	InnerUDP *layers.UDP
	// ChecksumsOK: IP header, L4 (TCP, UDP unless 0, ICMP over the whole
	// message) and the quoted IP header all verify.
	ChecksumsOK bool
	Bad         string
}

func sum(b []byte) uint32 {
	var s uint32
	for i := 0; i+1 < len(b); i += 2 {
		s += uint32(b[i])<<8 | uint32(b[i+1])
	}
	if len(b)%2 == 1 {
		s += uint32(b[len(b)-1]) << 8
	}
	return s
}

func fold(s uint32) uint16 {
	for s > 0xffff {
		s = s>>16 + s&0xffff
	}
	return uint16(s)
}

func pseudo(src, dst []byte, proto uint8, n int) uint32 {
	return sum(src) + sum(dst) + uint32(proto) + uint32(n)
}

// Decode decodes frame with gopacket and verifies its checksums by a
// straightforward full recomputation.
func Decode(frame []byte) Decoded {
	var d Decoded
	pk := gopacket.NewPacket(frame, layers.LayerTypeEthernet, gopacket.Default)
	d.IP, _ = pk.Layer(layers.LayerTypeIPv4).(*layers.IPv4)
	d.TCP, _ = pk.Layer(layers.LayerTypeTCP).(*layers.TCP)
	d.UDP, _ = pk.Layer(layers.LayerTypeUDP).(*layers.UDP)
	d.ICMP, _ = pk.Layer(layers.LayerTypeICMPv4).(*layers.ICMPv4)
	if d.IP == nil {
		d.Bad = "no IPv4 layer"
		return d
	}
	ipb := frame[14:]
	ihl := int(d.IP.IHL) * 4
	tl := int(d.IP.Length)
	if fold(sum(ipb[:ihl])) != 0xffff {
		d.Bad = "ip header checksum"
		return d
	}
	l4 := ipb[ihl:tl]
	switch {
	case d.TCP != nil:
		if fold(sum(l4)+pseudo(ipb[12:16], ipb[16:20], 6, len(l4))) != 0xffff {
			d.Bad = "tcp checksum"
			return d
		}
	case d.UDP != nil:
		if d.UDP.Checksum != 0 && fold(sum(l4)+pseudo(ipb[12:16], ipb[16:20], 17, len(l4))) != 0xffff {
			d.Bad = "udp checksum"
			return d
		}
	case d.ICMP != nil:
		if fold(sum(l4)) != 0xffff {
			d.Bad = "icmp checksum"
			return d
		}
		if t := d.ICMP.TypeCode.Type(); t != 0 && t != 8 {
			in := l4[8:]
			ip := &layers.IPv4{}
			if err := ip.DecodeFromBytes(in, gopacket.NilDecodeFeedback); err != nil && len(in) >= 20 {
				// a truncated quote: decode the header alone
				_ = ip.DecodeFromBytes(in[:int(in[0]&0xf)*4], gopacket.NilDecodeFeedback)
			}
			d.InnerIP = ip
			ih := int(in[0]&0xf) * 4
			if fold(sum(in[:ih])) != 0xffff {
				d.Bad = "inner ip header checksum"
				return d
			}
			rest := in[ih:]
			switch ip.Protocol {
			case layers.IPProtocolTCP:
				if len(rest) >= 20 {
					d.InnerTCP = &layers.TCP{}
					_ = d.InnerTCP.DecodeFromBytes(rest, gopacket.NilDecodeFeedback)
				} else {
					d.InnerTCP = &layers.TCP{SrcPort: layers.TCPPort(uint16(rest[0])<<8 | uint16(rest[1])),
						DstPort: layers.TCPPort(uint16(rest[2])<<8 | uint16(rest[3]))}
				}
			case layers.IPProtocolUDP:
				d.InnerUDP = &layers.UDP{}
				_ = d.InnerUDP.DecodeFromBytes(rest, gopacket.NilDecodeFeedback)
				if d.InnerUDP.Checksum != 0 && int(d.InnerUDP.Length) == len(rest) &&
					fold(sum(rest)+pseudo(in[12:16], in[16:20], 17, len(rest))) != 0xffff {
					d.Bad = "inner udp checksum"
					return d
				}
			}
		}
	}
	d.ChecksumsOK = true
	return d
}
