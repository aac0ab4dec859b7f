package ip

import (
	"bytes"
	"errors"
	"net"
	"net/netip"
	"testing"

	"github.com/BurntSushi/toml"
	"github.com/google/gopacket"
	"github.com/google/gopacket/layers"
	"github.com/junction-dataplane/junction/elements"
	"github.com/junction-dataplane/junction/elements/elementtest"
	"github.com/junction-dataplane/junction/packet"
)

func icmpCfg(typ, code any) *ICMPErrorConfig {
	c := &ICMPErrorConfig{Src: "192.0.2.1", ICMPType: NumberOrName{Num: -1}, TTL: 64, Rate: 0, Burst: 10}
	setTypeCode(&c.ICMPType, &c.ICMPCode, typ, code)
	return c
}

// setTypeCode sets the icmp_type and icmp_code keys from ints or names
// (nil: left as is), as TOML would.
func setTypeCode(t, c *NumberOrName, typ, code any) {
	for _, x := range []struct {
		k *NumberOrName
		v any
	}{{t, typ}, {c, code}} {
		switch v := x.v.(type) {
		case int:
			x.k.UnmarshalTOML(int64(v))
		case string:
			x.k.UnmarshalTOML(v)
		}
	}
}

// checkICMPError decodes out with gopacket and checks the error about orig
// (whose IP header starts at origL3).
func checkICMPError(t *testing.T, out, orig []byte, origL3 int, typ, code uint8, rest uint32) {
	t.Helper()
	pk := gopacket.NewPacket(out, layers.LayerTypeEthernet, gopacket.Default)
	eth, _ := pk.Layer(layers.LayerTypeEthernet).(*layers.Ethernet)
	ip, _ := pk.Layer(layers.LayerTypeIPv4).(*layers.IPv4)
	ic, _ := pk.Layer(layers.LayerTypeICMPv4).(*layers.ICMPv4)
	if eth == nil || ip == nil || ic == nil {
		t.Fatalf("gopacket could not decode Ethernet/IPv4/ICMPv4: %v", pk.ErrorLayer())
	}
	if !bytes.Equal(eth.DstMAC, orig[6:12]) || !bytes.Equal(eth.SrcMAC, orig[0:6]) || eth.EthernetType != layers.EthernetTypeIPv4 {
		t.Errorf("ethernet %v -> %v type %v: MACs not swapped", eth.SrcMAC, eth.DstMAC, eth.EthernetType)
	}
	oh := packet.IPv4(orig[origL3:])
	if !ip.SrcIP.Equal(net.IPv4(192, 0, 2, 1)) || !ip.DstIP.Equal(net.IP(oh[12:16])) {
		t.Errorf("ip %v -> %v, want 192.0.2.1 -> %v", ip.SrcIP, ip.DstIP, net.IP(oh[12:16]))
	}
	if ip.TTL != 64 || ip.Protocol != layers.IPProtocolICMPv4 || ip.Flags&layers.IPv4DontFragment != 0 || ip.IHL != 5 {
		t.Errorf("ip ttl %d proto %v flags %v ihl %d", ip.TTL, ip.Protocol, ip.Flags, ip.IHL)
	}
	if refChecksum(out[14:34]) != 0 {
		t.Errorf("ip header checksum does not verify")
	}
	if int(ip.Length) != len(out)-14 {
		t.Errorf("ip total length %d, frame holds %d", ip.Length, len(out)-14)
	}
	if ic.TypeCode.Type() != typ || ic.TypeCode.Code() != code {
		t.Errorf("icmp %v, want type %d code %d", ic.TypeCode, typ, code)
	}
	if got := uint32(ic.Id)<<16 | uint32(ic.Seq); got != rest {
		t.Errorf("icmp rest of header %#x, want %#x", got, rest)
	}
	if refChecksum(out[34:]) != 0 {
		t.Errorf("icmp checksum does not verify")
	}
	// The quote: the original IP header with options, then 8 bytes of
	// its payload (fewer if it has fewer).
	ihl := oh.IHL()
	pl := min(8, int(oh.TotalLen())-ihl)
	want := orig[origL3 : origL3+ihl+pl]
	if !bytes.Equal(ic.Payload, want) {
		t.Errorf("quote\n got %x\nwant %x", ic.Payload, want)
	}
}

