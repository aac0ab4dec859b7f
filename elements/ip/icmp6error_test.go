package ip

import (
	"bytes"
	"net"
	"testing"

	"github.com/google/gopacket"
	"github.com/google/gopacket/layers"
	"github.com/junction-dataplane/junction/elements/elementtest"
)

// frame6 builds Ethernet/IPv6[/ext]/(UDP|ICMPv6)/payload with gopacket.
type frame6 struct {
	src, dst string
	dstMAC   net.HardwareAddr
	icmpType uint8 // ICMPv6 when non-zero
	hopByHop bool  // a hop-by-hop header before the upper layer
	payload  int
}

func (o frame6) bytes(t testing.TB) []byte {
	t.Helper()
	if o.src == "" {
		o.src = "2001:db8:1::10"
	}
	if o.dst == "" {
		o.dst = "2001:db8:16::5"
	}
	if o.dstMAC == nil {
		o.dstMAC = macB
	}
	eth := &layers.Ethernet{SrcMAC: macA, DstMAC: o.dstMAC, EthernetType: layers.EthernetTypeIPv6}
	ip := &layers.IPv6{Version: 6, HopLimit: 1, SrcIP: net.ParseIP(o.src), DstIP: net.ParseIP(o.dst)}
	ls := []gopacket.SerializableLayer{eth, ip}
	upper := layers.IPProtocolUDP
	if o.icmpType != 0 {
		upper = layers.IPProtocolICMPv6
	}
	if o.hopByHop {
		ip.NextHeader = layers.IPProtocolIPv6HopByHop
		hbh := &layers.IPv6HopByHop{}
		hbh.NextHeader = upper
		hbh.Options = []*layers.IPv6HopByHopOption{{OptionType: 1, OptionLength: 4, OptionData: []byte{0, 0, 0, 0}}}
		ls = append(ls, hbh)
	} else {
		ip.NextHeader = upper
	}
	if o.icmpType != 0 {
		ic := &layers.ICMPv6{TypeCode: layers.CreateICMPv6TypeCode(o.icmpType, 0)}
		ic.SetNetworkLayerForChecksum(ip)
		ls = append(ls, ic)
	} else {
		u := &layers.UDP{SrcPort: 33434, DstPort: 33435}
		u.SetNetworkLayerForChecksum(ip)
		ls = append(ls, u)
	}
	ls = append(ls, gopacket.Payload(bytes.Repeat([]byte{0xab}, o.payload)))
	buf := gopacket.NewSerializeBuffer()
	if err := gopacket.SerializeLayers(buf, gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true}, ls...); err != nil {
		t.Fatal(err)
	}
	return append([]byte(nil), buf.Bytes()...)
}

func icmp6Cfg(typ, code any, mtu int) *ICMP6ErrorConfig {
	c := &ICMP6ErrorConfig{Src: "2001:db8:2::1", ICMPType: NumberOrName{Num: -1}, HopLimit: 64, Burst: 10, MTU: mtu}
	setTypeCode(&c.ICMPType, &c.ICMPCode, typ, code)
	return c
}

