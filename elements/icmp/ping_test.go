package icmp_test

import (
	"bytes"
	"net"
	"net/netip"
	"testing"

	"github.com/google/gopacket"
	"github.com/google/gopacket/layers"

	"github.com/junction-dataplane/junction/drivers"
	"github.com/junction-dataplane/junction/elements"
	"github.com/junction-dataplane/junction/elements/elementtest"
	"github.com/junction-dataplane/junction/elements/icmp"
	"github.com/junction-dataplane/junction/packet"
)

var devs = elementtest.Devices{
	"lan": elementtest.Device{DevInfo: drivers.Info{Addresses: []netip.Prefix{netip.MustParsePrefix("10.1.0.1/24")}}},
	"wan": elementtest.Device{DevInfo: drivers.Info{Addresses: []netip.Prefix{netip.MustParsePrefix("10.2.0.1/24"), netip.MustParsePrefix("2001:db8::1/64")}}},
	"v6":  elementtest.Device{DevInfo: drivers.Info{Addresses: []netip.Prefix{netip.MustParsePrefix("2001:db8::1/64")}}},
}

type frame struct {
	src, dst string
	proto    layers.IPProtocol
	icmpType uint8
	code     uint8
	ttl      uint8
	frag     bool
	badSum   bool
	truncTo  int
	payload  string
}

func (f frame) bytes(t testing.TB) []byte {
	if f.proto == 0 {
		f.proto = layers.IPProtocolICMPv4
	}
	if f.ttl == 0 {
		f.ttl = 61
	}
	if f.payload == "" {
		f.payload = "abcdefghijklmnopqrstuvwxyz012345"
	}
	eth := &layers.Ethernet{SrcMAC: net.HardwareAddr{2, 0, 0, 0, 1, 2}, DstMAC: net.HardwareAddr{2, 0, 0, 0, 1, 1},
		EthernetType: layers.EthernetTypeIPv4}
	ip := &layers.IPv4{Version: 4, IHL: 5, TTL: f.ttl, Protocol: f.proto, Id: 77,
		SrcIP: net.ParseIP(f.src).To4(), DstIP: net.ParseIP(f.dst).To4()}
	if f.frag {
		ip.Flags = layers.IPv4MoreFragments
	}
	var l4 gopacket.SerializableLayer
	switch f.proto {
	case layers.IPProtocolICMPv4:
		l4 = &layers.ICMPv4{TypeCode: layers.CreateICMPv4TypeCode(f.icmpType, f.code), Id: 0x1234, Seq: 7}
	case layers.IPProtocolUDP:
		u := &layers.UDP{SrcPort: 33434, DstPort: 33435}
		u.SetNetworkLayerForChecksum(ip)
		l4 = u
	}
	buf := gopacket.NewSerializeBuffer()
	if err := gopacket.SerializeLayers(buf, gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true},
		eth, ip, l4, gopacket.Payload(f.payload)); err != nil {
		t.Fatal(err)
	}
	b := append([]byte(nil), buf.Bytes()...)
	if f.badSum {
		b[len(b)-1] ^= 0xff
	}
	if f.truncTo > 0 {
		b = b[:f.truncTo]
	}
	return b
}

func cfg(addrs ...string) *icmp.Config {
	typ, _ := elements.Lookup("ICMPPingResponder")
	c := typ.NewConfig().(*icmp.Config)
	c.Addresses = addrs
	return c
}

func TestPingReply(t *testing.T) {
	for _, c := range []*icmp.Config{cfg("10.1.0.1", "10.2.0.1/24"), cfg("lan", "wan")} {
		h := elementtest.New(t, "ICMPPingResponder", c, &elementtest.Options{Devices: devs})
		req := frame{src: "10.1.0.5", dst: "10.2.0.1", icmpType: 8}.bytes(t)
		p := h.Packet(req)
		p.NextHop = netip.MustParseAddr("10.9.9.9")
		h.PushBatch(0, p)
		if len(h.Outs[0].Pkts) != 1 || h.Counter("replies") != 1 {
			t.Fatalf("no reply: %v", h.Stats.Counters())
		}
		if h.Outs[0].Pkts[0].NextHop.IsValid() {
			t.Errorf("next hop not cleared")
		}
		out := h.Outs[0].Frames()[0]
		pk := gopacket.NewPacket(out, layers.LayerTypeEthernet, gopacket.Default)
		ip, _ := pk.Layer(layers.LayerTypeIPv4).(*layers.IPv4)
		ic, _ := pk.Layer(layers.LayerTypeICMPv4).(*layers.ICMPv4)
		if ip == nil || ic == nil {
			t.Fatalf("undecodable reply % x", out)
		}
		if ip.SrcIP.String() != "10.2.0.1" || ip.DstIP.String() != "10.1.0.5" || ip.TTL != 64 {
			t.Errorf("reply IP %v -> %v ttl %d", ip.SrcIP, ip.DstIP, ip.TTL)
		}
		if ic.TypeCode.Type() != 0 || ic.Id != 0x1234 || ic.Seq != 7 || !bytes.Equal(ic.Payload, []byte("abcdefghijklmnopqrstuvwxyz012345")) {
			t.Errorf("reply ICMP %v id %x seq %d payload %q", ic.TypeCode, ic.Id, ic.Seq, ic.Payload)
		}
		l3 := out[14:]
		if packet.Checksum(l3[:20]) != 0 {
			t.Errorf("bad IP checksum")
		}
		if packet.Checksum(l3[20:]) != 0 {
			t.Errorf("bad ICMP checksum")
		}
		h.Reset()
		h.CheckNoLeak()
	}
}

