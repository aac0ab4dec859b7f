package ndp_test

import (
	"net"
	"testing"
	"time"

	"github.com/google/gopacket"
	"github.com/google/gopacket/layers"

	"github.com/junction-dataplane/junction/elements"
	"github.com/junction-dataplane/junction/elements/elementtest"
	"github.com/junction-dataplane/junction/elements/ndp"
)

func advertiserCfg(prefixes ...string) *ndp.AdvertiserConfig {
	typ, _ := elements.Lookup("RouterAdvertiser")
	c := typ.NewConfig().(*ndp.AdvertiserConfig)
	c.Device, c.Prefixes, c.MTU = "wan", prefixes, 1500
	return c
}

func rsFrame(t testing.TB, src string, lla net.HardwareAddr, hop uint8) []byte {
	eth := &layers.Ethernet{SrcMAC: peerMAC, DstMAC: net.HardwareAddr{0x33, 0x33, 0, 0, 0, 2}, EthernetType: layers.EthernetTypeIPv6}
	ip := &layers.IPv6{Version: 6, NextHeader: layers.IPProtocolICMPv6, HopLimit: hop, SrcIP: net.ParseIP(src), DstIP: net.ParseIP("ff02::2")}
	ic := &layers.ICMPv6{TypeCode: layers.CreateICMPv6TypeCode(133, 0)}
	ic.SetNetworkLayerForChecksum(ip)
	rs := &layers.ICMPv6RouterSolicitation{}
	if lla != nil {
		rs.Options = append(rs.Options, layers.ICMPv6Option{Type: layers.ICMPv6OptSourceAddress, Data: lla})
	}
	buf := gopacket.NewSerializeBuffer()
	if err := gopacket.SerializeLayers(buf, gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true}, eth, ip, ic, rs); err != nil {
		t.Fatal(err)
	}
	return append([]byte(nil), buf.Bytes()...)
}

func TestRouterAdvertisement(t *testing.T) {
	h := elementtest.New(t, "RouterAdvertiser", advertiserCfg(), &elementtest.Options{Devices: elementtest.Devices{"wan": wanDev}})
	clk := useClock(h)
	tick := h.Element.(elements.Ticker)
	tick.Tick(clk.now())
	out := h.Outs[0].Frames()
	if len(out) != 1 {
		t.Fatalf("%d advertisements at start", len(out))
	}
	eth, ip, pk := decodeND(t, out[0])
	ra, ok := pk.Layer(layers.LayerTypeICMPv6RouterAdvertisement).(*layers.ICMPv6RouterAdvertisement)
	if !ok {
		t.Fatalf("not an RA: %v", pk)
	}
	if eth.DstMAC.String() != "33:33:00:00:00:01" || ip.DstIP.String() != "ff02::1" || ip.SrcIP.String() != ndp.LinkLocal([6]byte(devMAC)).String() {
		t.Errorf("RA %v %v -> %v", eth.DstMAC, ip.SrcIP, ip.DstIP)
	}
	if ra.HopLimit != 64 || ra.RouterLifetime != 1800 || ra.ManagedAddressConfig() || ra.OtherConfig() {
		t.Errorf("RA fields %+v", ra)
	}
	var sawPrefix, sawMTU, sawLLA bool
	for _, o := range ra.Options {
		switch o.Type {
		case layers.ICMPv6OptPrefixInfo:
			// length, flags, valid, preferred, reserved, prefix
			if o.Data[0] == 64 && o.Data[1] == 0xc0 && net.IP(o.Data[14:30]).String() == "2001:db8:2::" {
				sawPrefix = true
			}
		case layers.ICMPv6OptMTU:
			sawMTU = o.Data[5] == 0xdc && o.Data[4] == 0x05
		case layers.ICMPv6OptSourceAddress:
			sawLLA = net.HardwareAddr(o.Data).String() == devMAC.String()
		}
	}
	if !sawPrefix || !sawMTU || !sawLLA {
		t.Errorf("options %+v: prefix %v mtu %v lla %v", ra.Options, sawPrefix, sawMTU, sawLLA)
	}
	// The first three come 16 s apart, then every interval.
	h.Reset()
	for i := 0; i < 40; i++ {
		clk.add(time.Second)
		tick.Tick(clk.now())
	}
	if n := len(h.Outs[0].Frames()); n != 2 {
		t.Errorf("%d advertisements in the next 40 s, want 2 (at 16 and 32 s)", n)
	}
	// A solicitation is answered at once, another within 3 s waits.
	h.Reset()
	clk.add(10 * time.Second)
	h.Push(0, rsFrame(t, "fe80::2", peerMAC, 255), ip6Frame(t, "2001:db8:2::1"))
	if len(h.Outs[0].Frames()) != 1 || len(h.Outs[1].Frames()) != 1 || h.Counter("solicitations") != 1 {
		t.Fatalf("answer: %d RAs, %d others, counters %v", len(h.Outs[0].Frames()), len(h.Outs[1].Frames()), h.Stats.Counters())
	}
	clk.add(time.Second)
	h.Push(0, rsFrame(t, "::", nil, 255))
	if len(h.Outs[0].Frames()) != 1 {
		t.Fatalf("answered again within 3 s")
	}
	clk.add(2 * time.Second)
	tick.Tick(clk.now())
	if len(h.Outs[0].Frames()) != 2 {
		t.Fatalf("the deferred answer did not go out 3 s after the last")
	}
	// Bad solicitations: hop limit, a link-layer option from ::.
	h.Push(0, rsFrame(t, "fe80::2", peerMAC, 64), rsFrame(t, "::", peerMAC, 255))
	if h.Counter("bad solicitation") != 2 {
		t.Errorf("counters %v", h.Stats.Counters())
	}
}

func TestRouterAdvertiserConfig(t *testing.T) {
	for _, c := range []*ndp.AdvertiserConfig{
		advertiserCfg("2001:db8:1::1/64"), advertiserCfg("fe80::/64"), advertiserCfg("10.0.0.0/8"),
		{Device: "wan", Interval: time.Second, Lifetime: 1800 * time.Second},
		{Device: "wan", Interval: 200 * time.Second, Lifetime: 100 * time.Second},
		{Device: "wan", Interval: 200 * time.Second, Lifetime: 1800 * time.Second, MTU: 1000},
	} {
		if c.Validate() == nil {
			t.Errorf("%+v accepted", c)
		}
	}
}
