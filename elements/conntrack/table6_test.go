package conntrack_test

import (
	"net"
	"testing"

	"github.com/google/gopacket"
	"github.com/google/gopacket/layers"

	"github.com/junction-dataplane/junction/elements/conntrack"
	"github.com/junction-dataplane/junction/elements/elementtest"
	"github.com/junction-dataplane/junction/packet"
)

// f6 is an IPv6 frame description for the IPv6 tracker's tests.
type f6 struct {
	src, dst     string
	sport, dport uint16
	proto        string // tcp, udp, echo, echoreply, ns
	flags        string // tcp: S, SA, A, F...
	frag         bool
	atomic       bool // with frag: offset 0 and M clear (RFC 6946)
	ext          int  // destination-options headers before the upper layer
}

func (f f6) bytes(t testing.TB) []byte {
	t.Helper()
	eth := &layers.Ethernet{SrcMAC: net.HardwareAddr{2, 0, 0, 0, 0, 1}, DstMAC: net.HardwareAddr{2, 0, 0, 0, 0, 2}, EthernetType: layers.EthernetTypeIPv6}
	ip := &layers.IPv6{Version: 6, HopLimit: 64, SrcIP: net.ParseIP(f.src), DstIP: net.ParseIP(f.dst)}
	var upper layers.IPProtocol
	var l4 []gopacket.SerializableLayer
	switch f.proto {
	case "tcp":
		upper = layers.IPProtocolTCP
		tcp := &layers.TCP{SrcPort: layers.TCPPort(f.sport), DstPort: layers.TCPPort(f.dport), Window: 1000}
		for _, c := range f.flags {
			switch c {
			case 'S':
				tcp.SYN = true
			case 'A':
				tcp.ACK = true
			case 'F':
				tcp.FIN = true
			case 'R':
				tcp.RST = true
			}
		}
		tcp.SetNetworkLayerForChecksum(ip)
		l4 = []gopacket.SerializableLayer{tcp}
	case "udp":
		upper = layers.IPProtocolUDP
		u := &layers.UDP{SrcPort: layers.UDPPort(f.sport), DstPort: layers.UDPPort(f.dport)}
		u.SetNetworkLayerForChecksum(ip)
		l4 = []gopacket.SerializableLayer{u, gopacket.Payload("data")}
	default:
		upper = layers.IPProtocolICMPv6
		typ := map[string]uint8{"echo": 128, "echoreply": 129, "ns": 135}[f.proto]
		ic := &layers.ICMPv6{TypeCode: layers.CreateICMPv6TypeCode(typ, 0)}
		ic.SetNetworkLayerForChecksum(ip)
		l4 = []gopacket.SerializableLayer{ic, &layers.ICMPv6Echo{Identifier: f.sport, SeqNumber: 1}}
	}
	ls := []gopacket.SerializableLayer{eth, ip}
	next := upper
	if f.frag {
		ip.NextHeader = layers.IPProtocolIPv6Fragment
		// gopacket cannot serialize a fragment header: its 8 bytes
		// (first fragment, more to come).
		m := byte(1)
		if f.atomic {
			m = 0
		}
		ls = append(ls, gopacket.Payload{byte(upper), 0, 0, m, 0, 0, 0, 7})
	} else if f.ext > 0 {
		ip.NextHeader = layers.IPProtocolIPv6Destination
		for i := 0; i < f.ext; i++ {
			d := &layers.IPv6Destination{}
			d.NextHeader = layers.IPProtocolIPv6Destination
			if i == f.ext-1 {
				d.NextHeader = next
			}
			d.Options = []*layers.IPv6DestinationOption{{OptionType: 1, OptionLength: 4, OptionData: []byte{0, 0, 0, 0}}}
			ls = append(ls, d)
		}
	} else {
		ip.NextHeader = upper
	}
	ls = append(ls, l4...)
	buf := gopacket.NewSerializeBuffer()
	if err := gopacket.SerializeLayers(buf, gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true}, ls...); err != nil {
		t.Fatal(err)
	}
	return append([]byte(nil), buf.Bytes()...)
}

