package fastpath

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand"
	"net"
	"net/netip"
	"sync"
	"testing"

	"github.com/google/gopacket"
	"github.com/google/gopacket/layers"

	"github.com/junction-dataplane/junction/packet"
)

// TCP flag bits.
const (
	fin = 0x01
	syn = 0x02
	rst = 0x04
	psh = 0x08
	ack = 0x10
)

var (
	natDstMAC = [6]byte{0x02, 0x77, 0x00, 0x00, 0x00, 0x01}
	natSrcMAC = [6]byte{0x02, 0x77, 0x00, 0x00, 0x00, 0x02}
)

// pkt describes a test packet; frame builds it with gopacket, checksums
// computed by gopacket.
type pkt struct {
	proto        uint8
	src, dst     string
	sport, dport uint16 // ICMP: the identifier is sport
	flags        uint8  // TCP
	icmpType     uint8
	ttl          uint8
	payload      int
}

func (p pkt) frame(tb testing.TB) []byte {
	tb.Helper()
	eth := &layers.Ethernet{SrcMAC: net.HardwareAddr(peerMAC[:]), DstMAC: net.HardwareAddr(ourMAC[:]), EthernetType: layers.EthernetTypeIPv4}
	ip := &layers.IPv4{Version: 4, IHL: 5, TOS: 0x10, Id: 0x1c46, Flags: layers.IPv4DontFragment, TTL: p.ttl,
		Protocol: layers.IPProtocol(p.proto), SrcIP: net.IP(netip.MustParseAddr(p.src).AsSlice()), DstIP: net.IP(netip.MustParseAddr(p.dst).AsSlice())}
	payload := make([]byte, p.payload)
	for i := range payload {
		payload[i] = byte(i*13 + 5)
	}
	var l4 gopacket.SerializableLayer
	switch p.proto {
	case protoTCP:
		tcp := &layers.TCP{SrcPort: layers.TCPPort(p.sport), DstPort: layers.TCPPort(p.dport), Seq: 0x01020304, Ack: 0x0a0b0c0d, Window: 0xfaf0,
			FIN: p.flags&fin != 0, SYN: p.flags&syn != 0, RST: p.flags&rst != 0, PSH: p.flags&psh != 0, ACK: p.flags&ack != 0}
		tcp.SetNetworkLayerForChecksum(ip)
		l4 = tcp
	case protoUDP:
		udp := &layers.UDP{SrcPort: layers.UDPPort(p.sport), DstPort: layers.UDPPort(p.dport)}
		udp.SetNetworkLayerForChecksum(ip)
		l4 = udp
	case protoICMP:
		l4 = &layers.ICMPv4{TypeCode: layers.CreateICMPv4TypeCode(p.icmpType, 0), Id: p.sport, Seq: 0x4321}
	default:
		tb.Fatalf("protocol %d", p.proto)
	}
	buf := gopacket.NewSerializeBuffer()
	if err := gopacket.SerializeLayers(buf, gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true}, eth, ip, l4, gopacket.Payload(payload)); err != nil {
		tb.Fatal(err)
	}
	b := append([]byte(nil), buf.Bytes()...)
	// Without gopacket's padding to 60 bytes: tests add their own.
	b = b[:14+int(binary.BigEndian.Uint16(b[16:]))]
	// gopacket sends a computed UDP checksum of 0 as is; it means "none".
	if p.proto == protoUDP && b[40] == 0 && b[41] == 0 {
		b[40], b[41] = 0xff, 0xff
	}
	return b
}

func (p pkt) key(ifindex int) FlowKey {
	k := FlowKey{Ifindex: ifindex, Proto: p.proto, Src: netip.MustParseAddr(p.src), Dst: netip.MustParseAddr(p.dst), Sport: p.sport, Dport: p.dport}
	if p.proto == protoICMP {
		k.Dport = p.sport
	}
	return k
}

// setFlow installs k -> a and returns the slot.
func (f *fixture) setFlow(k FlowKey, a FlowAction) int {
	f.tb.Helper()
	slot, err := f.t.SetFlow(k, a)
	if err != nil {
		f.tb.Fatalf("SetFlow(%+v): %v", k, err)
	}
	return slot
}

// wantFlow runs in, which must hit flow k -> a, and checks the output
// (checkFlowOut).
func (f *fixture) wantFlow(name string, in []byte, k FlowKey, a FlowAction) {
	f.tb.Helper()
	fwd, out := f.run(in)
	if !fwd {
		f.tb.Errorf("%s: slow path, want the flow", name)
		return
	}
	if err := checkFlowOut(in, out, k, a); err != nil {
		f.tb.Errorf("%s: %v\n in %x\nout %x", name, err, in, out)
	}
}

// wantRouted runs in, which must take the route path (forwarded as
// forwarded() says).
func (f *fixture) wantRouted(name string, in []byte, dst, src [6]byte) {
	f.wantForwarded(name, in, dst, src)
}