func TestPingOtherAndDrops(t *testing.T) {
	h := elementtest.New(t, "ICMPPingResponder", cfg("10.1.0.1"), &elementtest.Options{})
	h.Push(0,
		frame{src: "10.1.0.5", dst: "10.1.0.1", proto: layers.IPProtocolUDP}.bytes(t),         // other
		frame{src: "10.1.0.5", dst: "10.1.0.1", icmpType: 13}.bytes(t),                        // other (timestamp)
		frame{src: "10.1.0.5", dst: "10.1.0.2", icmpType: 8}.bytes(t),                         // not for us
		frame{src: "127.0.0.1", dst: "10.1.0.1", icmpType: 8}.bytes(t),                        // bad source
		frame{src: "10.1.0.1", dst: "10.1.0.1", icmpType: 8}.bytes(t),                         // bad source
		frame{src: "10.1.0.5", dst: "10.1.0.1", icmpType: 8, frag: true}.bytes(t),             // fragment
		frame{src: "10.1.0.5", dst: "10.1.0.1", icmpType: 8, badSum: true}.bytes(t),           // bad checksum
		frame{src: "10.1.0.5", dst: "10.1.0.1", icmpType: 8, truncTo: 30}.bytes(t),            // truncated
		frame{src: "10.1.0.5", dst: "10.1.0.1", icmpType: 8, truncTo: 60}.bytes(t),            // total length > frame
		frame{src: "10.1.0.5", dst: "10.1.0.1", icmpType: 8, payload: "-"}.bytes(t)[:14+20+4], // ICMP too short
	)
	want := map[string]uint64{"not for us": 1, "bad source": 2, "fragment": 1, "bad checksum": 1, "truncated": 3, "replies": 0}
	for k, v := range want {
		if got := h.Counter(k); got != v {
			t.Errorf("%s = %d, want %d", k, got, v)
		}
	}
	if len(h.Outs[1].Pkts) != 2 || len(h.Outs[0].Pkts) != 0 {
		t.Errorf("out0 %d out1 %d", len(h.Outs[0].Pkts), len(h.Outs[1].Pkts))
	}
	h.Reset()
	h.CheckNoLeak()
	// Unconnected output 1 drops and counts.
	h2 := elementtest.New(t, "ICMPPingResponder", cfg("10.1.0.1"), &elementtest.Options{Unconnected: []int{1}})
	h2.Push(0, frame{src: "10.1.0.5", dst: "10.1.0.1", proto: layers.IPProtocolUDP}.bytes(t))
	if h2.Counter(elements.UnconnectedReason(1)) != 1 {
		t.Errorf("unconnected output not counted: %v", h2.Stats.Counters())
	}
	h2.CheckNoLeak()
}

func TestPingConfig(t *testing.T) {
	for _, c := range []*icmp.Config{cfg(), cfg("10.1.0.0.1"), cfg("224.0.0.1"), cfg("2001:db8::1")} {
		if err := c.Validate(); err == nil {
			t.Errorf("%v: no error", c.Addresses)
		}
	}
	c := cfg("10.1.0.1")
	c.TTL = 0
	if err := c.Validate(); err == nil {
		t.Errorf("ttl 0 accepted")
	}
	typ, _ := elements.Lookup("ICMPPingResponder")
	for _, name := range []string{"nodev", "v6"} {
		c := cfg(name)
		if err := c.Validate(); err != nil {
			t.Fatal(err)
		}
		ctx := elements.NewContext("p", 0, 1, 64, []*elements.Output{elements.NewOutput(&elements.Clock{}), elements.NewOutput(&elements.Clock{})},
			&elements.Stats{}, packet.NewPool(4), devs, nil)
		if _, err := typ.New(c, ctx); err == nil {
			t.Errorf("%s: New succeeded", name)
		}
	}
}

func TestPingAllocs(t *testing.T) {
	h := elementtest.New(t, "ICMPPingResponder", cfg("10.1.0.1"), &elementtest.Options{Sink: true})
	if a := h.AllocsPerBatch(100, frame{src: "10.1.0.5", dst: "10.1.0.1", icmpType: 8}.bytes(t)); a != 0 {
		t.Fatalf("%v allocs", a)
	}
}

func FuzzPing(f *testing.F) {
	f.Add(frame{src: "10.1.0.5", dst: "10.1.0.1", icmpType: 8}.bytes(f))
	f.Add(frame{src: "10.1.0.5", dst: "10.1.0.1", proto: layers.IPProtocolUDP}.bytes(f))
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) > 1500 {
			return
		}
		h := elementtest.New(t, "ICMPPingResponder", cfg("10.1.0.1"), nil)
		h.Push(0, b)
		for _, out := range h.Outs[0].Frames() {
			if packet.Checksum(out[14:14+20]) != 0 && packet.Checksum(b[14:14+20]) == 0 {
				t.Fatalf("reply broke a valid IP checksum")
			}
		}
		h.Reset()
		h.CheckNoLeak()
	})
}

func BenchmarkPing(b *testing.B) {
	h := elementtest.New(b, "ICMPPingResponder", cfg("10.1.0.1"), &elementtest.Options{Sink: true})
	h.Bench(b, frame{src: "10.1.0.5", dst: "10.1.0.1", icmpType: 8}.bytes(b))
}