// checkICMP6Error decodes out with gopacket, verifies the checksum over the
// pseudo-header independently, and checks the quote.
func checkICMP6Error(t *testing.T, out, orig []byte, typ, code uint8, rest uint32) {
	t.Helper()
	pk := gopacket.NewPacket(out, layers.LayerTypeEthernet, gopacket.Default)
	eth, _ := pk.Layer(layers.LayerTypeEthernet).(*layers.Ethernet)
	ip, _ := pk.Layer(layers.LayerTypeIPv6).(*layers.IPv6)
	ic, _ := pk.Layer(layers.LayerTypeICMPv6).(*layers.ICMPv6)
	if eth == nil || ip == nil || ic == nil {
		t.Fatalf("gopacket could not decode Ethernet/IPv6/ICMPv6: %v", pk.ErrorLayer())
	}
	if !bytes.Equal(eth.DstMAC, orig[6:12]) || !bytes.Equal(eth.SrcMAC, orig[0:6]) {
		t.Errorf("MACs not swapped: %v -> %v", eth.SrcMAC, eth.DstMAC)
	}
	if ip.SrcIP.String() != "2001:db8:2::1" || !ip.DstIP.Equal(net.IP(orig[22:38])) || ip.HopLimit != 64 || ip.NextHeader != layers.IPProtocolICMPv6 {
		t.Errorf("ip %v -> %v hop %d next %v", ip.SrcIP, ip.DstIP, ip.HopLimit, ip.NextHeader)
	}
	if int(ip.Length) != len(out)-54 || len(out)-14 > 1280 {
		t.Errorf("payload length %d, frame %d", ip.Length, len(out))
	}
	if ic.TypeCode.Type() != typ || ic.TypeCode.Code() != code {
		t.Errorf("type/code %v", ic.TypeCode)
	}
	// The checksum, recomputed by gopacket over the same message.
	c := layers.ICMPv6{TypeCode: ic.TypeCode}
	c.SetNetworkLayerForChecksum(ip)
	buf := gopacket.NewSerializeBuffer()
	if err := gopacket.SerializeLayers(buf, gopacket.SerializeOptions{ComputeChecksums: true}, &c, gopacket.Payload(out[58:])); err != nil {
		t.Fatal(err)
	}
	if got, want := ic.Checksum, uint16(buf.Bytes()[2])<<8|uint16(buf.Bytes()[3]); got != want {
		t.Errorf("checksum %#04x, gopacket computes %#04x", got, want)
	}
	if r := uint32(out[58])<<24 | uint32(out[59])<<16 | uint32(out[60])<<8 | uint32(out[61]); r != rest {
		t.Errorf("second word %d, want %d", r, rest)
	}
	q := out[62:]
	want := orig[14:]
	if len(want) > 1280-48 {
		want = want[:1280-48]
	}
	if !bytes.Equal(q, want) {
		t.Errorf("quote of %d bytes differs from the original's first %d", len(q), len(want))
	}
}

func TestICMP6ErrorBuilds(t *testing.T) {
	for _, tt := range []struct {
		name      string
		typ, code any
		mtu       int
		wantT     uint8
		wantC     uint8
		rest      uint32
		f         frame6
	}{
		{"time exceeded", "timeexceeded", 0, 0, 3, 0, 0, frame6{payload: 20}},
		{"unreachable port", "unreachable", "port", 0, 1, 4, 0, frame6{payload: 20}},
		{"unreachable noroute", "unreachable", "noroute", 0, 1, 0, 0, frame6{}},
		{"unreachable adminprohibited", 1, "adminprohibited", 0, 1, 1, 0, frame6{}},
		{"too big, quote cut at 1280", "toobig", 0, 1400, 2, 0, 1400, frame6{payload: 1400}},
		{"about an echo request", "timeexceeded", 0, 0, 3, 0, 0, frame6{icmpType: 128, payload: 8}},
		{"behind a hop-by-hop header", "timeexceeded", "hoplimit", 0, 3, 0, 0, frame6{hopByHop: true}},
		{"too big to multicast", "toobig", 0, 1280, 2, 0, 1280, frame6{dst: "ff0e::1", dstMAC: net.HardwareAddr{0x33, 0x33, 0, 0, 0, 1}, payload: 1300}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := icmp6Cfg(tt.typ, tt.code, tt.mtu)
			h := elementtest.New(t, "ICMP6Error", c, nil)
			f := tt.f.bytes(t)
			h.Push(0, f)
			out := h.Outs[0].Frames()
			if len(out) != 1 {
				t.Fatalf("%d errors, counters %v", len(out), h.Stats.Counters())
			}
			checkICMP6Error(t, out[0], f, tt.wantT, tt.wantC, tt.rest)
		})
	}
}

