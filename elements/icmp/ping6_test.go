package icmp_test

import (
	"net"
	"testing"

	"github.com/google/gopacket"
	"github.com/google/gopacket/layers"

	"github.com/junction-dataplane/junction/elements/elementtest"
	"github.com/junction-dataplane/junction/elements/icmp"
)

func echo6(t testing.TB, src, dst string, typ uint8, udp bool) []byte {
	eth := &layers.Ethernet{SrcMAC: net.HardwareAddr{2, 0, 0, 0, 0, 1}, DstMAC: net.HardwareAddr{2, 0, 0, 0, 0, 2},
		EthernetType: layers.EthernetTypeIPv6}
	ip := &layers.IPv6{Version: 6, HopLimit: 60, NextHeader: layers.IPProtocolICMPv6, SrcIP: net.ParseIP(src), DstIP: net.ParseIP(dst)}
	var ls []gopacket.SerializableLayer
	if udp {
		ip.NextHeader = layers.IPProtocolUDP
		u := &layers.UDP{SrcPort: 1, DstPort: 33434}
		u.SetNetworkLayerForChecksum(ip)
		ls = []gopacket.SerializableLayer{eth, ip, u, gopacket.Payload("x")}
	} else {
		ic := &layers.ICMPv6{TypeCode: layers.CreateICMPv6TypeCode(typ, 0)}
		ic.SetNetworkLayerForChecksum(ip)
		ls = []gopacket.SerializableLayer{eth, ip, ic, &layers.ICMPv6Echo{Identifier: 7, SeqNumber: 9}, gopacket.Payload("ping data")}
	}
	buf := gopacket.NewSerializeBuffer()
	if err := gopacket.SerializeLayers(buf, gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true}, ls...); err != nil {
		t.Fatal(err)
	}
	return append([]byte(nil), buf.Bytes()...)
}

func TestPing6(t *testing.T) {
	h := elementtest.New(t, "ICMP6PingResponder", &icmp.Config6{Addresses: []string{"v6"}, HopLimit: 64},
		&elementtest.Options{Devices: devs})
	req := echo6(t, "2001:db8::5", "2001:db8::1", 128, false)
	h.Push(0, req)
	out := h.Outs[0].Frames()
	if len(out) != 1 {
		t.Fatalf("counters %v", h.Stats.Counters())
	}
	pk := gopacket.NewPacket(out[0], layers.LayerTypeEthernet, gopacket.Default)
	ip := pk.Layer(layers.LayerTypeIPv6).(*layers.IPv6)
	ic := pk.Layer(layers.LayerTypeICMPv6).(*layers.ICMPv6)
	e := pk.Layer(layers.LayerTypeICMPv6Echo).(*layers.ICMPv6Echo)
	if ip.SrcIP.String() != "2001:db8::1" || ip.DstIP.String() != "2001:db8::5" || ip.HopLimit != 64 ||
		ic.TypeCode.Type() != 129 || e.Identifier != 7 || e.SeqNumber != 9 || string(out[0][len(out[0])-9:]) != "ping data" {
		t.Fatalf("reply %v -> %v hop %d %v id %d seq %d", ip.SrcIP, ip.DstIP, ip.HopLimit, ic.TypeCode, e.Identifier, e.SeqNumber)
	}
	// The checksum, recomputed independently.
	c := layers.ICMPv6{TypeCode: ic.TypeCode}
	c.SetNetworkLayerForChecksum(ip)
	buf := gopacket.NewSerializeBuffer()
	gopacket.SerializeLayers(buf, gopacket.SerializeOptions{ComputeChecksums: true}, &c, gopacket.Payload(ic.Payload))
	if got, want := ic.Checksum, uint16(buf.Bytes()[2])<<8|uint16(buf.Bytes()[3]); got != want {
		t.Errorf("checksum %#04x, want %#04x", got, want)
	}
	h.Reset()
	bad := echo6(t, "2001:db8::5", "2001:db8::1", 128, false)
	bad[len(bad)-1] ^= 1
	h.Push(0, bad, echo6(t, "2001:db8::5", "2001:db8::9", 128, false), echo6(t, "ff02::1", "2001:db8::1", 128, false),
		echo6(t, "2001:db8::5", "2001:db8::1", 0, true), echo6(t, "2001:db8::5", "2001:db8::1", 129, false))
	if h.Counter("bad checksum") != 1 || h.Counter("not for us") != 1 || h.Counter("bad source") != 1 || len(h.Outs[1].Frames()) != 2 {
		t.Fatalf("counters %v, %d others", h.Stats.Counters(), len(h.Outs[1].Frames()))
	}
	// A group's traffic (an MLD report, a router solicitation, an echo
	// request to all nodes) is consumed, not dropped: an idle router on a
	// LAN gets it all the time. A unicast address not ours is a drop.
	h.Reset()
	drops := h.Stats.Drops()
	h.Push(0, echo6(t, "2001:db8::5", "ff02::1", 128, false), echo6(t, "fe80::5", "ff02::2", 133, false),
		echo6(t, "2001:db8::5", "2001:db8::9", 128, false))
	if h.Counter("multicast") != 2 || h.Stats.Consumed() != 2 || h.Stats.Drops() != drops+1 || h.Counter("not for us") != 2 {
		t.Errorf("counters %v: consumed %d, drops %d (were %d)", h.Stats.Counters(), h.Stats.Consumed(), h.Stats.Drops(), drops)
	}
	h.CheckNoLeak()
}

