package ip

import (
	"encoding/binary"
	"net"
	"net/netip"
	"testing"

	"github.com/google/gopacket"
	"github.com/google/gopacket/layers"
	"github.com/junction-dataplane/junction/elements/elementtest"
)

var (
	macA = net.HardwareAddr{0x02, 0, 0, 0, 0, 0x0a}
	macB = net.HardwareAddr{0x02, 0, 0, 0, 0, 0x0b}
)

// frameOpts describe a test frame built by gopacket (an independent encoder).
type frameOpts struct {
	src, dst string
	ttl      uint8
	proto    layers.IPProtocol // UDP by default
	icmpType uint8             // for proto ICMP
	payload  int               // L4 payload bytes
	options  bool              // add 4 bytes of IP options (IHL 6)
	flags    layers.IPv4Flag
	fragOff  uint16
	dstMAC   net.HardwareAddr
	pad      int // Ethernet padding after the IP packet
}

// mkFrame serializes Ethernet/IPv4/(UDP|ICMP|TCP)/payload with correct
// lengths and checksums.
func mkFrame(t testing.TB, o frameOpts) []byte {
	t.Helper()
	if o.src == "" {
		o.src = "10.0.0.1"
	}
	if o.dst == "" {
		o.dst = "192.168.1.1"
	}
	if o.ttl == 0 {
		o.ttl = 64
	}
	if o.proto == 0 {
		o.proto = layers.IPProtocolUDP
	}
	if o.dstMAC == nil {
		o.dstMAC = macB
	}
	eth := &layers.Ethernet{SrcMAC: macA, DstMAC: o.dstMAC, EthernetType: layers.EthernetTypeIPv4}
	ip := &layers.IPv4{Version: 4, TTL: o.ttl, Protocol: o.proto, Id: 0x1234, Flags: o.flags,
		FragOffset: o.fragOff, SrcIP: net.ParseIP(o.src).To4(), DstIP: net.ParseIP(o.dst).To4()}
	if o.options {
		ip.Options = []layers.IPv4Option{{OptionType: 1}, {OptionType: 1}, {OptionType: 1}, {OptionType: 0}}
	}
	pl := make([]byte, o.payload)
	for i := range pl {
		pl[i] = byte(0xa0 + i)
	}
	var ls []gopacket.SerializableLayer
	ls = append(ls, eth, ip)
	switch o.proto {
	case layers.IPProtocolUDP:
		u := &layers.UDP{SrcPort: 4000, DstPort: 53}
		u.SetNetworkLayerForChecksum(ip)
		ls = append(ls, u)
	case layers.IPProtocolTCP:
		tc := &layers.TCP{SrcPort: 4000, DstPort: 80, Seq: 7, SYN: true, Window: 1000}
		tc.SetNetworkLayerForChecksum(ip)
		ls = append(ls, tc)
	case layers.IPProtocolICMPv4:
		ls = append(ls, &layers.ICMPv4{TypeCode: layers.CreateICMPv4TypeCode(o.icmpType, 0), Id: 1, Seq: 2})
	}
	ls = append(ls, gopacket.Payload(pl))
	buf := gopacket.NewSerializeBuffer()
	if err := gopacket.SerializeLayers(buf, gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true}, ls...); err != nil {
		t.Fatal(err)
	}
	f := append([]byte(nil), buf.Bytes()...)
	return append(f, make([]byte, o.pad)...)
}

// refChecksum is a plain RFC 1071 checksum, written independently of
// package packet's, to check its results.
func refChecksum(b []byte) uint16 {
	var s uint32
	for i := 0; i+1 < len(b); i += 2 {
		s += uint32(b[i])<<8 | uint32(b[i+1])
	}
	if len(b)%2 == 1 {
		s += uint32(b[len(b)-1]) << 8
	}
	for s > 0xffff {
		s = s>>16 + s&0xffff
	}
	return ^uint16(s)
}

// fixIPChecksum recomputes the IPv4 header checksum at offset 14.
func fixIPChecksum(f []byte) []byte {
	ihl := int(f[14]&0xf) * 4
	f[24], f[25] = 0, 0
	binary.BigEndian.PutUint16(f[24:], refChecksum(f[14:14+ihl]))
	return f
}

// edit returns a copy of f changed by fn.
func edit(f []byte, fn func(f []byte) []byte) []byte {
	return fn(append([]byte(nil), f...))
}

func newBenchHarness(b *testing.B, typ string, cfg any) *elementtest.Harness {
	return elementtest.New(b, typ, cfg, &elementtest.Options{Sink: true})
}

func u32(a netip.Addr) uint32 { b := a.As4(); return binary.BigEndian.Uint32(b[:]) }

func addrU32(v uint32) netip.Addr {
	var b [4]byte
	binary.BigEndian.PutUint32(b[:], v)
	return netip.AddrFrom4(b)
}