// TestICMP6ErrorRules checks every case RFC 4443 2.4 (e) forbids, and the
// rate limit.
func TestICMP6ErrorRules(t *testing.T) {
	for _, tt := range []struct {
		name   string
		typ    any
		mtu    int
		f      frame6
		reason string
	}{
		{"about an ICMPv6 error", "timeexceeded", 0, frame6{icmpType: 1, payload: 8}, "about icmp6 error"},
		{"about a redirect", "unreachable", 0, frame6{icmpType: 137, payload: 8}, "about icmp6 error"},
		{"about an error behind a hop-by-hop header", "timeexceeded", 0, frame6{icmpType: 3, hopByHop: true}, "about icmp6 error"},
		{"to a multicast group", "timeexceeded", 0, frame6{dst: "ff0e::1"}, "multicast destination"},
		{"to a link-layer multicast", "unreachable", 0, frame6{dstMAC: net.HardwareAddr{0x33, 0x33, 0, 0, 0, 1}}, "multicast destination"},
		{"from a multicast source", "timeexceeded", 0, frame6{src: "ff02::1"}, "bad source"},
		{"from the unspecified address", "toobig", 1280, frame6{src: "::"}, "bad source"},
		{"from link-local", "timeexceeded", 0, frame6{src: "fe80::1"}, "bad source"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h := elementtest.New(t, "ICMP6Error", icmp6Cfg(tt.typ, 0, tt.mtu), nil)
			h.Push(0, tt.f.bytes(t))
			if len(h.Outs[0].Frames()) != 0 || h.Counter(tt.reason) != 1 {
				t.Fatalf("counters %v, want one %q", h.Stats.Counters(), tt.reason)
			}
		})
	}
	t.Run("truncated", func(t *testing.T) {
		h := elementtest.New(t, "ICMP6Error", icmp6Cfg("timeexceeded", 0, 0), nil)
		f := frame6{}.bytes(t)
		h.Push(0, f[:40])
		if h.Counter("bad ip6 header") != 1 {
			t.Fatalf("counters %v", h.Stats.Counters())
		}
	})
	t.Run("rate", func(t *testing.T) {
		c := icmp6Cfg("timeexceeded", 0, 0)
		c.Rate, c.Burst = 10, 3
		h := elementtest.New(t, "ICMP6Error", c, nil)
		now := int64(1e12)
		h.Element.(*ICMP6Error).now = func() int64 { return now }
		f := frame6{}.bytes(t)
		h.Push(0, f, f, f, f, f)
		if len(h.Outs[0].Frames()) != 3 || h.Counter("rate limited") != 2 {
			t.Fatalf("burst: counters %v", h.Stats.Counters())
		}
		now += 1e8 // 100 ms: one token at 10/s
		h.Push(0, f, f)
		if len(h.Outs[0].Frames()) != 4 || h.Counter("rate limited") != 3 {
			t.Fatalf("refill: counters %v", h.Stats.Counters())
		}
	})
}

func TestICMP6ErrorConfig(t *testing.T) {
	for _, c := range []*ICMP6ErrorConfig{
		icmp6Cfg("toobig", 0, 0),          // toobig without mtu
		icmp6Cfg("toobig", 0, 1000),       // below the IPv6 minimum
		icmp6Cfg("timeexceeded", 0, 1400), // mtu where it means nothing
		icmp6Cfg("echo", 0, 0),
		icmp6Cfg(128, 0, 0),
		icmp6Cfg("unreachable", "nosuch", 0),
	} {
		if err := c.Validate(); err == nil {
			t.Errorf("%+v: accepted", c)
		}
	}
	c := icmp6Cfg("timeexceeded", 0, 0)
	c.Src = "10.0.0.1"
	if c.Validate() == nil {
		t.Errorf("IPv4 src accepted")
	}
}

func TestICMP6ErrorAllocs(t *testing.T) {
	h := elementtest.New(t, "ICMP6Error", icmp6Cfg("timeexceeded", 0, 0), &elementtest.Options{Sink: true})
	f := frame6{payload: 100}.bytes(t)
	allocs := testing.AllocsPerRun(100, func() { h.Push(0, f, f, f, f) })
	if allocs != 0 {
		t.Fatalf("%v allocations", allocs)
	}
}

func TestCheckMTU(t *testing.T) {
	h := elementtest.New(t, "CheckMTU", &CheckMTUConfig{MTU: 1400}, nil)
	small, exact, big := frame6{payload: 1352}.bytes(t), frame6{payload: 1352}.bytes(t), frame6{payload: 1353}.bytes(t)
	_ = small
	h.Push(0, exact, big)
	if len(h.Outs[0].Frames()) != 1 || len(h.Outs[1].Frames()) != 1 || h.Counter("too big") != 1 {
		t.Fatalf("1400 bytes passed, 1401 to output 1: counters %v", h.Stats.Counters())
	}
	if (&CheckMTUConfig{MTU: 40}).Validate() == nil {
		t.Errorf("mtu 40 accepted")
	}
}

