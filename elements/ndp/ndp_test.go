package ndp_test

import (
	"net"
	"net/netip"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/gopacket"
	"github.com/google/gopacket/layers"

	"github.com/junction-dataplane/junction/drivers"
	"github.com/junction-dataplane/junction/elements"
	"github.com/junction-dataplane/junction/elements/elementtest"
	"github.com/junction-dataplane/junction/elements/ndp"
	"github.com/junction-dataplane/junction/packet"
)

var (
	devMAC  = net.HardwareAddr{0x02, 0x00, 0x00, 0x00, 0x02, 0x01}
	peerMAC = net.HardwareAddr{0x02, 0x00, 0x00, 0x00, 0x02, 0x02}
	wanDev  = elementtest.Device{DevInfo: drivers.Info{Name: "wan", MAC: packet.MAC(devMAC), Addresses: []netip.Prefix{
		netip.MustParsePrefix("10.2.0.1/24"), netip.MustParsePrefix("2001:db8:2::1/64")}}}
	ourIP  = netip.MustParseAddr("2001:db8:2::1")
	peerIP = netip.MustParseAddr("2001:db8:2::2")
)

type fakeClock struct{ ns atomic.Int64 }

func (c *fakeClock) now() int64          { return c.ns.Load() }
func (c *fakeClock) add(d time.Duration) { c.ns.Add(int64(d)) }

// useClock gives the elements of hs a clock the test moves.
func useClock(hs ...*elementtest.Harness) *fakeClock {
	c := &fakeClock{}
	c.ns.Store(int64(time.Hour))
	for _, h := range hs {
		ndp.SetClock(h.Element, c.now)
	}
	return c
}

// ndFrame builds an NS or NA with gopacket.
type ndFrame struct {
	typ      uint8 // 135 or 136
	ethSrc   net.HardwareAddr
	src, dst string
	target   string
	flags    uint8 // NA R/S/O
	lla      net.HardwareAddr
	hop      uint8
	extraOpt []byte // raw option bytes appended
}

func (f ndFrame) bytes(t testing.TB) []byte {
	t.Helper()
	if f.hop == 0 {
		f.hop = 255
	}
	if f.ethSrc == nil {
		f.ethSrc = peerMAC
	}
	dst := net.ParseIP(f.dst)
	eth := &layers.Ethernet{SrcMAC: f.ethSrc, DstMAC: net.HardwareAddr{0x33, 0x33, dst[12], dst[13], dst[14], dst[15]},
		EthernetType: layers.EthernetTypeIPv6}
	ip := &layers.IPv6{Version: 6, NextHeader: layers.IPProtocolICMPv6, HopLimit: f.hop,
		SrcIP: net.ParseIP(f.src), DstIP: dst}
	icmp := &layers.ICMPv6{TypeCode: layers.CreateICMPv6TypeCode(f.typ, 0)}
	icmp.SetNetworkLayerForChecksum(ip)
	var body gopacket.SerializableLayer
	if f.typ == 135 {
		ns := &layers.ICMPv6NeighborSolicitation{TargetAddress: net.ParseIP(f.target)}
		if f.lla != nil {
			ns.Options = append(ns.Options, layers.ICMPv6Option{Type: layers.ICMPv6OptSourceAddress, Data: f.lla})
		}
		body = ns
	} else {
		na := &layers.ICMPv6NeighborAdvertisement{TargetAddress: net.ParseIP(f.target), Flags: f.flags}
		if f.lla != nil {
			na.Options = append(na.Options, layers.ICMPv6Option{Type: layers.ICMPv6OptTargetAddress, Data: f.lla})
		}
		body = na
	}
	buf := gopacket.NewSerializeBuffer()
	if err := gopacket.SerializeLayers(buf, gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true},
		eth, ip, icmp, body, gopacket.Payload(f.extraOpt)); err != nil {
		t.Fatal(err)
	}
	return append([]byte(nil), buf.Bytes()...)
}

func querierCfg(neigh ...string) *ndp.QuerierConfig {
	typ, _ := elements.Lookup("NDPQuerier")
	c := typ.NewConfig().(*ndp.QuerierConfig)
	c.Device = "wan"
	c.Neighbors = neigh
	return c
}

func newQuerier(t testing.TB, c *ndp.QuerierConfig) *elementtest.Harness {
	return elementtest.New(t, "NDPQuerier", c, &elementtest.Options{Devices: elementtest.Devices{"wan": wanDev}})
}