func TestICMPErrorBuild(t *testing.T) {
	tests := []struct {
		name      string
		typ, code any
		mtu       int
		frame     []byte
		wantT     uint8
		wantC     uint8
		wantRest  uint32
	}{
		{name: "time exceeded udp", typ: "timeexceeded", code: 0, frame: mkFrame(t, frameOpts{ttl: 1, payload: 30}), wantT: 11},
		{name: "time-exceeded by name", typ: "Time-Exceeded", code: "ttl", frame: mkFrame(t, frameOpts{ttl: 1}), wantT: 11},
		{name: "numeric", typ: 11, code: 1, frame: mkFrame(t, frameOpts{}), wantT: 11, wantC: 1},
		{name: "numeric strings", typ: "3", code: "1", frame: mkFrame(t, frameOpts{}), wantT: 3, wantC: 1},
		{name: "unreachable port", typ: "unreachable", code: "port", frame: mkFrame(t, frameOpts{proto: layers.IPProtocolTCP}), wantT: 3, wantC: 3},
		{name: "needfrag mtu", typ: "unreachable", code: "needfrag", mtu: 1400, frame: mkFrame(t, frameOpts{payload: 100}), wantT: 3, wantC: 4, wantRest: 1400},
		{name: "parameter problem", typ: "parameter_problem", code: 0, frame: mkFrame(t, frameOpts{}), wantT: 12},
		{name: "ip options quoted", typ: 11, frame: mkFrame(t, frameOpts{options: true, payload: 40}), wantT: 11},
		{name: "short payload quoted whole", typ: 11, frame: mkFrame(t, frameOpts{proto: layers.IPProtocolUDP}), wantT: 11},
		{name: "about echo request", typ: 11, frame: mkFrame(t, frameOpts{proto: layers.IPProtocolICMPv4, icmpType: 8}), wantT: 11},
		{name: "about echo reply", typ: 11, frame: mkFrame(t, frameOpts{proto: layers.IPProtocolICMPv4, icmpType: 0}), wantT: 11},
		{name: "first fragment", typ: 11, frame: mkFrame(t, frameOpts{flags: layers.IPv4MoreFragments, payload: 50}), wantT: 11},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := icmpCfg(tc.typ, tc.code)
			cfg.MTU = tc.mtu
			h := elementtest.New(t, "ICMPError", cfg, nil)
			p := h.Packet(tc.frame)
			p.NextHop = netip.MustParseAddr("10.9.9.9")
			h.PushBatch(0, p)
			if len(h.Outs[0].Pkts) != 1 {
				t.Fatalf("no ICMP error: drops %v", h.Stats.Counters())
			}
			q := h.Outs[0].Pkts[0]
			if q.L3 != 14 || q.NextHop.IsValid() {
				t.Errorf("L3 %d NextHop %v, want 14 and none", q.L3, q.NextHop)
			}
			checkICMPError(t, q.Data, tc.frame, 14, tc.wantT, tc.wantC, tc.wantRest)
			h.CheckNoLeak()
		})
	}
}

// L3 other than 14 (a VLAN tag) and a packet with too little headroom for
// the quote to stay in place: the quote moves instead.
func TestICMPErrorLayouts(t *testing.T) {
	base := mkFrame(t, frameOpts{ttl: 1, payload: 20})
	vlan := append(append(append([]byte(nil), base[:12]...), 0x81, 0x00, 0x00, 0x05), base[12:]...)
	for _, tc := range []struct {
		name     string
		frame    []byte
		l3       int
		headroom int
	}{
		{"vlan", vlan, 18, packet.Headroom},
		{"no headroom", base, 14, 0},
		{"10 bytes headroom", base, 14, 10},
		{"exact headroom", base, 14, 28},
		{"no headroom vlan", vlan, 18, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := elementtest.New(t, "ICMPError", icmpCfg(11, 0), nil)
			p := h.Packet(tc.frame)
			buf := p.Buffer()
			p.Data = buf[tc.headroom : tc.headroom+len(tc.frame)]
			copy(p.Data, tc.frame)
			p.L3 = uint16(tc.l3)
			h.PushBatch(0, p)
			if len(h.Outs[0].Pkts) != 1 {
				t.Fatalf("no ICMP error: %v", h.Stats.Counters())
			}
			checkICMPError(t, h.Outs[0].Pkts[0].Data, tc.frame, tc.l3, 11, 0, 0)
			h.CheckNoLeak()
		})
	}
}