// checkFlowOut checks every byte of out, the program's output for in
// with flow k -> a: decoded by gopacket, each field as the rewrite sets
// it or as in has it; the IPv4 and L4 checksums equal to a computation
// from scratch (a UDP checksum that was 0 stays 0, and a computed 0 is
// 0xffff); payload and padding unchanged; and out equal, byte for byte,
// to refRewrite (FastTrack's algorithm).
func checkFlowOut(in, out []byte, k FlowKey, a FlowAction) error {
	if len(out) != len(in) {
		return fmt.Errorf("length %d, want %d", len(out), len(in))
	}
	tl := int(binary.BigEndian.Uint16(in[16:]))
	var want gopacket.LayerType
	switch k.Proto {
	case protoTCP:
		want = layers.LayerTypeTCP
	case protoUDP:
		want = layers.LayerTypeUDP
	case protoICMP:
		want = layers.LayerTypeICMPv4
	}
	dout, err := decode(out)
	if err != nil {
		return fmt.Errorf("decoding the output: %v", err)
	}
	din, err := decode(in)
	if err != nil {
		return fmt.Errorf("decoding the input: %v", err)
	}
	if !dout.has(want) || !din.has(want) {
		return fmt.Errorf("output decodes as %v, input as %v", dout.types, din.types)
	}
	eth, ip, ipIn := &dout.eth, &dout.ip, &din.ip
	if !bytes.Equal(eth.DstMAC, a.EthDst[:]) || !bytes.Equal(eth.SrcMAC, a.EthSrc[:]) || eth.EthernetType != layers.EthernetTypeIPv4 {
		return fmt.Errorf("Ethernet %v -> %v type %v", eth.SrcMAC, eth.DstMAC, eth.EthernetType)
	}
	as, ad := a.Src.As4(), a.Dst.As4()
	if !ip.SrcIP.Equal(net.IP(as[:])) || !ip.DstIP.Equal(net.IP(ad[:])) {
		return fmt.Errorf("addresses %v -> %v, want %v -> %v", ip.SrcIP, ip.DstIP, a.Src, a.Dst)
	}
	if ip.TTL != ipIn.TTL-a.TTLDec {
		return fmt.Errorf("TTL %d, want %d - %d", ip.TTL, ipIn.TTL, a.TTLDec)
	}
	if ip.Version != 4 || ip.IHL != 5 || ip.TOS != ipIn.TOS || ip.Length != ipIn.Length || ip.Id != ipIn.Id ||
		ip.Flags != ipIn.Flags || ip.FragOffset != ipIn.FragOffset || ip.Protocol != ipIn.Protocol {
		return fmt.Errorf("IPv4 header fields changed: %+v", ip)
	}
	// The IPv4 header checksum, from scratch.
	h := append([]byte(nil), out[14:34]...)
	h[10], h[11] = 0, 0
	if c := csum(h); ip.Checksum != c {
		return fmt.Errorf("IPv4 checksum %#04x, from scratch %#04x", ip.Checksum, c)
	}
	l4, l4In := out[34:14+tl], in[34:14+tl]
	var cs, l4len int // checksum offset in l4, bytes of header compared separately
	switch k.Proto {
	case protoTCP:
		tcp := &dout.tcp
		if uint16(tcp.SrcPort) != a.Sport || uint16(tcp.DstPort) != a.Dport {
			return fmt.Errorf("TCP ports %d -> %d, want %d -> %d", tcp.SrcPort, tcp.DstPort, a.Sport, a.Dport)
		}
		cs, l4len = 16, 20
	case protoUDP:
		udp := &dout.udp
		if uint16(udp.SrcPort) != a.Sport || uint16(udp.DstPort) != a.Dport {
			return fmt.Errorf("UDP ports %d -> %d, want %d -> %d", udp.SrcPort, udp.DstPort, a.Sport, a.Dport)
		}
		cs, l4len = 6, 8
	case protoICMP:
		icmp, icmpIn := &dout.icmp, &din.icmp
		if icmp.Id != a.Sport || icmp.Seq != icmpIn.Seq || icmp.TypeCode != icmpIn.TypeCode {
			return fmt.Errorf("ICMP %v id %d seq %d, want %v id %d seq %d", icmp.TypeCode, icmp.Id, icmp.Seq, icmpIn.TypeCode, a.Sport, icmpIn.Seq)
		}
		cs, l4len = 2, 8
	}
	// L4 header bytes other than ports/identifier and checksum.
	for i := 0; i < l4len; i++ {
		port := (k.Proto != protoICMP && i < 4) || (k.Proto == protoICMP && (i == 4 || i == 5))
		if !port && i != cs && i != cs+1 && l4[i] != l4In[i] {
			return fmt.Errorf("L4 header byte %d changed: %#02x, was %#02x", i, l4[i], l4In[i])
		}
	}
	// Payload and Ethernet padding.
	if !bytes.Equal(out[34+l4len:], in[34+l4len:]) {
		return fmt.Errorf("payload or padding changed")
	}
	// The L4 checksum, from scratch.
	got := binary.BigEndian.Uint16(l4[cs:])
	seg := append([]byte(nil), l4...)
	seg[cs], seg[cs+1] = 0, 0
	var c uint16
	if k.Proto == protoICMP {
		c = csum(pad(seg))
	} else {
		c = csum(append(pseudo(out, k.Proto, len(seg)), pad(seg)...))
	}
	switch {
	case k.Proto == protoUDP && binary.BigEndian.Uint16(l4In[cs:]) == 0:
		if got != 0 {
			return fmt.Errorf("UDP checksum %#04x, was 0 (none)", got)
		}
	case k.Proto == protoUDP && c == 0:
		if got != 0xffff {
			return fmt.Errorf("UDP checksum %#04x, from scratch 0 (sent as 0xffff)", got)
		}
	default:
		if got != c {
			return fmt.Errorf("L4 checksum %#04x, from scratch %#04x", got, c)
		}
	}
	if w := refRewrite(in, k, a); !bytes.Equal(out, w) {
		return fmt.Errorf("output differs from FastTrack's rewrite:\n got %x\nwant %x", out, w)
	}
	return nil
}

// decoded is a frame decoded by gopacket, down to the L4 header.
type decoded struct {
	eth   layers.Ethernet
	ip    layers.IPv4
	tcp   layers.TCP
	udp   layers.UDP
	icmp  layers.ICMPv4
	pl    gopacket.Payload
	types []gopacket.LayerType
}

func (d *decoded) has(t gopacket.LayerType) bool {
	for _, x := range d.types {
		if x == t {
			return true
		}
	}
	return false
}

// decode decodes f; what follows the L4 header (DNS for port 53...) is
// not decoded.
func decode(f []byte) (*decoded, error) {
	d := &decoded{}
	p := gopacket.NewDecodingLayerParser(layers.LayerTypeEthernet, &d.eth, &d.ip, &d.tcp, &d.udp, &d.icmp, &d.pl)
	p.IgnoreUnsupported = true
	err := p.DecodeLayers(f, &d.types)
	return d, err
}