func responderCfg() *ndp.ResponderConfig {
	typ, _ := elements.Lookup("NDPResponder")
	c := typ.NewConfig().(*ndp.ResponderConfig)
	c.Device = "wan"
	return c
}

func newResponder(t testing.TB) *elementtest.Harness {
	return elementtest.New(t, "NDPResponder", responderCfg(), &elementtest.Options{Devices: elementtest.Devices{"wan": wanDev}})
}

// ip6Frame is an Ethernet/IPv6/UDP frame to dst with a junk Ethernet header.
func ip6Frame(t testing.TB, dst string) []byte {
	eth := &layers.Ethernet{SrcMAC: net.HardwareAddr{1, 1, 1, 1, 1, 1}, DstMAC: net.HardwareAddr{3, 3, 3, 3, 3, 3},
		EthernetType: layers.EthernetTypeIPv6}
	ip := &layers.IPv6{Version: 6, NextHeader: layers.IPProtocolUDP, HopLimit: 63,
		SrcIP: net.ParseIP("2001:db8:1::10"), DstIP: net.ParseIP(dst)}
	udp := &layers.UDP{SrcPort: 1234, DstPort: 9}
	udp.SetNetworkLayerForChecksum(ip)
	buf := gopacket.NewSerializeBuffer()
	if err := gopacket.SerializeLayers(buf, gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true},
		eth, ip, udp, gopacket.Payload("hello")); err != nil {
		t.Fatal(err)
	}
	return append([]byte(nil), buf.Bytes()...)
}

// decodeND decodes a frame with gopacket and checks the ICMPv6 checksum
// independently.
func decodeND(t *testing.T, f []byte) (*layers.Ethernet, *layers.IPv6, gopacket.Packet) {
	t.Helper()
	pk := gopacket.NewPacket(f, layers.LayerTypeEthernet, gopacket.Default)
	if el := pk.ErrorLayer(); el != nil {
		t.Fatalf("gopacket: %v", el.Error())
	}
	eth := pk.Layer(layers.LayerTypeEthernet).(*layers.Ethernet)
	ip := pk.Layer(layers.LayerTypeIPv6).(*layers.IPv6)
	if ip.HopLimit != 255 {
		t.Errorf("hop limit %d, want 255", ip.HopLimit)
	}
	icmp := pk.Layer(layers.LayerTypeICMPv6).(*layers.ICMPv6)
	// Recompute the checksum over the pseudo-header with gopacket.
	c := *icmp
	c.SetNetworkLayerForChecksum(ip)
	buf := gopacket.NewSerializeBuffer()
	if err := gopacket.SerializeLayers(buf, gopacket.SerializeOptions{ComputeChecksums: true}, &c, gopacket.Payload(icmp.Payload)); err != nil {
		t.Fatal(err)
	}
	if got, want := icmp.Checksum, uint16(buf.Bytes()[2])<<8|uint16(buf.Bytes()[3]); got != want {
		t.Errorf("ICMPv6 checksum %#04x, gopacket computes %#04x", got, want)
	}
	return eth, ip, pk
}

func TestLinkLocalEUI64(t *testing.T) {
	got := ndp.LinkLocal(packet.MAC(devMAC))
	if want := netip.MustParseAddr("fe80::ff:fe00:201"); got != want {
		t.Fatalf("LinkLocal(%v) = %v, want %v", devMAC, got, want)
	}
	got = ndp.LinkLocal(packet.MAC{0x00, 0x11, 0x22, 0x33, 0x44, 0x55})
	if want := netip.MustParseAddr("fe80::211:22ff:fe33:4455"); got != want {
		t.Fatalf("got %v, want %v", got, want)
	}
}