func TestPing6Allocs(t *testing.T) {
	h := elementtest.New(t, "ICMP6PingResponder", &icmp.Config6{Addresses: []string{"2001:db8::1"}, HopLimit: 64},
		&elementtest.Options{Sink: true})
	req := echo6(t, "2001:db8::5", "2001:db8::1", 128, false)
	if a := testing.AllocsPerRun(100, func() { h.Push(0, req, req) }); a != 0 {
		t.Fatalf("%v allocations", a)
	}
}

// withRH0 inserts a type-0 routing header with segLeft segments left
// between f's IPv6 header and its upper layer.
func withRH0(f []byte, segLeft uint8) []byte {
	rh := make([]byte, 24)
	rh[0], rh[1], rh[2], rh[3] = f[14+6], 2, 0, segLeft
	rh[8], rh[9] = 0x20, 0x01 // 2001:: the next hop on the route
	out := append(append(append([]byte(nil), f[:54]...), rh...), f[54:]...)
	out[14+6] = 43
	pl := int(out[18])<<8 | int(out[19]) + len(rh)
	out[18], out[19] = byte(pl>>8), byte(pl)
	return out
}

// TestPing6RoutingHeader0: RFC 5095. A packet for the router with a
// type-0 routing header and segments left is neither answered nor handed
// on as another packet for us: it goes to output 2 (for the parameter
// problem), counted; with no segments left the header is ignored (an echo
// request behind it is not answered, as behind any extension header).
func TestPing6RoutingHeader0(t *testing.T) {
	h := elementtest.New(t, "ICMP6PingResponder", &icmp.Config6{Addresses: []string{"v6"}, HopLimit: 64},
		&elementtest.Options{Devices: devs})
	req := echo6(t, "2001:db8::5", "2001:db8::1", 128, false)
	udp := echo6(t, "2001:db8::5", "2001:db8::1", 0, true)
	h.Push(0, withRH0(req, 1), withRH0(udp, 2), withRH0(req, 0), withRH0(udp, 0))
	if n := len(h.Outs[2].Pkts); n != 2 {
		t.Errorf("%d packets on output 2, want the 2 with segments left: %v", n, h.Stats.Counters())
	}
	if n := len(h.Outs[0].Pkts); n != 0 {
		t.Errorf("%d echo replies to packets with a routing header", n)
	}
	if n := len(h.Outs[1].Pkts); n != 1 {
		t.Errorf("%d packets on output 1, want the UDP one without segments left", n)
	}
	if h.Counter("routing header type 0") != 2 {
		t.Errorf("counted %d, want 2", h.Counter("routing header type 0"))
	}
	h.Reset()
	ha := elementtest.New(t, "ICMP6PingResponder", &icmp.Config6{Addresses: []string{"v6"}, HopLimit: 64},
		&elementtest.Options{Devices: devs, Sink: true})
	if a := ha.AllocsPerBatch(100, withRH0(req, 1), req); a != 0 {
		t.Errorf("allocs per batch = %v, want 0", a)
	}
}