// pseudo is the TCP/UDP pseudo-header of frame f for an L4 length n.
func pseudo(f []byte, proto uint8, n int) []byte {
	p := make([]byte, 12)
	copy(p, f[26:34])
	p[9] = proto
	binary.BigEndian.PutUint16(p[10:], uint16(n))
	return p
}

// pad appends a zero byte to an odd-length b.
func pad(b []byte) []byte {
	if len(b)%2 == 1 {
		return append(b, 0)
	}
	return b
}

// refRewrite is the rewrite FastTrack applies in userspace
// (packet.RewriteFlow), then the MACs: the kernel's must match it byte for
// byte.
func refRewrite(in []byte, k FlowKey, a FlowAction) []byte {
	w := append([]byte(nil), in...)
	h := w[14:]
	tl := int(binary.BigEndian.Uint16(h[2:]))
	u32 := func(x netip.Addr) uint32 { b := x.As4(); return binary.BigEndian.Uint32(b[:]) }
	packet.RewriteFlow(h, h[20:tl], k.Proto, u32(k.Src), u32(k.Dst), k.Sport, k.Dport, u32(a.Src), u32(a.Dst), a.Sport, a.Dport, a.TTLDec)
	copy(w[0:], a.EthDst[:])
	copy(w[6:], a.EthSrc[:])
	return w
}

// natAction is a DNAT+SNAT action out of ifindex 9.
func natAction(src, dst string, sport, dport uint16, ttlDec uint8) FlowAction {
	return FlowAction{Ifindex: 9, EthDst: natDstMAC, EthSrc: natSrcMAC, Src: netip.MustParseAddr(src), Dst: netip.MustParseAddr(dst),
		Sport: sport, Dport: dport, TTLDec: ttlDec}
}

// udpZeroResult returns a UDP frame for p whose checksum, after the
// rewrite k -> a, computes to 0 from scratch: the last two payload bytes
// are chosen so.
func udpZeroResult(tb testing.TB, p pkt, k FlowKey, a FlowAction) []byte {
	tb.Helper()
	if p.payload < 2 || p.payload%2 != 0 {
		tb.Fatal("udpZeroResult needs an even payload >= 2")
	}
	in := p.frame(tb)
	n := len(in)
	in[n-2], in[n-1] = 0, 0
	// The rewritten datagram with checksum field 0 and those bytes 0.
	w := append([]byte(nil), in...)
	as, ad := a.Src.As4(), a.Dst.As4()
	copy(w[26:], as[:])
	copy(w[30:], ad[:])
	binary.BigEndian.PutUint16(w[34:], a.Sport)
	binary.BigEndian.PutUint16(w[36:], a.Dport)
	w[40], w[41] = 0, 0
	c := csum(append(pseudo(w, protoUDP, n-34), w[34:]...)) // = ~fold(S)
	// Payload word x with fold(S + x) = 0xffff: x = ~fold(S) = c.
	binary.BigEndian.PutUint16(in[n-2:], c)
	// The input's own checksum, from scratch.
	in[40], in[41] = 0, 0
	ci := csum(append(pseudo(in, protoUDP, n-34), in[34:]...))
	if ci == 0 {
		ci = 0xffff
	}
	binary.BigEndian.PutUint16(in[40:], ci)
	return in
}