func TestResponderAnswersSolicitation(t *testing.T) {
	h := newResponder(t)
	ns := ndFrame{typ: 135, src: peerIP.String(), dst: "ff02::1:ff00:1", target: ourIP.String(), lla: peerMAC}
	h.Push(0, ns.bytes(t))
	out := h.Outs[0].Frames()
	if len(out) != 1 {
		t.Fatalf("%d answers, counters %v", len(out), h.Stats.Counters())
	}
	eth, ip, pk := decodeND(t, out[0])
	if eth.DstMAC.String() != peerMAC.String() || eth.SrcMAC.String() != devMAC.String() {
		t.Errorf("ethernet %v -> %v", eth.SrcMAC, eth.DstMAC)
	}
	if !ip.SrcIP.Equal(net.IP(ourIP.AsSlice())) || !ip.DstIP.Equal(net.IP(peerIP.AsSlice())) {
		t.Errorf("ip %v -> %v", ip.SrcIP, ip.DstIP)
	}
	na, ok := pk.Layer(layers.LayerTypeICMPv6NeighborAdvertisement).(*layers.ICMPv6NeighborAdvertisement)
	if !ok {
		t.Fatalf("not an NA: %v", pk)
	}
	if !na.Router() || !na.Solicited() || !na.Override() || !na.TargetAddress.Equal(net.IP(ourIP.AsSlice())) {
		t.Errorf("NA flags %#x target %v", na.Flags, na.TargetAddress)
	}
	if len(na.Options) != 1 || na.Options[0].Type != layers.ICMPv6OptTargetAddress || net.HardwareAddr(na.Options[0].Data).String() != devMAC.String() {
		t.Errorf("options %v", na.Options)
	}
}

func TestResponderLinkLocalAndDAD(t *testing.T) {
	h := newResponder(t)
	ll := ndp.LinkLocal(packet.MAC(devMAC))
	// A solicitation for the derived link-local address, and a DAD probe
	// for our global one (source ::, to its solicited-node group).
	h.Push(0, ndFrame{typ: 135, src: "fe80::2", dst: "ff02::1:ff00:201", target: ll.String(), lla: peerMAC}.bytes(t),
		ndFrame{typ: 135, src: "::", dst: "ff02::1:ff00:1", target: ourIP.String()}.bytes(t))
	out := h.Outs[0].Frames()
	if len(out) != 2 || h.Counter("dad defended") != 1 {
		t.Fatalf("%d answers, counters %v", len(out), h.Stats.Counters())
	}
	_, ip, pk := decodeND(t, out[1])
	na := pk.Layer(layers.LayerTypeICMPv6NeighborAdvertisement).(*layers.ICMPv6NeighborAdvertisement)
	if ip.DstIP.String() != "ff02::1" || na.Solicited() || !na.Override() {
		t.Errorf("DAD defence to %v flags %#x", ip.DstIP, na.Flags)
	}
}

func TestResponderDropsAndPasses(t *testing.T) {
	h := newResponder(t)
	good := ndFrame{typ: 135, src: peerIP.String(), dst: "ff02::1:ff00:1", target: ourIP.String(), lla: peerMAC}
	hop := good
	hop.hop = 64
	notOurs := good
	notOurs.target = "2001:db8:2::99"
	badOpt := good
	badOpt.extraOpt = []byte{14, 0, 0, 0, 0, 0, 0, 0} // a zero-length option
	shortOpt := good
	shortOpt.extraOpt = []byte{14, 4, 0, 0, 0, 0, 0, 0} // claims 32 bytes, has 8
	dadLLA := good
	dadLLA.src = "::"
	bad := map[string][]byte{
		"hop limit not 255": hop.bytes(t),
		"not for us":        notOurs.bytes(t),
		"malformed option":  badOpt.bytes(t),
		"bad dad probe":     dadLLA.bytes(t),
	}
	for reason, f := range bad {
		h.Push(0, f)
		if h.Counter(reason) != 1 {
			t.Errorf("%s: counters %v", reason, h.Stats.Counters())
		}
	}
	h.Push(0, shortOpt.bytes(t))
	if h.Counter("malformed option") != 2 {
		t.Errorf("option beyond the message: counters %v", h.Stats.Counters())
	}
	csum := good.bytes(t)
	csum[len(csum)-1] ^= 0xff
	h.Push(0, csum)
	if h.Counter("bad checksum") != 1 {
		t.Errorf("bad checksum: counters %v", h.Stats.Counters())
	}
	if n := len(h.Outs[0].Frames()); n != 0 {
		t.Errorf("%d answers to bad solicitations", n)
	}
	// Not neighbour discovery: passed on untouched.
	udp := ip6Frame(t, ourIP.String())
	na := ndFrame{typ: 136, src: peerIP.String(), dst: ourIP.String(), target: peerIP.String(), flags: 0x60, lla: peerMAC}.bytes(t)
	h.Push(0, udp, na)
	if o := h.Outs[1].Frames(); len(o) != 1 || string(o[0]) != string(udp) {
		t.Errorf("passed %d frames", len(o))
	}
	// The advertisement, and a copy of each solicitation answered, are
	// for the querier to learn from.
	h.Push(0, good.bytes(t))
	if o := h.Outs[2].Frames(); len(o) != 2 || string(o[0]) != string(na) || string(o[1]) != string(good.bytes(t)) {
		t.Errorf("%d frames to learn from", len(o))
	}
}

