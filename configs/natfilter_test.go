package configs_test

import (
	"encoding/binary"
	"net"
	"net/netip"
	"testing"

	"github.com/junction-dataplane/junction/packet"
	"github.com/junction-dataplane/junction/pipeline"
)

func ip4u(s string) uint32 { a := netip.MustParseAddr(s).As4(); return binary.BigEndian.Uint32(a[:]) }

// nfTCP is a TCP frame src:sport -> dst:dport with flags (SYN 0x02,
// SYN-ACK 0x12), checksums valid.
func nfTCP(src string, sport uint16, dst string, dport uint16, flags byte) []byte {
	f := make([]byte, 14+20+20)
	binary.BigEndian.PutUint16(f[12:], packet.EtherTypeIPv4)
	h := packet.IPv4(f[packet.EthernetLen:])
	h[0] = 0x45
	h.SetTotalLen(40)
	h.SetTTL(64)
	h.SetProtocol(packet.ProtoTCP)
	binary.BigEndian.PutUint32(f[26:], ip4u(src))
	binary.BigEndian.PutUint32(f[30:], ip4u(dst))
	t := f[34:]
	binary.BigEndian.PutUint16(t[0:], sport)
	binary.BigEndian.PutUint16(t[2:], dport)
	binary.BigEndian.PutUint32(t[4:], 1000)
	if flags&0x10 != 0 {
		// The answer to a SYN made here: its own sequence, acking 1000+1.
		binary.BigEndian.PutUint32(t[4:], 5000)
		binary.BigEndian.PutUint32(t[8:], 1001)
	}
	t[12] = 5 << 4
	t[13] = flags
	binary.BigEndian.PutUint16(t[14:], 65535)
	binary.BigEndian.PutUint16(t[16:], l4Sum(f, packet.ProtoTCP))
	h.SetChecksum(h.ComputeChecksum())
	return f
}

// nfUDP is a UDP frame src:sport -> dst:dport.
func nfUDP(src string, sport uint16, dst string, dport uint16) []byte {
	f := make([]byte, 14+20+8+4)
	binary.BigEndian.PutUint16(f[12:], packet.EtherTypeIPv4)
	h := packet.IPv4(f[packet.EthernetLen:])
	h[0] = 0x45
	h.SetTotalLen(32)
	h.SetTTL(64)
	h.SetProtocol(packet.ProtoUDP)
	binary.BigEndian.PutUint32(f[26:], ip4u(src))
	binary.BigEndian.PutUint32(f[30:], ip4u(dst))
	binary.BigEndian.PutUint16(f[34:], sport)
	binary.BigEndian.PutUint16(f[36:], dport)
	binary.BigEndian.PutUint16(f[38:], 12)
	h.SetChecksum(h.ComputeChecksum())
	return f
}

// nfEcho is an ICMP echo request (typ 8) or reply (0) with identifier id.
func nfEcho(src, dst string, typ byte, id uint16) []byte {
	f := make([]byte, 14+20+8+8)
	binary.BigEndian.PutUint16(f[12:], packet.EtherTypeIPv4)
	h := packet.IPv4(f[packet.EthernetLen:])
	h[0] = 0x45
	h.SetTotalLen(36)
	h.SetTTL(64)
	h.SetProtocol(packet.ProtoICMP)
	binary.BigEndian.PutUint32(f[26:], ip4u(src))
	binary.BigEndian.PutUint32(f[30:], ip4u(dst))
	ic := f[34:]
	ic[0] = typ
	binary.BigEndian.PutUint16(ic[4:], id)
	binary.BigEndian.PutUint16(ic[6:], 1)
	binary.BigEndian.PutUint16(ic[2:], ^onesSum(ic, 0))
	h.SetChecksum(h.ComputeChecksum())
	return f
}

func onesSum(b []byte, s uint32) uint16 {
	for i := 0; i+1 < len(b); i += 2 {
		s += uint32(binary.BigEndian.Uint16(b[i:]))
	}
	if len(b)%2 == 1 {
		s += uint32(b[len(b)-1]) << 8
	}
	for s > 0xffff {
		s = s&0xffff + s>>16
	}
	return uint16(s)
}

// l4Sum is the TCP/UDP checksum of f's L4 over the pseudo-header.
func l4Sum(f []byte, proto uint8) uint16 {
	l4 := f[34:]
	var ps uint32
	for i := 26; i < 34; i += 2 {
		ps += uint32(binary.BigEndian.Uint16(f[i:]))
	}
	ps += uint32(proto) + uint32(len(l4))
	return ^onesSum(l4, ps)
}