// TestCheckMTUIPv4: an IPv4 packet longer than the MTU goes to output 1
// when DF is set (for ICMPError needfrag), and is a counted drop without
// DF (Junction does not fragment); one of exactly the MTU passes.
func TestCheckMTUIPv4(t *testing.T) {
	h := elementtest.New(t, "CheckMTU", &CheckMTUConfig{MTU: 1400}, nil)
	exact := mkFrame(t, frameOpts{payload: 1400 - 28, flags: layers.IPv4DontFragment})
	bigDF := mkFrame(t, frameOpts{payload: 1401 - 28, flags: layers.IPv4DontFragment})
	bigNoDF := mkFrame(t, frameOpts{payload: 1401 - 28})
	smallNoDF := mkFrame(t, frameOpts{payload: 100})
	h.Push(0, exact, bigDF, bigNoDF, smallNoDF)
	if n := len(h.Outs[0].Frames()); n != 2 {
		t.Errorf("%d packets passed, want 2 (1400 bytes with DF, 128 without)", n)
	}
	if out := h.Outs[1].Frames(); len(out) != 1 || len(out[0]) != len(bigDF) {
		t.Errorf("output 1 has %d packets, want the 1401-byte one with DF", len(out))
	}
	if h.Counter("too big") != 1 || h.Counter("too big, not DF") != 1 {
		t.Errorf("counters %v, want too big 1 and too big, not DF 1", h.Stats.Counters())
	}
	h.Reset()
	h.CheckNoLeak()

	// The diverted packet becomes fragmentation needed with the MTU.
	e := elementtest.New(t, "ICMPError", func() *ICMPErrorConfig {
		c := icmpCfg("unreachable", "needfrag")
		c.MTU = 1400
		return c
	}(), nil)
	e.Push(0, bigDF)
	out := e.Outs[0].Frames()
	if len(out) != 1 {
		t.Fatalf("ICMPError sent %d messages", len(out))
	}
	checkICMPError(t, out[0], bigDF, 14, 3, 4, 1400)
}

// TestICMP6ErrorPointerRouting: pointer = "routing" points each parameter
// problem at the packet's routing type field (RFC 5095: the answer to a
// type-0 routing header), after the fixed header or behind a hop-by-hop
// header; a packet without a routing header is dropped, counted.
func TestICMP6ErrorPointerRouting(t *testing.T) {
	rh0 := func(f []byte) []byte { // a type-0 routing header, 1 segment left, after the IPv6 header
		next := f[14+6]
		rh := append([]byte{next, 2, 0, 1, 0, 0, 0, 0}, make([]byte, 16)...)
		out := append(append(append([]byte(nil), f[:54]...), rh...), f[54:]...)
		out[14+6] = 43
		pl := int(out[18])<<8 | int(out[19]) + len(rh)
		out[18], out[19] = byte(pl>>8), byte(pl)
		return out
	}
	plain := frame6{dst: "2001:db8:2::1", payload: 8}.bytes(t)
	behindHBH := frame6{dst: "2001:db8:2::1", payload: 8, hopByHop: true}.bytes(t)
	// Behind the hop-by-hop header: insert after it (it ends at 14+48).
	hbh := append(append([]byte(nil), behindHBH[:62]...), append([]byte{behindHBH[54], 2, 0, 1, 0, 0, 0, 0}, make([]byte, 16)...)...)
	hbh = append(hbh, behindHBH[62:]...)
	hbh[54] = 43
	pl := int(hbh[18])<<8 | int(hbh[19]) + 24
	hbh[18], hbh[19] = byte(pl>>8), byte(pl)

	cfg := icmp6Cfg("parameterproblem", "header", 0)
	cfg.Pointer.UnmarshalTOML("routing")
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	h := elementtest.New(t, "ICMP6Error", cfg, nil)
	h.Push(0, rh0(plain), hbh, plain)
	out := h.Outs[0].Frames()
	if len(out) != 2 {
		t.Fatalf("%d errors, want 2: %v", len(out), h.Stats.Counters())
	}
	for i, want := range []uint32{42, 50} {
		f := out[i]
		if got := uint32(f[58])<<24 | uint32(f[59])<<16 | uint32(f[60])<<8 | uint32(f[61]); f[54] != 4 || f[55] != 0 || got != want {
			t.Errorf("error %d: type %d code %d pointer %d, want 4 0 %d", i, f[54], f[55], got, want)
		}
	}
	if h.Counter("no routing header") != 1 {
		t.Errorf("counters %v: want one \"no routing header\"", h.Stats.Counters())
	}
	for _, bad := range []string{"route", "-1"} {
		c := icmp6Cfg("parameterproblem", "header", 0)
		c.Pointer.UnmarshalTOML(bad)
		if c.Validate() == nil {
			t.Errorf("pointer %q accepted", bad)
		}
	}
	c := icmp6Cfg("timeexceeded", 0, 0)
	c.Pointer.UnmarshalTOML("routing")
	if c.Validate() == nil {
		t.Errorf("pointer = routing accepted without parameterproblem")
	}
}