func TestResponderAnnounces(t *testing.T) {
	h := newResponder(t)
	r := h.Element.(elements.Ticker)
	// First duplicate address detection: a probe per address (global and
	// link-local) from ::, to its solicited-node group, no option.
	r.Tick(int64(time.Hour))
	r.Tick(int64(time.Hour) + int64(time.Millisecond)) // too soon for anything else
	ns, ips, eths := solicitations(t, h.Outs[0].Frames())
	if len(ns) != 2 || len(h.Outs[0].Frames()) != 2 {
		t.Fatalf("%d DAD probes of %d frames, want 2", len(ns), len(h.Outs[0].Frames()))
	}
	for i := range ns {
		sn := net.ParseIP("ff02::1:ff00:0")
		copy(sn[13:], ns[i].TargetAddress[13:])
		if ips[i].SrcIP.String() != "::" || !ips[i].DstIP.Equal(sn) || len(ns[i].Options) != 0 ||
			eths[i].DstMAC.String() != (net.HardwareAddr{0x33, 0x33, sn[12], sn[13], sn[14], sn[15]}).String() {
			t.Errorf("DAD probe %v -> %v (%v) target %v options %v", ips[i].SrcIP, ips[i].DstIP, eths[i].DstMAC, ns[i].TargetAddress, ns[i].Options)
		}
	}
	h.Reset()
	// A second later, the announcements.
	r.Tick(int64(time.Hour) + int64(time.Second))
	out := h.Outs[0].Frames()
	if len(out) != 2 { // global + link-local
		t.Fatalf("%d announcements, want 2", len(out))
	}
	for _, f := range out {
		eth, ip, pk := decodeND(t, f)
		na := pk.Layer(layers.LayerTypeICMPv6NeighborAdvertisement).(*layers.ICMPv6NeighborAdvertisement)
		if eth.DstMAC.String() != "33:33:00:00:00:01" || ip.DstIP.String() != "ff02::1" || na.Solicited() || !na.Override() {
			t.Errorf("announcement %v -> %v flags %#x", eth.DstMAC, ip.DstIP, na.Flags)
		}
	}
	for i := 0; i < 5; i++ {
		r.Tick(int64(time.Hour) + int64(i+2)*int64(time.Second))
	}
	if n := h.Counter("announcements"); n != 2+6 {
		t.Errorf("%d packets at start, want 2 DAD probes and 3 rounds of 2 announcements", n)
	}
	// Another node advertising one of our addresses is a conflict.
	h.Push(0, ndFrame{typ: 136, src: "fe80::9", dst: "ff02::1", target: ourIP.String(), flags: 0x20, lla: peerMAC}.bytes(t))
	if h.Counter("address conflict") != 1 {
		t.Errorf("counters %v", h.Stats.Counters())
	}
}

// solicitations returns the NS frames in out, decoded.
func solicitations(t *testing.T, out [][]byte) (ns []*layers.ICMPv6NeighborSolicitation, ips []*layers.IPv6, eths []*layers.Ethernet) {
	for _, f := range out {
		pk := gopacket.NewPacket(f, layers.LayerTypeEthernet, gopacket.Default)
		if s, ok := pk.Layer(layers.LayerTypeICMPv6NeighborSolicitation).(*layers.ICMPv6NeighborSolicitation); ok {
			eth, ip, _ := decodeND(t, f)
			ns, ips, eths = append(ns, s), append(ips, ip), append(eths, eth)
		}
	}
	return
}