func TestICMPErrorNever(t *testing.T) {
	good := mkFrame(t, frameOpts{ttl: 1, payload: 16})
	setDst := func(a ...byte) func([]byte) []byte {
		return func(f []byte) []byte { copy(f[30:34], a); return fixIPChecksum(f) }
	}
	setSrc := func(a ...byte) func([]byte) []byte {
		return func(f []byte) []byte { copy(f[26:30], a); return fixIPChecksum(f) }
	}
	icmpTrunc := edit(mkFrame(t, frameOpts{proto: layers.IPProtocolICMPv4, icmpType: 8}), func(f []byte) []byte {
		f[17] = 20 + 4 // total length: ICMP header cut to 4 bytes
		return fixIPChecksum(f)[:14+24]
	})
	tests := []struct {
		name, reason string
		frame        []byte
	}{
		{"empty", "bad ip header", nil},
		{"short", "bad ip header", good[:30]},
		{"ipv6", "bad ip header", edit(good, func(f []byte) []byte { f[14] = 0x65; return f })},
		{"ihl 3", "bad ip header", edit(good, func(f []byte) []byte { f[14] = 0x43; return f })},
		{"ihl beyond frame", "bad ip header", edit(good[:40], func(f []byte) []byte { f[14] = 0x4f; return f })},
		{"about time exceeded", "about icmp error", mkFrame(t, frameOpts{proto: layers.IPProtocolICMPv4, icmpType: 11})},
		{"about unreachable", "about icmp error", mkFrame(t, frameOpts{proto: layers.IPProtocolICMPv4, icmpType: 3})},
		{"about parameter problem", "about icmp error", mkFrame(t, frameOpts{proto: layers.IPProtocolICMPv4, icmpType: 12})},
		{"about redirect", "about icmp error", mkFrame(t, frameOpts{proto: layers.IPProtocolICMPv4, icmpType: 5})},
		{"about source quench", "about icmp error", mkFrame(t, frameOpts{proto: layers.IPProtocolICMPv4, icmpType: 4})},
		{"truncated icmp", "truncated icmp", icmpTrunc},
		{"non-first fragment", "fragment", mkFrame(t, frameOpts{fragOff: 185, payload: 20})},
		{"non-first icmp error fragment", "fragment", mkFrame(t, frameOpts{fragOff: 1, proto: layers.IPProtocolICMPv4, icmpType: 3})},
		{"dst broadcast", "broadcast destination", edit(good, setDst(255, 255, 255, 255))},
		{"dst multicast", "broadcast destination", edit(good, setDst(224, 0, 0, 1))},
		{"dst multicast top", "broadcast destination", edit(good, setDst(239, 1, 2, 3))},
		{"mac broadcast", "link broadcast", mkFrame(t, frameOpts{dstMAC: net.HardwareAddr{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}})},
		{"mac multicast", "link broadcast", mkFrame(t, frameOpts{dstMAC: net.HardwareAddr{0x01, 0x00, 0x5e, 0, 0, 1}})},
		{"src zero", "bad source", edit(good, setSrc(0, 0, 0, 0))},
		{"src loopback", "bad source", edit(good, setSrc(127, 0, 0, 1))},
		{"src multicast", "bad source", edit(good, setSrc(230, 0, 0, 1))},
		{"src class e", "bad source", edit(good, setSrc(250, 0, 0, 1))},
		{"src broadcast", "bad source", edit(good, setSrc(255, 255, 255, 255))},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := elementtest.New(t, "ICMPError", icmpCfg(11, 0), nil)
			h.Push(0, tc.frame, good)
			if len(h.Outs[0].Pkts) != 1 {
				t.Fatalf("%d errors sent, want 1 (about the good packet only)", len(h.Outs[0].Pkts))
			}
			if c := h.Counter(tc.reason); c != 1 {
				t.Errorf("%q = %d, want 1 (counters %v)", tc.reason, c, h.Stats.Counters())
			}
			if d := h.Stats.Drops(); d != 1 {
				t.Errorf("drops = %d, want 1", d)
			}
			h.CheckNoLeak()
		})
	}
}