func TestFlowHits(t *testing.T) {
	f := newFixture(t)
	// TCP: DNAT and SNAT, TTL - 1; ACK, ACK|PSH; Ethernet padding.
	tcp := pkt{proto: protoTCP, src: "192.168.1.10", dst: "203.0.113.5", sport: 40000, dport: 80, flags: ack, ttl: 64, payload: 37}
	tk, ta := tcp.key(loIfindex), natAction("198.51.100.1", "10.20.0.7", 61000, 8080, 1)
	f.setFlow(tk, ta)
	f.wantFlow("TCP ACK", tcp.frame(t), tk, ta)
	tcp2 := tcp
	tcp2.flags, tcp2.payload = ack|psh, 1200
	f.wantFlow("TCP ACK|PSH", tcp2.frame(t), tk, ta)
	tcp3 := tcp
	tcp3.payload = 0
	f.wantFlow("TCP no payload", tcp3.frame(t), tk, ta)
	padded := append(tcp3.frame(t), make([]byte, 10)...)
	f.wantFlow("TCP, Ethernet padding", padded, tk, ta)
	for _, c := range []uint16{0x0000, 0xffff, 0x0001, 0xfffe, 0x8000} {
		// Not valid checksums: the result must still be FastTrack's.
		in := tcp.frame(t)
		binary.BigEndian.PutUint16(in[50:], c)
		fwd, out := f.run(in)
		if w := refRewrite(in, tk, ta); !fwd || !bytes.Equal(out, w) {
			t.Errorf("TCP checksum %#04x: forwarded %v\n got %x\nwant %x", c, fwd, out, w)
		}
	}

	// UDP: non-zero checksum, zero (none) stays zero, a result of 0 is
	// sent as 0xffff.
	udp := pkt{proto: protoUDP, src: "192.168.1.11", dst: "203.0.113.5", sport: 5353, dport: 53, ttl: 17, payload: 40}
	uk, ua := udp.key(loIfindex), natAction("198.51.100.1", "10.20.0.8", 1024, 5300, 1)
	f.setFlow(uk, ua)
	in := udp.frame(t)
	if in[40] == 0 && in[41] == 0 {
		t.Fatal("test frame has no UDP checksum")
	}
	f.wantFlow("UDP", in, uk, ua)
	udp.payload = 41 // odd length
	f.wantFlow("UDP odd length", udp.frame(t), uk, ua)
	udp.payload = 40
	in[40], in[41] = 0, 0
	f.wantFlow("UDP without checksum", in, uk, ua)
	zero := udpZeroResult(t, udp, uk, ua)
	fwd, out := f.run(zero)
	if !fwd || binary.BigEndian.Uint16(out[40:]) != 0xffff {
		t.Errorf("UDP checksum computing to 0: forwarded %v, checksum %x", fwd, out[40:42])
	}
	f.wantFlow("UDP checksum computing to 0", zero, uk, ua)
	// Addresses only (ports unchanged), no TTL change.
	udpD := pkt{proto: protoUDP, src: "192.168.1.12", dst: "203.0.113.5", sport: 7, dport: 9, ttl: 1, payload: 8}
	dk := udpD.key(loIfindex)
	da := natAction("192.168.1.12", "10.20.0.9", 7, 9, 0)
	f.setFlow(dk, da)
	f.wantFlow("UDP DNAT only, TTL 1, TTLDec 0", udpD.frame(t), dk, da)

	// ICMP echo request and reply, the identifier translated.
	req := pkt{proto: protoICMP, src: "192.168.1.10", dst: "203.0.113.5", sport: 0x1234, icmpType: icmpEchoRequest, ttl: 64, payload: 56}
	rk, ra := req.key(loIfindex), natAction("198.51.100.1", "203.0.113.5", 0x9999, 0, 1)
	ra.ICMPType = icmpEchoRequest
	f.setFlow(rk, ra)
	f.wantFlow("ICMP echo request", req.frame(t), rk, ra)
	rep := pkt{proto: protoICMP, src: "203.0.113.5", dst: "198.51.100.1", sport: 0x9999, icmpType: icmpEchoReply, ttl: 50, payload: 56}
	pk, pa := rep.key(loIfindex), natAction("203.0.113.5", "192.168.1.10", 0x1234, 0, 1)
	pa.ICMPType = icmpEchoReply
	f.setFlow(pk, pa)
	f.wantFlow("ICMP echo reply", rep.frame(t), pk, pa)
	rep.payload = 0
	f.wantFlow("ICMP echo reply, no data", rep.frame(t), pk, pa)
	// The identifier kept: the ICMP checksum is left as it is, even
	// in its other representation.
	same := pkt{proto: protoICMP, src: "192.168.1.13", dst: "203.0.113.5", sport: 77, icmpType: icmpEchoRequest, ttl: 3, payload: 9}
	sk, sa := same.key(loIfindex), natAction("198.51.100.1", "203.0.113.5", 77, 0, 2)
	sa.ICMPType = icmpEchoRequest
	f.setFlow(sk, sa)
	f.wantFlow("ICMP identifier kept, TTL = TTLDec + 1", same.frame(t), sk, sa)
	in = same.frame(t)
	binary.BigEndian.PutUint16(in[36:], 0xffff)
	if fwd, out := f.run(in); !fwd || !bytes.Equal(out[36:38], []byte{0xff, 0xff}) || !bytes.Equal(out, refRewrite(in, sk, sa)) {
		t.Errorf("ICMP identifier kept, checksum 0xffff: forwarded %v, out %x", fwd, out)
	}

	// A flow wins over a route to the same destination.
	routed := pkt{proto: protoTCP, src: "10.1.0.2", dst: "10.2.4.4", sport: 1000, dport: 2000, flags: ack, ttl: 64, payload: 10}
	wk, wa := routed.key(loIfindex), natAction("10.1.0.2", "10.3.0.9", 1000, 2000, 1)
	f.setFlow(wk, wa)
	f.wantFlow("flow before route", routed.frame(t), wk, wa)
}