func TestQuerierResolves(t *testing.T) {
	h := newQuerier(t, querierCfg())
	clk := useClock(h)
	q := h.Element.(*ndp.Querier)
	h.PushVia(0, peerIP.String(), ip6Frame(t, "2001:db8:16::5"), ip6Frame(t, "2001:db8:16::6"))
	ns, ips, eths := solicitations(t, h.Outs[0].Frames())
	if len(ns) != 1 || h.Counter("held") != 2 {
		t.Fatalf("%d solicitations, counters %v", len(ns), h.Stats.Counters())
	}
	if eths[0].DstMAC.String() != "33:33:ff:00:00:02" || ips[0].DstIP.String() != "ff02::1:ff00:2" ||
		ips[0].SrcIP.String() != ourIP.String() || !ns[0].TargetAddress.Equal(net.ParseIP(peerIP.String())) {
		t.Errorf("NS %v %v -> %v target %v", eths[0].DstMAC, ips[0].SrcIP, ips[0].DstIP, ns[0].TargetAddress)
	}
	if len(ns[0].Options) != 1 || net.HardwareAddr(ns[0].Options[0].Data).String() != devMAC.String() {
		t.Errorf("NS options %v", ns[0].Options)
	}
	if st, _ := q.Neighbor(peerIP); st != ndp.Incomplete {
		t.Errorf("state %v, want INCOMPLETE", st)
	}
	h.Reset()
	clk.add(100 * time.Millisecond)
	h.Push(1, ndFrame{typ: 136, src: peerIP.String(), dst: ourIP.String(), target: peerIP.String(), flags: 0x60, lla: peerMAC}.bytes(t))
	out := h.Outs[0].Frames()
	if len(out) != 2 || h.Counter("released") != 2 {
		t.Fatalf("%d released, counters %v", len(out), h.Stats.Counters())
	}
	for _, f := range out {
		eth := gopacket.NewPacket(f, layers.LayerTypeEthernet, gopacket.Default).Layer(layers.LayerTypeEthernet).(*layers.Ethernet)
		if eth.DstMAC.String() != peerMAC.String() || eth.SrcMAC.String() != devMAC.String() || eth.EthernetType != layers.EthernetTypeIPv6 {
			t.Errorf("released frame %v -> %v %v", eth.SrcMAC, eth.DstMAC, eth.EthernetType)
		}
	}
	if st, _ := q.Neighbor(peerIP); st != ndp.Reachable {
		t.Errorf("state %v, want REACHABLE", st)
	}
}

// TestQuerierStates walks REACHABLE -> STALE -> DELAY -> PROBE -> resolved
// afresh, and INCOMPLETE giving up after three solicitations.
func TestQuerierStates(t *testing.T) {
	h := newQuerier(t, querierCfg())
	clk := useClock(h)
	q := h.Element.(*ndp.Querier)
	tick := h.Element.(elements.Ticker)
	na := ndFrame{typ: 136, src: peerIP.String(), dst: ourIP.String(), target: peerIP.String(), flags: 0x60, lla: peerMAC}.bytes(t)
	state := func() ndp.State { s, _ := q.Neighbor(peerIP); return s }

	h.PushVia(0, peerIP.String(), ip6Frame(t, "2001:db8:16::5"))
	h.Push(1, na)
	if state() != ndp.Reachable {
		t.Fatalf("state %v", state())
	}
	clk.add(29 * time.Second)
	h.Reset()
	h.PushVia(0, peerIP.String(), ip6Frame(t, "2001:db8:16::5"))
	if state() != ndp.Reachable || len(h.Outs[0].Frames()) != 1 {
		t.Fatalf("at 29 s: %v, %d frames", state(), len(h.Outs[0].Frames()))
	}
	clk.add(2 * time.Second) // past the reachable time: stale, and this packet starts DELAY
	h.PushVia(0, peerIP.String(), ip6Frame(t, "2001:db8:16::5"))
	if state() != ndp.Delay {
		t.Fatalf("after reachable time: %v, want DELAY", state())
	}
	clk.add(5 * time.Second)
	h.Reset()
	h.PushVia(0, peerIP.String(), ip6Frame(t, "2001:db8:16::5"))
	ns, ips, eths := solicitations(t, h.Outs[0].Frames())
	if state() != ndp.Probe || len(ns) != 1 || eths[0].DstMAC.String() != peerMAC.String() || ips[0].DstIP.String() != peerIP.String() {
		t.Fatalf("after delay: %v, %d unicast probes", state(), len(ns))
	}
	if len(h.Outs[0].Frames()) != 2 {
		t.Errorf("the packet was not sent while probing")
	}
	// Two more probes, a second apart, then it is resolved afresh.
	for i := 0; i < 2; i++ {
		clk.add(time.Second)
		h.PushVia(0, peerIP.String(), ip6Frame(t, "2001:db8:16::5"))
	}
	h.Reset()
	clk.add(time.Second)
	h.PushVia(0, peerIP.String(), ip6Frame(t, "2001:db8:16::5"))
	ns, ips, _ = solicitations(t, h.Outs[0].Frames())
	if state() != ndp.Incomplete || len(ns) != 1 || ips[0].DstIP.String() != "ff02::1:ff00:2" || h.Counter("held") != 2 {
		t.Fatalf("after 3 unanswered probes: %v, %d multicast NS, counters %v", state(), len(ns), h.Stats.Counters())
	}
	// Unanswered: two more solicitations, then the held packet is dropped.
	for i := 0; i < 3; i++ {
		clk.add(time.Second)
		tick.Tick(clk.now())
	}
	if h.Counter("solicitations") != 1+3+3 || h.Counter("unresolved") != 1 || state() != ndp.Free {
		t.Fatalf("gave up: %v, counters %v", state(), h.Stats.Counters())
	}
}