func TestICMPErrorRateLimit(t *testing.T) {
	cfg := icmpCfg(11, 0)
	cfg.Rate, cfg.Burst = 10, 3 // a token every 100ms, 3 at most
	h := elementtest.New(t, "ICMPError", cfg, nil)
	e := h.Element.(*ICMPError)
	now := int64(1e12)
	calls := 0
	e.now = func() int64 { calls++; return now }
	f := mkFrame(t, frameOpts{ttl: 1})
	sent := func() int { n := len(h.Outs[0].Pkts); h.Reset(); return n }

	h.Push(0, f, f, f, f, f) // the full bucket: 3
	if n := sent(); n != 3 {
		t.Errorf("first batch: %d sent, want 3", n)
	}
	if calls != 1 {
		t.Errorf("clock read %d times for one batch, want 1", calls)
	}
	now += 50e6 // half a token
	h.Push(0, f)
	if n := sent(); n != 0 {
		t.Errorf("after 50ms: %d sent, want 0", n)
	}
	now += 50e6 // the half makes one
	h.Push(0, f, f)
	if n := sent(); n != 1 {
		t.Errorf("after 100ms: %d sent, want 1", n)
	}
	now += 3600e9 // an hour: refills to the burst, not more
	h.Push(0, f, f, f, f, f, f)
	if n := sent(); n != 3 {
		t.Errorf("after an hour: %d sent, want 3", n)
	}
	now -= 10e9 // a clock going backwards earns nothing
	h.Push(0, f)
	if n := sent(); n != 0 {
		t.Errorf("clock backwards: %d sent, want 0", n)
	}
	if c := h.Counter("rate limited"); c != 2+1+1+3+1 {
		t.Errorf("rate limited = %d, want 8", c)
	}
	// Packets refused for RFC 1812 reasons do not use tokens.
	now += 10e9 + 1e9
	bc := mkFrame(t, frameOpts{dstMAC: net.HardwareAddr{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}})
	h.Push(0, bc, bc, bc, bc, f, f, f)
	if n := sent(); n != 3 {
		t.Errorf("with broadcasts first: %d sent, want 3", n)
	}
	h.CheckNoLeak()
}

func TestICMPErrorUnlimited(t *testing.T) {
	h := elementtest.New(t, "ICMPError", icmpCfg(11, 0), &elementtest.Options{PoolSize: 512}) // rate 0
	f := mkFrame(t, frameOpts{ttl: 1})
	for range 5 {
		fs := make([][]byte, 64)
		for i := range fs {
			fs[i] = f
		}
		h.Push(0, fs...)
	}
	if n := len(h.Outs[0].Pkts); n != 320 {
		t.Errorf("sent %d, want 320", n)
	}
	// Every error gets its own ID.
	ids := map[uint16]bool{}
	for _, p := range h.Outs[0].Pkts {
		ids[packet.IPv4(p.Data[14:]).ID()] = true
	}
	if len(ids) != 320 {
		t.Errorf("%d distinct IDs in 320 errors", len(ids))
	}
}

func TestICMPErrorConfig(t *testing.T) {
	tests := []struct {
		name string
		mod  func(c *ICMPErrorConfig)
		key  string // "" = valid
	}{
		{"valid", func(c *ICMPErrorConfig) {}, ""},
		{"missing src", func(c *ICMPErrorConfig) { c.Src = "" }, "src"},
		{"bad src", func(c *ICMPErrorConfig) { c.Src = "192.0.2" }, "src"},
		{"ipv6 src", func(c *ICMPErrorConfig) { c.Src = "2001:db8::1" }, "src"},
		{"multicast src", func(c *ICMPErrorConfig) { c.Src = "224.0.0.1" }, "src"},
		{"missing type", func(c *ICMPErrorConfig) { c.ICMPType = NumberOrName{Num: -1} }, "icmp_type"},
		{"echo type", func(c *ICMPErrorConfig) { c.ICMPType = NumberOrName{Num: 8} }, "icmp_type"},
		{"unknown type name", func(c *ICMPErrorConfig) { c.ICMPType.UnmarshalTOML("timexceeded") }, "icmp_type"},
		{"unknown code name", func(c *ICMPErrorConfig) { c.ICMPCode.UnmarshalTOML("port") }, "icmp_code"}, // port is an unreachable code
		{"code 256", func(c *ICMPErrorConfig) { c.ICMPCode.UnmarshalTOML(int64(256)) }, "icmp_code"},
		{"code -1", func(c *ICMPErrorConfig) { c.ICMPCode.UnmarshalTOML(int64(-1)) }, "icmp_code"},
		{"ttl 0", func(c *ICMPErrorConfig) { c.TTL = 0 }, "ttl"},
		{"ttl 256", func(c *ICMPErrorConfig) { c.TTL = 256 }, "ttl"},
		{"rate -1", func(c *ICMPErrorConfig) { c.Rate = -1 }, "rate"},
		{"burst 0", func(c *ICMPErrorConfig) { c.Burst = 0 }, "burst"},
		{"mtu without needfrag", func(c *ICMPErrorConfig) { c.MTU = 1400 }, "mtu"},
		{"needfrag without mtu", func(c *ICMPErrorConfig) {
			c.ICMPType.UnmarshalTOML("unreachable")
			c.ICMPCode.UnmarshalTOML("needfrag")
		}, "mtu"},
		{"needfrag mtu", func(c *ICMPErrorConfig) {
			c.ICMPType.UnmarshalTOML(int64(3))
			c.ICMPCode.UnmarshalTOML(int64(4))
			c.MTU = 576
		}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			typ, _ := elements.Lookup("ICMPError")
			c := typ.NewConfig().(*ICMPErrorConfig)
			c.Src = "192.0.2.1"
			c.ICMPType.UnmarshalTOML("timeexceeded")
			tc.mod(c)
			err := c.Validate()
			if tc.key == "" {
				if err != nil {
					t.Fatalf("unexpected error %v", err)
				}
				return
			}
			var ke *elements.KeyError
			if !errors.As(err, &ke) || ke.Key != tc.key {
				t.Fatalf("error %v, want one naming key %q", err, tc.key)
			}
		})
	}
	var k NumberOrName
	if err := k.UnmarshalTOML(1.5); err == nil {
		t.Errorf("a float decoded into NumberOrName")
	}
}