func TestFlowMisses(t *testing.T) {
	f := newFixture(t)
	tcp := pkt{proto: protoTCP, src: "192.168.1.10", dst: "203.0.113.5", sport: 40000, dport: 80, flags: ack, ttl: 64, payload: 20}
	tk, ta := tcp.key(loIfindex), natAction("198.51.100.1", "10.20.0.7", 61000, 8080, 1)
	f.setFlow(tk, ta)
	f.wantFlow("control", tcp.frame(t), tk, ta)
	for _, fl := range []uint8{syn, syn | ack, fin | ack, rst | ack, rst, fin, psh, 0, ack | syn | fin | rst} {
		p := tcp
		p.flags = fl
		f.wantSlow(fmt.Sprintf("TCP flags %#02x", fl), p.frame(t))
	}
	mod := func(p pkt, m func([]byte)) []byte {
		b := p.frame(t)
		m(b)
		recompute(b)
		return b
	}
	f.wantSlow("MF", mod(tcp, func(b []byte) { b[20] = 0x20 }))
	f.wantSlow("MF and DF", mod(tcp, func(b []byte) { b[20] = 0x60 }))
	f.wantSlow("fragment offset 1", mod(tcp, func(b []byte) { b[21] = 1 }))
	f.wantSlow("fragment offset 0x1000", mod(tcp, func(b []byte) { b[20] = 0x50 }))
	f.wantFlow("no DF", mod(tcp, func(b []byte) { b[20] = 0 }), tk, ta)
	f.wantFlow("reserved flag", mod(tcp, func(b []byte) { b[20] = 0x80 }), tk, ta) // as FastTrack: only MF and the offset count

	// TTL.
	ttl := tcp
	ttl.ttl = 1
	f.wantSlow("TTL 1 = TTLDec", ttl.frame(t))
	ttl.ttl = 0
	f.wantSlow("TTL 0 < TTLDec", ttl.frame(t))
	t5 := tk
	t5.Sport = 40005
	a5 := ta
	a5.TTLDec = 5
	f.setFlow(t5, a5)
	ttl.sport, ttl.ttl = 40005, 5
	f.wantSlow("TTL 5 = TTLDec 5", ttl.frame(t))
	ttl.ttl = 6
	f.wantFlow("TTL 6, TTLDec 5", ttl.frame(t), t5, a5)

	// Lengths.
	short := tcp
	short.payload = 0
	f.wantSlow("TCP total length 39", mod(short, func(b []byte) { binary.BigEndian.PutUint16(b[16:], 39) }))
	f.wantSlow("TCP total length 28", mod(short, func(b []byte) { binary.BigEndian.PutUint16(b[16:], 28) }))
	f.wantSlow("TCP total length 27", mod(short, func(b []byte) { binary.BigEndian.PutUint16(b[16:], 27) }))
	f.wantSlow("total length beyond the frame", mod(short, func(b []byte) { binary.BigEndian.PutUint16(b[16:], 41) }))
	f.wantFlow("TCP total length 40", short.frame(t), tk, ta)
	full := short.frame(t)
	for _, n := range []int{34, 41, 42, 47, 48, 53} {
		f.wantSlow(fmt.Sprintf("frame truncated to %d bytes", n), full[:n])
	}
	f.wantSlow("truncated to 47, total length 33", mod(short, func(b []byte) { binary.BigEndian.PutUint16(b[16:], 33) })[:47])
	udp := pkt{proto: protoUDP, src: "192.168.1.11", dst: "203.0.113.5", sport: 5353, dport: 53, ttl: 17, payload: 0}
	uk, ua := udp.key(loIfindex), natAction("198.51.100.1", "10.20.0.8", 1024, 5300, 1)
	f.setFlow(uk, ua)
	f.wantFlow("UDP total length 28", udp.frame(t), uk, ua)
	f.wantSlow("UDP total length 27", mod(udp, func(b []byte) { binary.BigEndian.PutUint16(b[16:], 27) }))
	f.wantSlow("UDP truncated to 41", udp.frame(t)[:41])

	// ICMP.
	req := pkt{proto: protoICMP, src: "192.168.1.10", dst: "203.0.113.5", sport: 0x1234, icmpType: icmpEchoRequest, ttl: 64, payload: 8}
	rk, ra := req.key(loIfindex), natAction("198.51.100.1", "203.0.113.5", 0x9999, 0, 1)
	ra.ICMPType = icmpEchoRequest
	f.setFlow(rk, ra)
	f.wantFlow("ICMP control", req.frame(t), rk, ra)
	rep := req
	rep.icmpType = icmpEchoReply
	f.wantSlow("ICMP echo reply on the request's flow", rep.frame(t))
	for _, ty := range []uint8{3, 5, 11, 13, 14} {
		p := req
		p.icmpType = ty
		f.wantSlow(fmt.Sprintf("ICMP type %d", ty), p.frame(t))
	}

	// Keys that do not match.
	k2 := tk
	k2.Ifindex = 2
	k2.Sport = 40002
	f.setFlow(k2, ta)
	p2 := tcp
	p2.sport = 40002
	f.wantSlow("key on ifindex 2", p2.frame(t))
	p3 := tcp
	p3.proto = protoUDP
	f.wantSlow("UDP packet, TCP flow", p3.frame(t))
	p4 := tcp
	p4.dport = 81
	f.wantSlow("other port", p4.frame(t))
	p5 := tcp
	p5.src = "192.168.1.11"
	f.wantSlow("other source", p5.frame(t))
	f.wantSlow("other MAC", mod(tcp, func(b []byte) { b[5] ^= 1 }))
	f.wantSlow("IHL 6", mod(tcp, func(b []byte) { b[14] = 0x46 }))

	// A miss for a packet with a route takes the route path.
	routed := pkt{proto: protoTCP, src: "10.1.0.2", dst: "10.2.4.4", sport: 1000, dport: 2000, flags: ack, ttl: 64, payload: 10}
	rtk, rta := routed.key(loIfindex), natAction("10.1.0.2", "10.3.0.9", 1000, 2000, 1)
	f.setFlow(rtk, rta)
	f.wantFlow("routed, flow hit", routed.frame(t), rtk, rta)
	other := routed
	other.sport = 1001
	f.wantRouted("routed, other port", other.frame(t), gwMAC, outMAC7)
	synP := routed
	synP.flags = syn
	f.wantRouted("routed, SYN", synP.frame(t), gwMAC, outMAC7)
	ping := pkt{proto: protoICMP, src: "10.1.0.2", dst: "10.2.4.4", sport: 5, icmpType: 13, ttl: 9, payload: 12}
	f.setFlow(ping.key(loIfindex), FlowAction{Ifindex: 9, Src: netip.MustParseAddr("10.1.0.2"), Dst: netip.MustParseAddr("10.2.4.4"), ICMPType: 8, Sport: 5})
	f.wantRouted("routed, ICMP timestamp", ping.frame(t), gwMAC, outMAC7)
	frag := routed
	f.wantRouted("routed, fragment", mod(frag, func(b []byte) { b[20] = 0x20 }), gwMAC, outMAC7)
	ttlSlow := routed
	ttlSlow.ttl = 1
	f.wantSlow("routed, TTL 1 = TTLDec", ttlSlow.frame(t))
	if err := f.t.DeleteFlow(rtk, 99); err == nil {
		t.Error("DeleteFlow with another flow's slot accepted")
	}
	f.wantFlow("routed, after DeleteFlow with a wrong slot", routed.frame(t), rtk, rta)
}