func TestQuerierLearnsFromSolicitation(t *testing.T) {
	h := newQuerier(t, querierCfg())
	clk := useClock(h)
	q := h.Element.(*ndp.Querier)
	// An NS for someone else makes no entry; one for us does (STALE).
	h.Push(1, ndFrame{typ: 135, src: peerIP.String(), dst: "ff02::1:ff00:99", target: "2001:db8:2::99", lla: peerMAC}.bytes(t))
	if st, _ := q.Neighbor(peerIP); st != ndp.Free {
		t.Fatalf("learnt from an NS for another target: %v", st)
	}
	h.Push(1, ndFrame{typ: 135, src: peerIP.String(), dst: "ff02::1:ff00:1", target: ourIP.String(), lla: peerMAC}.bytes(t))
	st, mac := q.Neighbor(peerIP)
	if st != ndp.Stale || mac.String() != peerMAC.String() {
		t.Fatalf("after NS: %v %v", st, mac)
	}
	clk.add(time.Millisecond)
	h.Reset()
	h.PushVia(0, peerIP.String(), ip6Frame(t, "2001:db8:16::5"))
	if len(h.Outs[0].Frames()) != 1 {
		t.Fatalf("a STALE entry must be used")
	}
	// An unsolicited NA with another MAC and no override only casts doubt.
	other := net.HardwareAddr{2, 0, 0, 0, 9, 9}
	h.Push(1, ndFrame{typ: 136, src: peerIP.String(), dst: "ff02::1", target: peerIP.String(), flags: 0, lla: other}.bytes(t))
	if _, mac := q.Neighbor(peerIP); mac.String() != peerMAC.String() {
		t.Errorf("NA without override replaced the MAC: %v", mac)
	}
	h.Push(1, ndFrame{typ: 136, src: peerIP.String(), dst: "ff02::1", target: peerIP.String(), flags: 0x20, lla: other}.bytes(t))
	if st, mac := q.Neighbor(peerIP); mac.String() != other.String() || st != ndp.Stale {
		t.Errorf("NA with override: %v %v", st, mac)
	}
}

func TestQuerierStaticAndMulticast(t *testing.T) {
	h := newQuerier(t, querierCfg("2001:db8:2::2 02:00:00:00:02:02"))
	useClock(h)
	h.PushVia(0, "2001:db8:2::2", ip6Frame(t, "2001:db8:16::5"))
	h.PushVia(0, "", ip6Frame(t, "ff02::5"))
	out := h.Outs[0].Frames()
	if len(out) != 2 || h.Counter("solicitations") != 0 {
		t.Fatalf("%d frames, counters %v", len(out), h.Stats.Counters())
	}
	if d := net.HardwareAddr(out[0][0:6]).String(); d != peerMAC.String() {
		t.Errorf("static: dst %v", d)
	}
	if d := net.HardwareAddr(out[1][0:6]).String(); d != "33:33:00:00:00:05" {
		t.Errorf("multicast: dst %v", d)
	}
	h.PushVia(0, "10.2.0.2", ip6Frame(t, "2001:db8:16::5"))
	if h.Counter("not ipv6") != 1 {
		t.Errorf("IPv4 next hop: %v", h.Stats.Counters())
	}
}