// ptb6 is an ICMPv6 packet too big from router to dst quoting orig.
func ptb6(t testing.TB, router, dst string, orig []byte) []byte {
	eth := &layers.Ethernet{SrcMAC: net.HardwareAddr{2, 0, 0, 0, 0, 3}, DstMAC: net.HardwareAddr{2, 0, 0, 0, 0, 1}, EthernetType: layers.EthernetTypeIPv6}
	ip := &layers.IPv6{Version: 6, HopLimit: 64, NextHeader: layers.IPProtocolICMPv6, SrcIP: net.ParseIP(router), DstIP: net.ParseIP(dst)}
	ic := &layers.ICMPv6{TypeCode: layers.CreateICMPv6TypeCode(2, 0)}
	ic.SetNetworkLayerForChecksum(ip)
	buf := gopacket.NewSerializeBuffer()
	if err := gopacket.SerializeLayers(buf, gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true},
		eth, ip, ic, gopacket.Payload(append([]byte{0, 0, 5, 0x78}, orig[14:]...))); err != nil { // MTU 1400, the quote
		t.Fatal(err)
	}
	return append([]byte(nil), buf.Bytes()...)
}

func state6(t *testing.T, h *elementtest.Harness, frame []byte) uint8 {
	t.Helper()
	h.Reset()
	h.Push(0, frame)
	for _, r := range h.Outs[0].Pkts {
		return r.Ct.State
	}
	for _, r := range h.Outs[1].Pkts {
		return r.Ct.State
	}
	t.Fatalf("packet dropped: %v", h.Stats.Counters())
	return 0
}

func TestConntrackIPv6(t *testing.T) {
	h := elementtest.New(t, "Conntrack", &conntrack.Config{Capacity: 64}, nil)
	in, out := "2001:db8:1::10", "2001:db8:2::2"
	syn := f6{src: in, dst: out, sport: 40000, dport: 80, proto: "tcp", flags: "S"}
	synack := f6{src: out, dst: in, sport: 80, dport: 40000, proto: "tcp", flags: "SA"}
	ack := f6{src: in, dst: out, sport: 40000, dport: 80, proto: "tcp", flags: "A"}
	for i, c := range []struct {
		f    f6
		want uint8
	}{
		{syn, packet.CtNew}, {synack, packet.CtEstablished}, {ack, packet.CtEstablished},
		{f6{src: in, dst: out, sport: 5000, dport: 53, proto: "udp"}, packet.CtNew},
		{f6{src: out, dst: in, sport: 53, dport: 5000, proto: "udp"}, packet.CtEstablished},
		{f6{src: in, dst: out, sport: 7, proto: "echo"}, packet.CtNew},
		{f6{src: out, dst: in, sport: 7, proto: "echoreply"}, packet.CtEstablished},
		// An inbound connection nobody asked for is new (simple
		// security drops it); a SYN/ACK out of nowhere is invalid.
		{f6{src: out, dst: in, sport: 1234, dport: 22, proto: "tcp", flags: "S"}, packet.CtNew},
		{f6{src: out, dst: in, sport: 1234, dport: 23, proto: "tcp", flags: "SA"}, packet.CtInvalid},
		{f6{src: out, dst: in, sport: 9, proto: "echoreply"}, packet.CtInvalid},
		// Fragments and endless extension-header chains: invalid.
		{f6{src: in, dst: out, sport: 5001, dport: 53, proto: "udp", frag: true}, packet.CtInvalid},
		// RFC 6946: an atomic fragment is a whole datagram, tracked.
		{f6{src: in, dst: out, sport: 5004, dport: 53, proto: "udp", frag: true, atomic: true}, packet.CtNew},
		{f6{src: out, dst: in, sport: 53, dport: 5004, proto: "udp", frag: true, atomic: true}, packet.CtEstablished},
		{f6{src: in, dst: out, sport: 5002, dport: 53, proto: "udp", ext: 9}, packet.CtInvalid},
		{f6{src: in, dst: out, sport: 5003, dport: 53, proto: "udp", ext: 3}, packet.CtNew},
		// Neighbour discovery is not a flow.
		{f6{src: in, dst: "ff02::1:ff00:2", proto: "ns"}, packet.CtUntracked},
	} {
		if got := state6(t, h, c.f.bytes(t)); got != c.want {
			t.Errorf("case %d %+v: ct state %d, want %d (counters %v)", i, c.f, got, c.want, h.Stats.Counters())
		}
	}
	// A packet too big about the TCP flow's outbound packets, from a
	// router beyond, is related; one about an unknown flow is invalid.
	if got := state6(t, h, ptb6(t, "2001:db8:2::9", in, ack.bytes(t))); got != packet.CtRelated {
		t.Errorf("packet too big about the flow: ct state %d (counters %v)", got, h.Stats.Counters())
	}
	other := f6{src: in, dst: out, sport: 40001, dport: 80, proto: "tcp", flags: "A"}
	if got := state6(t, h, ptb6(t, "2001:db8:2::9", in, other.bytes(t))); got != packet.CtInvalid {
		t.Errorf("packet too big about no flow: ct state %d", got)
	}
	garbage := ptb6(t, "2001:db8:2::9", in, ack.bytes(t))
	garbage[len(garbage)-3] ^= 0xff // checksum no longer verifies
	if got := state6(t, h, garbage); got != packet.CtInvalid {
		t.Errorf("corrupt ICMPv6 error: ct state %d", got)
	}
	if h.Counter("invalid: fragment") != 1 || h.Counter("invalid: malformed") != 1 || h.Counter("related") != 1 || h.Counter("untracked") != 1 {
		t.Errorf("counters %v", h.Stats.Counters())
	}
}