func TestFlowCounters(t *testing.T) {
	f := newFixtureFlows(t, 3)
	tcp := pkt{proto: protoTCP, src: "192.168.1.10", dst: "203.0.113.5", sport: 40000, dport: 80, flags: ack, ttl: 64}
	tk, ta := tcp.key(loIfindex), natAction("198.51.100.1", "10.20.0.7", 61000, 8080, 1)
	slot := f.setFlow(tk, ta)
	if p, b := f.t.FlowCounters(slot); p != 0 || b != 0 {
		t.Fatalf("new slot: %d packets %d bytes", p, b)
	}
	before := f.counters()
	var n, sum, frames uint64
	for _, size := range []int{0, 1, 100, 1400, 7} {
		tcp.payload = size
		in := tcp.frame(t)
		if size == 7 {
			in = append(in, make([]byte, 20)...) // padding: not counted in the flow's bytes
		}
		f.wantFlow(fmt.Sprintf("payload %d", size), in, tk, ta)
		n++
		sum += uint64(40 + size)
		frames += uint64(len(in))
	}
	tcp.ttl = 1
	f.wantSlow("TTL 1", tcp.frame(t)) // a slow hit is not counted
	tcp.ttl = 64
	if p, b := f.t.FlowCounters(slot); p != n || b != sum {
		t.Errorf("FlowCounters = %d packets %d bytes, want %d and %d", p, b, n, sum)
	}
	// FastTrack reads an offloaded flow's counters at each visit: no allocation.
	if a := testing.AllocsPerRun(100, func() { f.t.FlowCounters(slot) }); a != 0 {
		t.Errorf("FlowCounters: %v allocations", a)
	}
	after := f.counters()
	if after.Forwarded-before.Forwarded != n || after.ForwardedBytes-before.ForwardedBytes != frames {
		t.Errorf("Counters: %d forwarded, %d bytes; want %d and %d (frames)", after.Forwarded-before.Forwarded, after.ForwardedBytes-before.ForwardedBytes, n, frames)
	}

	// Fill the table: two more flows, then ErrFlowsFull.
	udp := pkt{proto: protoUDP, src: "192.168.1.11", dst: "203.0.113.5", sport: 1, dport: 53, ttl: 17, payload: 10}
	slots := map[int]bool{slot: true}
	for sp := uint16(1); sp <= 2; sp++ {
		udp.sport = sp
		slots[f.setFlow(udp.key(loIfindex), natAction("198.51.100.1", "10.20.0.8", sp, 53, 1))] = true
	}
	if len(slots) != 3 {
		t.Fatalf("three flows got slots %v", slots)
	}
	udp.sport = 3
	if _, err := f.t.SetFlow(udp.key(loIfindex), natAction("198.51.100.1", "10.20.0.8", 3, 53, 1)); !errors.Is(err, ErrFlowsFull) {
		t.Fatalf("fourth flow: %v, want ErrFlowsFull", err)
	}
	f.wantSlow("flow refused when full", udp.frame(t))

	// Replacing a key, even when full: same slot, zeroed, new action.
	ta2 := natAction("198.51.100.2", "10.20.0.70", 61001, 8081, 2)
	s2, err := f.t.SetFlow(tk, ta2)
	if err != nil || s2 != slot {
		t.Fatalf("replacing: slot %d, %v; want slot %d", s2, err, slot)
	}
	if p, b := f.t.FlowCounters(slot); p != 0 || b != 0 {
		t.Errorf("replaced flow's counters: %d, %d; want zero", p, b)
	}
	tcp.payload = 10
	f.wantFlow("replaced action", tcp.frame(t), tk, ta2)
	if p, b := f.t.FlowCounters(slot); p != 1 || b != 50 {
		t.Errorf("after one packet: %d, %d; want 1, 50", p, b)
	}
	for i := 0; i < 5; i++ { // no slot leaks
		if _, err := f.t.SetFlow(tk, ta); err != nil {
			t.Fatal(err)
		}
	}

	// Delete: a miss; deleting again is no error and frees nothing
	// more; the slot goes to the next flow, zeroed.
	if err := f.t.DeleteFlow(tk, slot); err != nil {
		t.Fatal(err)
	}
	f.wantSlow("deleted", tcp.frame(t))
	if err := f.t.DeleteFlow(tk, slot); err != nil {
		t.Errorf("second DeleteFlow: %v", err)
	}
	udp.sport = 3
	s3 := f.setFlow(udp.key(loIfindex), natAction("198.51.100.1", "10.20.0.8", 3, 53, 1))
	if s3 != slot {
		t.Errorf("freed slot %d, next flow got %d", slot, s3)
	}
	if p, b := f.t.FlowCounters(s3); p != 0 || b != 0 {
		t.Errorf("reused slot: %d, %d; want zero", p, b)
	}
	f.wantFlow("reused slot", udp.frame(t), udp.key(loIfindex), natAction("198.51.100.1", "10.20.0.8", 3, 53, 1))
	if p, b := f.t.FlowCounters(s3); p != 1 || b != 38 {
		t.Errorf("reused slot after one packet: %d, %d; want 1, 38", p, b)
	}
	udp.sport = 4
	if _, err := f.t.SetFlow(udp.key(loIfindex), natAction("198.51.100.1", "10.20.0.8", 4, 53, 1)); !errors.Is(err, ErrFlowsFull) {
		t.Errorf("after a double delete: %v, want ErrFlowsFull", err)
	}
	for _, s := range []int{-1, 3, 1 << 20} {
		if p, b := f.t.FlowCounters(s); p != 0 || b != 0 {
			t.Errorf("FlowCounters(%d) = %d, %d", s, p, b)
		}
	}

	// Close unmaps: zeros, no fault; the program keeps its flows.
	if err := f.t.Close(); err != nil {
		t.Fatal(err)
	}
	if p, b := f.t.FlowCounters(s3); p != 0 || b != 0 {
		t.Errorf("FlowCounters after Close = %d, %d", p, b)
	}
	if err := f.t.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	udp.sport = 3
	if fwd, _ := f.run(udp.frame(t)); !fwd {
		t.Error("flow gone from the program after Tables.Close")
	}
}