// TestQuerierFlood: solicitations for our address from many random sources
// and packets to many unresolved next hops stay within the table and the
// queues, counted; the neighbour in use survives.
func TestQuerierFlood(t *testing.T) {
	h := newQuerier(t, querierCfg())
	clk := useClock(h)
	q := h.Element.(*ndp.Querier)
	h.Push(1, ndFrame{typ: 135, src: peerIP.String(), dst: "ff02::1:ff00:1", target: ourIP.String(), lla: peerMAC}.bytes(t))
	h.PushVia(0, peerIP.String(), ip6Frame(t, "2001:db8:16::5")) // in use
	h.Reset()
	for i := 0; i < 20000; i++ {
		src := netip.AddrFrom16([16]byte{0x20, 0x01, 0x0d, 0xb8, 0, 2, 8: byte(i >> 16), 9: byte(i >> 8), 10: byte(i), 15: 7})
		h.Push(1, ndFrame{typ: 135, src: src.String(), dst: "ff02::1:ff00:1", target: ourIP.String(), lla: peerMAC}.bytes(t))
		h.Reset()
	}
	if st, _ := q.Neighbor(peerIP); st == ndp.Free {
		t.Fatalf("the neighbour in use was evicted by the flood")
	}

	for i := 0; i < 200; i++ {
		clk.add(time.Microsecond)
		nh := netip.AddrFrom16([16]byte{0x20, 0x01, 0x0d, 0xb8, 0, 2, 14: byte(i >> 8), 15: byte(i)}).String()
		h.PushVia(0, nh, ip6Frame(t, "2001:db8:16::5"), ip6Frame(t, "2001:db8:16::5"))
		h.Reset()
	}
	if h.Counter("too many unresolved") == 0 || h.Counter("held") > 2*64 {
		t.Fatalf("counters %v", h.Stats.Counters())
	}
	if n := q.Entries(); n > 4096 {
		t.Fatalf("%d entries", n)
	}
}

// TestQuerierFullTable: with every cache slot held by a neighbour in use
// (a packet sent to it, within timeout), solicitations from new senders
// cannot make entries: they are refused and counted, and the neighbours
// in use stay.
func TestQuerierFullTable(t *testing.T) {
	c := querierCfg()
	c.LearnRate = 1 << 30 // the table's limit, not learn_rate's
	h := newQuerier(t, c)
	useClock(h)
	q := h.Element.(*ndp.Querier)
	addr := func(i int) string {
		return netip.AddrFrom16([16]byte{0x20, 0x01, 0x0d, 0xb8, 0, 2, 8: 1, 13: byte(i >> 16), 14: byte(i >> 8), 15: byte(i)}).String()
	}
	f := ip6Frame(t, "2001:db8:16::5")
	for i := 0; q.Entries() < 4096 && i < 8192; i++ {
		h.Push(1, ndFrame{typ: 135, src: addr(i), dst: "ff02::1:ff00:1", target: ourIP.String(), lla: peerMAC}.bytes(t))
		h.PushVia(0, addr(i), f) // STALE -> DELAY: in use
		h.Reset()
	}
	if n := q.Entries(); n != 4096 {
		t.Fatalf("%d entries, want the table full (4096)", n)
	}
	learned, refused := h.Counter("learned"), h.Counter("not learned: table full")
	const flood = 1000
	for i := 0; i < flood; i++ {
		h.Push(1, ndFrame{typ: 135, src: addr(100000 + i), dst: "ff02::1:ff00:1", target: ourIP.String(), lla: peerMAC}.bytes(t))
		h.Reset()
	}
	if nl, l := h.Counter("not learned: table full")-refused, h.Counter("learned")-learned; nl != flood || l != 0 {
		t.Fatalf("%d solicitations from new senders into a full table: not learned %d, learned %d", flood, nl, l)
	}
	if st, _ := q.Neighbor(netip.MustParseAddr(addr(7))); st == ndp.Free {
		t.Errorf("a neighbour in use was evicted")
	}
}

func TestQuerierAllocs(t *testing.T) {
	h := elementtest.New(t, "NDPQuerier", querierCfg("2001:db8:2::2 02:00:00:00:02:02"),
		&elementtest.Options{Devices: elementtest.Devices{"wan": wanDev}, Sink: true})
	useClock(h)
	f := ip6Frame(t, "2001:db8:16::5")
	nh := netip.MustParseAddr("2001:db8:2::2")
	b := packet.NewBatch(64)
	allocs := testing.AllocsPerRun(100, func() {
		for i := 0; i < 32; i++ {
			p := h.Pool.Get()
			p.SetFrame(f)
			p.NextHop = nh
			b.Add(p)
		}
		h.Element.Push(0, b)
		b.Reset()
	})
	if allocs != 0 {
		t.Fatalf("%v allocations per batch", allocs)
	}
}