// TestNATGatewayInboundIPv4: configs/nat-gateway.toml as shipped drops
// new IPv4 flows from the WAN to inside hosts (a TCP SYN, an echo request,
// UDP to 192.168.1.2, and a SYN straight to the DNAT target's inside
// address 192.168.1.10:80), counting them at drop4, while a SYN to the
// DNAT'd port 203.0.113.1:8080 and the replies to flows the inside host
// opened (a SYN-ACK, an echo reply) reach the inside host. Before the
// filter, every unsolicited packet was forwarded to the LAN (its ARP
// request for 192.168.1.2 the sign).
func TestNATGatewayInboundIPv4(t *testing.T) {
	const (
		outside = "198.51.100.7" // a host beyond the WAN next hop
		pub     = "203.0.113.1"
		inside  = "192.168.1.10"
		other   = "192.168.1.2"
	)
	junk := make([]byte, 60)
	lan := [][]byte{
		arpRequest(t, net.HardwareAddr{2, 0, 0, 0, 0, 10}, inside, "192.168.1.1"),
		nfTCP(inside, 40000, outside, 443, 0x02),
		nfEcho(inside, outside, 8, 40077), // an identifier in SNAT's range, which it keeps: the frames are made before the run
	}
	wan := [][]byte{
		arpRequest(t, net.HardwareAddr{2, 0, 0, 0, 0, 2}, "203.0.113.2", pub),
		junk, junk, junk, // the inside flows go out first
		nfTCP(outside, 50001, other, 22, 0x02),  // unsolicited: dropped
		nfEcho(outside, other, 8, 99),           // unsolicited: dropped
		nfUDP(outside, 50003, other, 53),        // unsolicited: dropped
		nfTCP(outside, 50004, inside, 80, 0x02), // to the DNAT target's inside address: dropped
		nfTCP(outside, 50005, pub, 8080, 0x02),  // DNAT'd: to 192.168.1.10:80
		nfTCP(outside, 443, pub, 40000, 0x12),   // the SYN-ACK of the inside flow
		nfEcho(outside, pub, 0, 40077),          // the echo reply of the inside ping
	}
	memMu.Lock()
	memInput["lan"] = lan
	memInput["wan"] = wan
	memMu.Unlock()
	g, err := pipeline.Parse("nat-gateway-mem.toml", natGatewayOnMem(t))
	if err != nil {
		t.Fatal(err)
	}
	r := runToEnd(t, g, pipeline.Options{NoPin: true, Workers: 1})
	memMu.Lock()
	lanDev, wanDev := memDevices["lan"], memDevices["wan"]
	memMu.Unlock()

	type seen struct{ syn8080, synAck, echoReply, other, direct, outSYN, outEcho int }
	var s seen
	for _, f := range lanDev.sent {
		if binary.BigEndian.Uint16(f[12:]) == packet.EtherTypeARP {
			if netip.AddrFrom4([4]byte(f[38:42])).String() == other {
				s.other++ // ARP for 192.168.1.2: something was forwarded to it
			}
			continue
		}
		if len(f) < 38 || binary.BigEndian.Uint16(f[12:]) != packet.EtherTypeIPv4 {
			continue
		}
		dst := netip.AddrFrom4([4]byte(f[30:34])).String()
		sport, dport := binary.BigEndian.Uint16(f[34:]), binary.BigEndian.Uint16(f[36:])
		switch {
		case dst == other:
			s.other++
		case dst == inside && f[23] == packet.ProtoTCP && sport == 50005 && dport == 80:
			s.syn8080++
		case dst == inside && f[23] == packet.ProtoTCP && sport == 50004:
			s.direct++
		case dst == inside && f[23] == packet.ProtoTCP && sport == 443 && dport == 40000:
			s.synAck++
		case dst == inside && f[23] == packet.ProtoICMP && f[34] == 0:
			s.echoReply++
		}
	}
	for _, f := range wanDev.sent {
		if len(f) >= 38 && binary.BigEndian.Uint16(f[12:]) == packet.EtherTypeIPv4 &&
			netip.AddrFrom4([4]byte(f[26:30])).String() == pub {
			switch f[23] {
			case packet.ProtoTCP:
				s.outSYN++
			case packet.ProtoICMP:
				s.outEcho++
			}
		}
	}
	var drop4 uint64
	for _, e := range r.Snapshot().Elements {
		if e.Element == "drop4" {
			drop4 += e.Packets
		}
	}
	t.Logf("seen %+v, drop4 %d", s, drop4)
	if s.outSYN != 1 || s.outEcho != 1 {
		t.Fatalf("the inside host's flows did not go out SNAT'd: %+v", s)
	}
	if s.syn8080 != 1 || s.synAck != 1 || s.echoReply != 1 {
		t.Errorf("the DNAT'd SYN and the replies of inside flows must reach the inside host: %+v", s)
	}
	if s.other != 0 || s.direct != 0 || drop4 != 4 {
		for _, e := range r.Snapshot().Elements {
			t.Logf("%s (%s): %d packets, counters %v", e.Element, e.Type, e.Packets, e.Counters)
		}
		t.Errorf("unsolicited IPv4 from the WAN: %d frames to/ARP for 192.168.1.2, %d straight to 192.168.1.10:80, drop4 counted %d (want 0, 0, 4)",
			s.other, s.direct, drop4)
	}
}