func TestICMPErrorAllocs(t *testing.T) {
	cfg := icmpCfg(11, 0)
	cfg.Rate = 1000
	h := elementtest.New(t, "ICMPError", cfg, &elementtest.Options{Sink: true})
	f := mkFrame(t, frameOpts{ttl: 1, payload: 40})
	if a := h.AllocsPerBatch(100, f, mkFrame(t, frameOpts{proto: layers.IPProtocolICMPv4, icmpType: 3}), f[:20]); a != 0 {
		t.Errorf("allocs per batch = %v, want 0", a)
	}
}

func BenchmarkICMPError(b *testing.B) {
	h := elementtest.New(b, "ICMPError", icmpCfg(11, 0), &elementtest.Options{Sink: true}) // unlimited
	h.Bench(b, mkFrame(b, frameOpts{ttl: 1, payload: 18}))
}

// The keys decode from TOML as numbers or names (strict decoding, as the
// loader does it).
func TestICMPErrorTOML(t *testing.T) {
	for _, tc := range []struct {
		doc        string
		typ, code  uint8
		wantErrKey string
	}{
		{"src = \"192.0.2.1\"\nicmp_type = 11\nicmp_code = 0", 11, 0, ""},
		{"src = \"192.0.2.1\"\nicmp_type = \"time-exceeded\"\nicmp_code = \"reassembly\"", 11, 1, ""},
		{"src = \"192.0.2.1\"\nicmp_type = \"unreachable\"\nicmp_code = \"needfrag\"\nmtu = 1400", 3, 4, ""},
		{"src = \"192.0.2.1\"\nicmp_type = \"3\"\nicmp_code = 13", 3, 13, ""},
		{"src = \"192.0.2.1\"\nicmp_type = \"echo\"", 0, 0, "icmp_type"},
	} {
		typ, _ := elements.Lookup("ICMPError")
		c := typ.NewConfig().(*ICMPErrorConfig)
		md, err := toml.Decode(tc.doc, c)
		if err != nil {
			t.Fatalf("%q: %v", tc.doc, err)
		}
		if u := md.Undecoded(); len(u) > 0 {
			t.Fatalf("%q: undecoded %v", tc.doc, u)
		}
		err = c.Validate()
		if tc.wantErrKey != "" {
			var ke *elements.KeyError
			if !errors.As(err, &ke) || ke.Key != tc.wantErrKey {
				t.Errorf("%q: error %v, want key %s", tc.doc, err, tc.wantErrKey)
			}
			continue
		}
		if err != nil || c.typ != tc.typ || c.code != tc.code {
			t.Errorf("%q: type %d code %d err %v; want %d %d", tc.doc, c.typ, c.code, err, tc.typ, tc.code)
		}
	}
}