func TestFlowErrors(t *testing.T) {
	f := newFixtureFlows(t, 1)
	a := natAction("198.51.100.1", "10.20.0.7", 1, 2, 1)
	k := FlowKey{Ifindex: 1, Proto: protoTCP, Src: netip.MustParseAddr("192.168.1.1"), Dst: netip.MustParseAddr("203.0.113.5"), Sport: 1, Dport: 2}
	icmp := k
	icmp.Proto, icmp.Dport = protoICMP, 1
	for name, c := range map[string]struct {
		k FlowKey
		a FlowAction
	}{
		"proto 47":          {FlowKey{Ifindex: 1, Proto: 47, Src: k.Src, Dst: k.Dst}, a},
		"input ifindex 0":   {FlowKey{Proto: protoTCP, Src: k.Src, Dst: k.Dst}, a},
		"output ifindex 0":  {k, FlowAction{Src: a.Src, Dst: a.Dst}},
		"IPv6 key":          {FlowKey{Ifindex: 1, Proto: protoTCP, Src: netip.MustParseAddr("2001:db8::1"), Dst: k.Dst}, a},
		"IPv6 action":       {k, FlowAction{Ifindex: 9, Src: a.Src, Dst: netip.MustParseAddr("2001:db8::1")}},
		"no key address":    {FlowKey{Ifindex: 1, Proto: protoTCP, Dst: k.Dst}, a},
		"ICMP sport!=dport": {FlowKey{Ifindex: 1, Proto: protoICMP, Src: k.Src, Dst: k.Dst, Sport: 1, Dport: 2}, FlowAction{Ifindex: 9, Src: a.Src, Dst: a.Dst, ICMPType: 8}},
		"ICMP type 3":       {icmp, FlowAction{Ifindex: 9, Src: a.Src, Dst: a.Dst, ICMPType: 3}},
	} {
		if _, err := f.t.SetFlow(c.k, c.a); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	// None of them took the one slot; IPv4-mapped addresses are IPv4.
	mk := k
	mk.Src = netip.MustParseAddr("::ffff:192.168.1.1")
	if _, err := f.t.SetFlow(mk, a); err != nil {
		t.Fatal(err)
	}
	if _, err := f.t.SetFlow(icmp, FlowAction{Ifindex: 9, Src: a.Src, Dst: a.Dst, ICMPType: 0}); !errors.Is(err, ErrFlowsFull) {
		t.Errorf("second flow: %v, want ErrFlowsFull", err)
	}
	if err := f.t.DeleteFlow(k, 0); err != nil { // the mapped key is the same key
		t.Error(err)
	}
	if _, err := NewTables(1, 1, 0); err == nil {
		t.Error("NewTables(1, 1, 0) accepted")
	}
}

// TestFlowConcurrent installs and removes flows from several goroutines;
// at the end every slot must be free again.
func TestFlowConcurrent(t *testing.T) {
	const maxFlows = 16
	f := newFixtureFlows(t, maxFlows)
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; i < 100; i++ {
				k := FlowKey{Ifindex: 1, Proto: protoUDP, Src: netip.AddrFrom4([4]byte{10, 0, byte(g), 1}), Dst: netip.MustParseAddr("203.0.113.5"), Sport: uint16(i % 4), Dport: 53}
				slot, err := f.t.SetFlow(k, natAction("198.51.100.1", "10.20.0.8", 1, 53, 1))
				if err != nil {
					t.Error(err)
					return
				}
				f.t.FlowCounters(slot)
				if i%3 != 0 {
					if err := f.t.DeleteFlow(k, slot); err != nil {
						t.Error(err)
						return
					}
				}
			}
		}(g)
	}
	wg.Wait()
	// Each goroutine leaves its 4 keys installed or not; remove them all.
	for g := 0; g < 4; g++ {
		for sp := 0; sp < 4; sp++ {
			k := FlowKey{Ifindex: 1, Proto: protoUDP, Src: netip.AddrFrom4([4]byte{10, 0, byte(g), 1}), Dst: netip.MustParseAddr("203.0.113.5"), Sport: uint16(sp), Dport: 53}
			f.t.flowMu.Lock()
			s, ok := f.t.slots[must(encodeFlowKey(k))]
			f.t.flowMu.Unlock()
			if ok {
				if err := f.t.DeleteFlow(k, int(s)); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	seen := map[int]bool{}
	for i := 0; i < maxFlows; i++ {
		k := FlowKey{Ifindex: 1, Proto: protoTCP, Src: netip.MustParseAddr("192.168.0.1"), Dst: netip.MustParseAddr("203.0.113.5"), Sport: uint16(i), Dport: 1}
		s, err := f.t.SetFlow(k, natAction("198.51.100.1", "10.20.0.8", 1, 53, 1))
		if err != nil {
			t.Fatalf("flow %d: %v (slot leaked)", i, err)
		}
		if seen[s] || s < 0 || s >= maxFlows {
			t.Fatalf("slot %d given twice or out of range", s)
		}
		seen[s] = true
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// TestFlowRandom installs random flows and sends random packets of them,
// some with damaged checksums: every output must be exactly FastTrack's
// rewrite (refRewrite), and for intact inputs pass checkFlowOut.
func TestFlowRandom(t *testing.T) {
	f := newFixture(t)
	rng := rand.New(rand.NewSource(2))
	addr := func() string {
		return netip.AddrFrom4([4]byte{byte(1 + rng.Intn(223)), byte(rng.Intn(256)), byte(rng.Intn(256)), byte(rng.Intn(256))}).String()
	}
	port := func() uint16 {
		if rng.Intn(4) == 0 {
			return []uint16{0, 1, 0xffff, 0xfffe, 0x8000}[rng.Intn(5)]
		}
		return uint16(rng.Intn(1 << 16))
	}
	var hits int
	for i := 0; i < 300; i++ {
		p := pkt{proto: []uint8{protoTCP, protoUDP, protoICMP}[rng.Intn(3)], src: addr(), dst: addr(), sport: port(), dport: port(),
			flags: ack | uint8(rng.Intn(2))*psh, ttl: uint8(1 + rng.Intn(255)), payload: rng.Intn(90)}
		if p.dst[:3] == "10." {
			p.dst = "11." + p.dst[3:] // keep off the fixture's routes
		}
		a := FlowAction{Ifindex: fixtureOutputs[rng.Intn(len(fixtureOutputs))], Src: netip.MustParseAddr(addr()), Dst: netip.MustParseAddr(addr()), Sport: port(), Dport: port(), TTLDec: uint8(rng.Intn(3))}
		rng.Read(a.EthDst[:])
		rng.Read(a.EthSrc[:])
		if rng.Intn(4) == 0 {
			a.Src = netip.MustParseAddr(p.src)
			a.Sport = p.sport
		}
		if p.proto == protoICMP {
			p.icmpType = []uint8{icmpEchoRequest, icmpEchoReply}[rng.Intn(2)]
			a.ICMPType = p.icmpType
			if rng.Intn(4) == 0 {
				a.Sport = p.sport
			}
		}
		k := p.key(loIfindex)
		slot := f.setFlow(k, a)
		for j := 0; j < 4; j++ {
			in := p.frame(t)
			intact := true
			if j > 0 && rng.Intn(2) == 0 {
				// Any checksum value: the flow path does not verify.
				off := map[uint8]int{protoTCP: 50, protoUDP: 40, protoICMP: 36}[p.proto]
				if p.proto == protoTCP && rng.Intn(2) == 0 {
					off = 24
				}
				binary.BigEndian.PutUint16(in[off:], []uint16{0, 0xffff, uint16(rng.Intn(1 << 16))}[rng.Intn(3)])
				intact = false
			}
			fwd, out := f.run(in)
			want := p.ttl > a.TTLDec
			switch {
			case fwd != want:
				t.Fatalf("flow %+v -> %+v, TTL %d: forwarded %v", k, a, p.ttl, fwd)
			case !fwd:
			case intact:
				if err := checkFlowOut(in, out, k, a); err != nil {
					t.Fatalf("flow %+v -> %+v: %v\n in %x\nout %x", k, a, err, in, out)
				}
			default:
				if w := refRewrite(in, k, a); !bytes.Equal(out, w) {
					t.Fatalf("flow %+v -> %+v:\n in %x\n got %x\nwant %x", k, a, in, out, w)
				}
			}
			if fwd {
				hits++
			}
		}
		if err := f.t.DeleteFlow(k, slot); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("%d flow hits", hits)
}

// TestFlowGeneration: an entry applies only while the tables' generation
// is the one it was installed under; one SetFlowGeneration retires every
// older entry at once, and entries of the new generation apply again.
func TestFlowGeneration(t *testing.T) {
	f := newFixture(t)
	udp := pkt{proto: protoUDP, src: "192.168.1.10", dst: "203.0.113.5", sport: 40000, dport: 53, ttl: 64, payload: 20}
	k, a := udp.key(loIfindex), natAction("198.51.100.1", "10.20.0.7", 61000, 5353, 1)
	f.setFlow(k, a) // generation 0, the tables' initial one
	f.wantFlow("generation 0", udp.frame(t), k, a)
	if err := f.t.SetFlowGeneration(7); err != nil {
		t.Fatal(err)
	}
	f.wantSlow("entry of generation 0 under generation 7", udp.frame(t))
	a.Gen = 7
	f.setFlow(k, a)
	f.wantFlow("re-installed under generation 7", udp.frame(t), k, a)
	if err := f.t.SetFlowGeneration(8); err != nil {
		t.Fatal(err)
	}
	f.wantSlow("generation 8", udp.frame(t))
	if err := f.t.SetFlowGeneration(7); err != nil {
		t.Fatal(err)
	}
	f.wantFlow("back to 7", udp.frame(t), k, a)
}

// TestAddFlow: AddFlow installs a new key like SetFlow, and refuses an
// installed one (ErrFlowExists) without touching its entry, slot or
// counters.
func TestAddFlow(t *testing.T) {
	f := newFixture(t)
	udp := pkt{proto: protoUDP, src: "192.168.1.10", dst: "203.0.113.5", sport: 40000, dport: 53, ttl: 64, payload: 20}
	k, a := udp.key(loIfindex), natAction("198.51.100.1", "10.20.0.7", 61000, 5353, 1)
	slot, err := f.t.AddFlow(k, a)
	if err != nil {
		t.Fatal(err)
	}
	f.wantFlow("added", udp.frame(t), k, a)
	b := natAction("198.51.100.2", "10.20.0.8", 61001, 5354, 1)
	if _, err := f.t.AddFlow(k, b); !errors.Is(err, ErrFlowExists) {
		t.Fatalf("AddFlow of an installed key: %v, want ErrFlowExists", err)
	}
	f.wantFlow("still the first action", udp.frame(t), k, a)
	if p, _ := f.t.FlowCounters(slot); p != 2 {
		t.Errorf("slot %d counted %d packets, want 2 (not reset by the refused AddFlow)", slot, p)
	}
}

// BenchmarkAddDeleteFlow: the control-plane cost of offloading one flow
// direction and taking it back: three bpf(2) calls (the counter reset and
// the entry on install, the delete), what a FastTrack tick pays per flow.
func BenchmarkAddDeleteFlow(b *testing.B) {
	f := newFixtureFlows(b, 1024)
	udp := pkt{proto: protoUDP, src: "192.168.1.10", dst: "203.0.113.5", sport: 40000, dport: 53, ttl: 64}
	k, a := udp.key(loIfindex), natAction("198.51.100.1", "10.20.0.7", 61000, 5353, 1)
	// Another flow stays installed, as in steady state: the flow count
	// never drops to 0, so fp_flow_gen is not rewritten each time.
	other := udp
	other.sport++
	f.setFlow(other.key(loIfindex), a)
	for b.Loop() {
		slot, err := f.t.AddFlow(k, a)
		if err != nil {
			b.Fatal(err)
		}
		if err := f.t.DeleteFlow(k, slot); err != nil {
			b.Fatal(err)
		}
	}
}