// TestConntrackIPv6Full: a flood of new IPv6 flows evicts unassured ones
// only; established flows survive.
func TestConntrackIPv6Full(t *testing.T) {
	h := elementtest.New(t, "Conntrack", &conntrack.Config{Capacity: 16}, nil)
	in, out := "2001:db8:1::10", "2001:db8:2::2"
	state6(t, h, f6{src: in, dst: out, sport: 1, dport: 53, proto: "udp"}.bytes(t))
	state6(t, h, f6{src: out, dst: in, sport: 53, dport: 1, proto: "udp"}.bytes(t))
	for i := 0; i < 5000; i++ {
		state6(t, h, f6{src: out, dst: in, sport: uint16(1000 + i), dport: 22, proto: "tcp", flags: "S"}.bytes(t))
	}
	if got := state6(t, h, f6{src: out, dst: in, sport: 53, dport: 1, proto: "udp"}.bytes(t)); got != packet.CtEstablished {
		t.Fatalf("the established flow was evicted: state %d, counters %v", got, h.Stats.Counters())
	}
	if h.Counter("evicted") == 0 || h.Counter("entries") > 1024 {
		t.Fatalf("counters %v", h.Stats.Counters())
	}
}

func TestConntrackIPv6Allocs(t *testing.T) {
	h := elementtest.New(t, "Conntrack", &conntrack.Config{Capacity: 1024}, &elementtest.Options{Sink: true})
	a := f6{src: "2001:db8:1::10", dst: "2001:db8:2::2", sport: 5000, dport: 53, proto: "udp"}.bytes(t)
	b := f6{src: "2001:db8:2::2", dst: "2001:db8:1::10", sport: 53, dport: 5000, proto: "udp"}.bytes(t)
	if n := testing.AllocsPerRun(100, func() { h.Push(0, a, b, a, b) }); n != 0 {
		t.Fatalf("%v allocations", n)
	}
}

// FuzzConntrack6 feeds arbitrary IPv6 frames (extension-header chains,
// ICMPv6 errors quoting garbage) to the tracker: no panic, every packet
// leaves by an output, and the table stays within its capacity.
func FuzzConntrack6(f *testing.F) {
	f.Add(f6{src: "2001:db8:1::10", dst: "2001:db8:2::2", sport: 1, dport: 53, proto: "udp"}.bytes(f))
	f.Add(f6{src: "2001:db8:1::10", dst: "2001:db8:2::2", sport: 1, dport: 80, proto: "tcp", flags: "S", ext: 2}.bytes(f))
	f.Add(ptb6(f, "2001:db8:2::9", "2001:db8:1::10", f6{src: "2001:db8:1::10", dst: "2001:db8:2::2", sport: 1, dport: 80, proto: "tcp", flags: "A"}.bytes(f)))
	h := elementtest.New(f, "Conntrack", &conntrack.Config{Capacity: 16}, &elementtest.Options{Sink: true, PoolSize: 64})
	f.Fuzz(func(t *testing.T, frame []byte) {
		if len(frame) < 14 || len(frame) > 1900 {
			return
		}
		frame[12], frame[13] = 0x86, 0xdd
		h.Push(0, frame, frame)
		if n := h.Pool.Outstanding(); n != 0 {
			t.Fatalf("%d buffers outstanding", n)
		}
		if n := h.Counter("entries"); n > 1024 {
			t.Fatalf("%d entries", n)
		}
	})
}
