package classifier

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/google/gopacket"
	"github.com/google/gopacket/layers"

	"github.com/junction-dataplane/junction/elements"
	"github.com/junction-dataplane/junction/elements/elementtest"
	"github.com/junction-dataplane/junction/packet"
)

// The hand-made frames every table test runs over.
var named = func() map[string][]byte {
	m := map[string][]byte{
		"arpReq": arpFrame(1),
		"arpRep": arpFrame(2),
		"tcp4":   ip4Frame(6, "10.0.0.1", "192.168.1.1", 1234, 80),
		"udp4":   ip4Frame(17, "10.1.2.3", "10.0.0.2", 5353, 53),
		"icmp4":  ip4Frame(1, "10.0.0.1", "8.8.8.8", 0, 0),
		"gre4":   ip4Frame(47, "10.0.0.9", "10.0.0.10", 0, 0), // payload reads as ports 80 -> 53
		"tcp6":   ip6Frame(6, "2001:db8::1", "2001:db8:1::5", 1234, 443),
		"tcp6ext": ip6Frame(6, "2001:db8::1", "2001:db8:1::5", 1234, 443,
			extHdr{typ: 0}, extHdr{typ: 60, units: 1}),
		"udp6":    ip6Frame(17, "fe80::1", "2001:db8::2", 546, 547),
		"icmp6":   ip6Frame(58, "2001:db8::1", "2001:db8::2", 0, 0),
		"frag6nf": ip6Frame(17, "2001:db8::7", "2001:db8::8", 53, 53, extHdr{typ: 44, nonFirst: true}),
		"esp6":    ip6Frame(50, "2001:db8::1", "fe80::2", 0, 0),
	}
	s := ip4Spec(6, "172.16.0.1", "10.0.0.2", 2000, 80)
	s.v4frag = 1
	m["frag4first"], _ = build(s)
	s.v4frag = 2 // the TCP header bytes are still there: they must not be read
	m["frag4nf"], _ = build(s)
	s = ip4Spec(17, "10.0.0.1", "10.0.0.2", 7, 9)
	s.v4opts = true
	m["udp4opts"], _ = build(s)
	m["lldp"], _ = build(newSpec(kOther))
	s = ip4Spec(6, "10.0.0.1", "192.168.1.1", 1234, 80)
	s.kind = kVLAN
	m["vlan"], _ = build(s)
	return m
}()

func names() []string {
	var ns []string
	for n := range named {
		ns = append(ns, n)
	}
	slices.Sort(ns)
	return ns
}

// The frames are what their names say, as gopacket decodes them.
func TestFramesDecode(t *testing.T) {
	for _, n := range names() {
		pkt := gopacket.NewPacket(named[n], layers.LayerTypeEthernet, gopacket.Default)
		check := func(ok bool, what string) {
			if !ok {
				t.Errorf("%s: want %s; layers %v", n, what, pkt.Layers())
			}
		}
		switch n {
		case "tcp4":
			tcp, _ := pkt.Layer(layers.LayerTypeTCP).(*layers.TCP)
			check(tcp != nil && tcp.DstPort == 80 && tcp.SrcPort == 1234, "TCP 1234 > 80")
		case "udp4opts":
			ip, _ := pkt.Layer(layers.LayerTypeIPv4).(*layers.IPv4)
			udp, _ := pkt.Layer(layers.LayerTypeUDP).(*layers.UDP)
			check(ip != nil && ip.IHL == 6 && udp != nil && udp.DstPort == 9, "IPv4 IHL 6, UDP to 9")
		case "tcp6ext":
			tcp, _ := pkt.Layer(layers.LayerTypeTCP).(*layers.TCP)
			check(pkt.Layer(layers.LayerTypeIPv6HopByHop) != nil && tcp != nil && tcp.DstPort == 443, "hop-by-hop, TCP to 443")
		case "frag6nf":
			fr, _ := pkt.Layer(layers.LayerTypeIPv6Fragment).(*layers.IPv6Fragment)
			check(fr != nil && fr.FragmentOffset != 0, "a non-first IPv6 fragment")
		case "frag4nf":
			ip, _ := pkt.Layer(layers.LayerTypeIPv4).(*layers.IPv4)
			check(ip != nil && ip.FragOffset != 0, "a non-first IPv4 fragment")
		case "arpReq":
			a, _ := pkt.Layer(layers.LayerTypeARP).(*layers.ARP)
			check(a != nil && a.Operation == 1, "ARP request")
		case "vlan":
			check(pkt.Layer(layers.LayerTypeDot1Q) != nil, "802.1Q")
		case "icmp6":
			check(pkt.Layer(layers.LayerTypeICMPv6) != nil, "ICMPv6")
		}
	}
}

func TestMatchTable(t *testing.T) {
	tcps := "tcp4 tcp6 tcp6ext frag4first frag4nf"
	ip4s := "tcp4 udp4 udp4opts icmp4 gre4 frag4first frag4nf"
	ip6s := "tcp6 tcp6ext udp6 icmp6 frag6nf esp6"
	tests := []struct {
		rule string
		want string // names of the frames that match, space separated
	}{
		{"arp", "arpReq arpRep"},
		{"ARP", "arpReq arpRep"},
		{"arp request", "arpReq"},
		{"arp reply", "arpRep"},
		{"ip", ip4s},
		{"ip6", ip6s},
		{"tcp", tcps},
		{"proto tcp", tcps},
		{"proto 6", tcps},
		{"udp", "udp4 udp4opts udp6 frag6nf"},
		{"proto udp", "udp4 udp4opts udp6 frag6nf"},
		{"icmp", "icmp4 icmp6"},
		{"proto icmp", "icmp4 icmp6"},
		{"icmp6", "icmp6"},
		{"proto icmp6", "icmp6"},
		{"proto 58", "icmp6"},
		{"ip and icmp", "icmp4"},
		{"proto 1", "icmp4"},
		{"proto 47", "gre4"},
		{"proto 50", "esp6"},
		{"proto 0", "tcp6ext"},  // the fixed header's next header (hop-by-hop)
		{"proto 60", ""},        // further along the chain: neither the fixed header's nor the upper layer
		{"proto 44", "frag6nf"}, // the fragment header is the fixed header's next header
		{"proto 255", ""},
		{"src host 10.0.0.1", "tcp4 icmp4 udp4opts"},
		{"dst host 10.0.0.2", "udp4 udp4opts frag4first frag4nf"},
		{"host 10.0.0.2", "udp4 udp4opts frag4first frag4nf"},
		{"host 10.0.0.1", "tcp4 icmp4 udp4opts"},
		{"src host 2001:db8::1", "tcp6 tcp6ext icmp6 esp6"},
		{"dst host 2001:DB8::2", "udp6 icmp6"},
		{"host fe80::1", "udp6"},
		{"host fe80::2", "esp6"},
		{"src net 10.0.0.0/8", "tcp4 udp4 udp4opts icmp4 gre4"},
		{"dst net 10.0.0.0/8", "udp4 udp4opts gre4 frag4first frag4nf"},
		{"net 192.168.0.0/16", "tcp4"},
		{"net 0.0.0.0/0", ip4s},
		{"net ::/0", ip6s},
		{"src net 2001:db8::/64", "tcp6 tcp6ext icmp6 esp6 frag6nf"},
		{"dst net 2001:db8:1::/48", "tcp6 tcp6ext"},
		{"net fe80::/10", "udp6 esp6"},
		{"net 2001:db8::/126", "tcp6 tcp6ext icmp6 esp6 udp6"},
		{"dst port 80", "tcp4 frag4first"},
		{"src port 80", ""},
		{"port 80", "tcp4 frag4first"},
		{"port 53", "udp4"},
		{"dst port 53", "udp4"},
		{"src port 5353", "udp4"},
		{"port 443", "tcp6 tcp6ext"},
		{"src port 1234", "tcp4 tcp6 tcp6ext"},
		{"port 547", "udp6"},
		{"port 9", "udp4opts"},
		{"port 2000", "frag4first"},
		// and/or/not with precedence not > and > or
		{"not ip", "arpReq arpRep lldp vlan " + ip6s},
		{"! ip", "arpReq arpRep lldp vlan " + ip6s},
		{"not arp and not ip and not ip6", "lldp vlan"},
		{"not (arp or ip or ip6)", "lldp vlan"},
		{"!(arp||ip||ip6)", "lldp vlan"},
		{"arp or ip and tcp", "arpReq arpRep tcp4 frag4first frag4nf"},
		{"(arp or ip) and tcp", "tcp4 frag4first frag4nf"},
		{"ip and tcp or arp", "arpReq arpRep tcp4 frag4first frag4nf"},
		{"not ip and tcp", "tcp6 tcp6ext"},
		{"not (ip and tcp)", "ALL - tcp4 frag4first frag4nf"},
		{"-", "ALL"},
		{"tcp or udp and ip6", tcps + " udp6 frag6nf"},
		{"(tcp or udp) and ip6", "tcp6 tcp6ext udp6 frag6nf"},
		{"ip6 and tcp and dst port 443", "tcp6 tcp6ext"},
		{"tcp && port 80 || udp && port 53", "tcp4 frag4first udp4"},
		{"not not arp", "arpReq arpRep"},
		{"not tcp and not udp and ip", "icmp4 gre4"},
		{"src net 10.0.0.0/8 and not dst net 10.0.0.0/8", "tcp4 icmp4"},
		{"ip and (src port 1234 or dst port 53) and not icmp", "tcp4 udp4"},
		{"((((arp))))", "arpReq arpRep"},
	}
	all := names()
	for _, tc := range tests {
		t.Run(tc.rule, func(t *testing.T) {
			want := wantSet(tc.want)
			h := elementtest.New(t, "Classifier", &Config{Rules: []string{tc.rule}}, nil)
			var frames [][]byte
			for _, n := range all {
				frames = append(frames, named[n])
			}
			h.Push(0, frames...)
			got := h.Outs[0].Frames()
			var gotNames []string
			for _, f := range got {
				for _, n := range all {
					if bytes.Equal(f, named[n]) {
						gotNames = append(gotNames, n)
					}
				}
			}
			var wantNames []string
			for _, n := range all {
				if want[n] {
					wantNames = append(wantNames, n)
				}
			}
			if !slices.Equal(gotNames, wantNames) {
				t.Errorf("rule %q matched %v, want %v", tc.rule, gotNames, wantNames)
			}
			if d := h.Counter("no match"); d != uint64(len(all)-len(wantNames)) {
				t.Errorf("no match = %d, want %d", d, len(all)-len(wantNames))
			}
			h.CheckNoLeak()
		})
	}
}

// wantSet reads "a b - c": names before "-" are in the set, names after it
// are taken out again; ALL is every frame.
func wantSet(s string) map[string]bool {
	m := map[string]bool{}
	add := true
	for _, w := range strings.Fields(s) {
		if w == "-" {
			add = false
			continue
		}
		if w == "ALL" {
			for n := range named {
				m[n] = true
			}
			continue
		}
		if _, ok := named[w]; !ok {
			panic("no frame " + w)
		}
		m[w] = add
	}
	return m
}

// Each primitive, on a set of frames cut at every length: the program and
// the reference agree, and nothing panics.
func TestTruncatedEveryLength(t *testing.T) {
	specs := []spec{
		func() spec { s := newSpec(kARP); s.arpOp = 1; return s }(),
		func() spec { s := newSpec(kARP); s.arpOp = 2; return s }(),
		ip4Spec(6, "10.0.0.1", "192.168.1.1", 1234, 80),
		ip4Spec(17, "10.0.0.1", "10.0.0.2", 53, 443),
		ip4Spec(1, "10.0.0.1", "10.1.2.3", 0, 0),
		func() spec { s := ip4Spec(6, "10.0.0.1", "10.0.0.2", 80, 53); s.v4opts = true; return s }(),
		func() spec { s := ip4Spec(17, "10.0.0.1", "10.0.0.2", 80, 53); s.v4frag = 1; return s }(),
		func() spec { s := ip4Spec(17, "10.0.0.1", "10.0.0.2", 80, 53); s.v4frag = 2; return s }(),
		ip6Spec(6, "2001:db8::1", "2001:db8::2", 443, 80),
		ip6Spec(17, "2001:db8::1", "fe80::1", 53, 65535),
		ip6Spec(58, "2001:db8::1", "2001:db8::2", 0, 0),
		ip6Spec(6, "2001:db8::1", "2001:db8::2", 80, 443, extHdr{typ: 0, units: 1}, extHdr{typ: 43}, extHdr{typ: 51, units: 4}),
		ip6Spec(17, "2001:db8::1", "2001:db8::2", 53, 53, extHdr{typ: 44}),
		ip6Spec(17, "2001:db8::1", "2001:db8::2", 53, 53, extHdr{typ: 44, nonFirst: true}),
	}
	prims := []rprim{
		{name: "arp"}, {name: "arp request"}, {name: "arp reply"}, {name: "ip"}, {name: "ip6"},
		{name: "tcp"}, {name: "udp"}, {name: "icmp"}, {name: "icmp6"},
		{name: "proto", num: 6}, {name: "proto", num: 0}, {name: "proto", num: 44}, {name: "proto", num: 17},
		{name: "port", num: 80}, {name: "port", dir: "src", num: 53}, {name: "port", dir: "dst", num: 443},
		{name: "port", dir: "dst", num: 65535},
		{name: "host", dir: "src", pre: netip.MustParsePrefix("10.0.0.1/32")},
		{name: "host", dir: "dst", pre: netip.MustParsePrefix("10.0.0.2/32")},
		{name: "net", pre: netip.MustParsePrefix("10.0.0.0/8")},
		{name: "host", dir: "src", pre: netip.MustParsePrefix("2001:db8::1/128")},
		{name: "net", dir: "dst", pre: netip.MustParsePrefix("fe80::/10")},
		{name: "net", pre: netip.MustParsePrefix("2001:db8::/64")},
	}
	r := rand.New(rand.NewPCG(5, 6))
	for _, p := range prims {
		n := &rnode{op: "prim", p: p}
		for _, neg := range []bool{false, true} {
			tree := n
			if neg {
				tree = &rnode{op: "not", l: n}
			}
			text := render(r, tree)
			pr, err := compileRules([]string{text})
			if err != nil {
				t.Fatalf("%q: %v", text, err)
			}
			matches := 0
			for _, s := range specs {
				full, _ := build(s)
				for cut := 0; cut <= len(full); cut++ {
					s.trunc = cut
					f, tr := build(s)
					want := 1
					if refEval(tree, tr) {
						want = 0
						matches++
					}
					if got := pr.classify(f, 14); got != want {
						t.Fatalf("%q on %+v cut at %d: port %d, want %d\n% x", text, s, cut, got, want, f)
					}
				}
			}
			if matches == 0 {
				t.Errorf("%q matched no frame: the test does not test it", text)
			}
		}
	}
}

func TestFirstMatchWins(t *testing.T) {
	tests := []struct {
		rules []string
		frame string
		port  int
	}{
		{[]string{"arp", "ip", "-"}, "arpReq", 0},
		{[]string{"arp", "ip", "-"}, "tcp4", 1},
		{[]string{"arp", "ip", "-"}, "tcp6", 2},
		{[]string{"arp", "ip", "-"}, "lldp", 2},
		{[]string{"tcp", "ip", "-"}, "tcp4", 0},
		{[]string{"ip", "tcp", "-"}, "tcp4", 0},
		{[]string{"ip", "tcp", "-"}, "tcp6", 1},
		{[]string{"tcp and dst port 80", "tcp", "udp"}, "tcp4", 0},
		{[]string{"tcp and dst port 80", "tcp", "udp"}, "tcp6", 1},
		{[]string{"tcp and dst port 80", "tcp", "udp"}, "udp6", 2},
		{[]string{"-", "arp"}, "arpReq", 0},
		{[]string{"arp", "-", "ip"}, "tcp4", 1},
		{[]string{"udp", "ip6 and icmp", "arp reply", "-"}, "arpRep", 2},
	}
	for _, tc := range tests {
		h := elementtest.New(t, "Classifier", &Config{Rules: tc.rules}, nil)
		h.Push(0, named[tc.frame])
		for i, o := range h.Outs {
			want := 0
			if i == tc.port {
				want = 1
			}
			if len(o.Pkts) != want {
				t.Errorf("%q, %s: output %d got %d packets, want %d", tc.rules, tc.frame, i, len(o.Pkts), want)
			}
		}
	}
}

func TestSplitKeepsOrderAndDropsNoMatch(t *testing.T) {
	h := elementtest.New(t, "Classifier", &Config{Rules: []string{"arp", "tcp", "udp"}}, nil)
	seq := []string{"tcp4", "arpReq", "lldp", "udp4", "tcp6", "icmp4", "arpRep", "udp6", "vlan", "tcp6ext"}
	var frames [][]byte
	for _, n := range seq {
		frames = append(frames, named[n])
	}
	h.Push(0, frames...)
	want := [][]string{{"arpReq", "arpRep"}, {"tcp4", "tcp6", "tcp6ext"}, {"udp4", "udp6"}}
	for i, ws := range want {
		got := h.Outs[i].Frames()
		if len(got) != len(ws) {
			t.Fatalf("output %d: %d packets, want %d", i, len(got), len(ws))
		}
		for j, w := range ws {
			if !bytes.Equal(got[j], named[w]) {
				t.Errorf("output %d packet %d is not %s", i, j, w)
			}
		}
	}
	if n := h.Counter("no match"); n != 3 {
		t.Errorf("no match = %d, want 3 (lldp, icmp4, vlan)", n)
	}
	h.CheckNoLeak()
	// An all-unmatched batch is dropped whole and counted.
	h.Push(0, named["lldp"], named["vlan"], named["icmp6"])
	if n := h.Counter("no match"); n != 6 {
		t.Errorf("no match = %d, want 6", n)
	}
	h.CheckNoLeak()
}

// batchSpy remembers which batches it was given.
type batchSpy struct {
	got []*packet.Batch
	n   int
}

func (s *batchSpy) Push(in int, b *packet.Batch) {
	s.got = append(s.got, b)
	s.n += len(b.Pkts)
	b.FreeAll()
}

// When every packet goes to one port the incoming batch itself is passed
// on (no copy); otherwise per-port batches are.
func TestHomeRun(t *testing.T) {
	h := elementtest.New(t, "Classifier", &Config{Rules: []string{"arp", "ip", "-"}}, nil)
	spies := make([]*batchSpy, 3)
	for i := range spies {
		spies[i] = &batchSpy{}
		h.Outputs[i].Connect(spies[i], 0, &elements.Stats{})
	}
	in := packet.NewBatch(64)
	for range 10 {
		in.Add(h.Packet(named["tcp4"]))
	}
	h.Element.Push(0, in)
	if len(spies[1].got) != 1 || spies[1].got[0] != in || spies[1].n != 10 {
		t.Errorf("single-port batch: output 1 got batches %p (%d packets), want the input batch %p", spies[1].got, spies[1].n, in)
	}
	in.Reset()
	in.Add(h.Packet(named["tcp4"]))
	in.Add(h.Packet(named["arpReq"]))
	in.Add(h.Packet(named["udp4"]))
	h.Element.Push(0, in)
	if len(spies[1].got) != 2 || spies[1].got[1] == in || spies[0].n != 1 || spies[1].n != 12 {
		t.Errorf("split batch: output 1 got %v (%d packets), output 0 %d packets", spies[1].got, spies[1].n, spies[0].n)
	}
	if len(in.Pkts) != 0 {
		t.Errorf("input batch still holds %d packets after a split", len(in.Pkts))
	}
	if h.Pool.Outstanding() != 0 {
		t.Errorf("%d packets leaked", h.Pool.Outstanding())
	}
}

// A batch larger than the configured batch size still splits correctly.
func TestOversizedBatch(t *testing.T) {
	h := elementtest.New(t, "Classifier", &Config{Rules: []string{"arp", "ip"}}, &elementtest.Options{Batch: 8, PoolSize: 64})
	in := packet.NewBatch(40)
	for i := range 40 {
		f := named["arpReq"]
		if i%3 == 0 {
			f = named["udp4"]
		}
		in.Add(h.Packet(f))
	}
	h.Element.Push(0, in)
	if a, b := len(h.Outs[0].Pkts), len(h.Outs[1].Pkts); a != 26 || b != 14 {
		t.Errorf("outputs got %d and %d packets, want 26 and 14", a, b)
	}
	h.CheckNoLeak()
}

func TestConfigAndDoc(t *testing.T) {
	typ, ok := elements.Lookup("Classifier")
	if !ok {
		t.Fatal("Classifier not registered")
	}
	if typ.In != 1 || typ.Out != -1 {
		t.Errorf("ports %d/%d, want 1/-1", typ.In, typ.Out)
	}
	cfg := typ.NewConfig().(*Config)
	cfg.Rules = []string{"arp", "ip", "-"}
	if in, out := typ.Ports(cfg); in != 1 || out != 3 {
		t.Errorf("Ports = %d, %d; want 1, 3", in, out)
	}
	d := typ.Doc
	if d.Synopsis == "" || d.Summary == "" || d.Ports == "" || d.Stats == "" || d.Example == "" || d.Text == "" {
		t.Errorf("incomplete doc: %+v", d)
	}
	if len(d.Keys) != 1 || d.Keys[0].Name != "rules" || !d.Keys[0].Variadic || !d.Keys[0].Required {
		t.Errorf("keys: %+v", d.Keys)
	}
	for _, w := range []string{"no match", "VLAN", "fragment", "icmp6", "&&"} {
		if !strings.Contains(d.Stats+d.Text, w) {
			t.Errorf("doc does not mention %q", w)
		}
	}
	var ke *elements.KeyError
	if err := (&Config{}).Validate(); !errors.As(err, &ke) || ke.Key != "rules" {
		t.Errorf("no rules: %v, want a KeyError for rules", err)
	}
	// New compiles rules changed after Validate.
	c := &Config{Rules: []string{"arp"}}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	c.Rules = []string{"tcp", "-"}
	h := elementtest.New(t, "Classifier", c, nil)
	h.Push(0, named["tcp4"], named["arpReq"])
	if len(h.Outs[0].Pkts) != 1 || len(h.Outs[1].Pkts) != 1 {
		t.Errorf("recompiled rules: outputs got %d, %d packets", len(h.Outs[0].Pkts), len(h.Outs[1].Pkts))
	}
}

// The programs of the router graph (docs/graph-file.md) and a 10-rule set, kept small:
// one test per primitive and forward jumps only.
func TestProgramShape(t *testing.T) {
	for _, rules := range [][]string{{"arp", "ip", "-"}, tenRules} {
		pr, err := compileRules(rules)
		if err != nil {
			t.Fatal(err)
		}
		for i, in := range pr.ins {
			for _, j := range []int32{in.jt, in.jf} {
				if j >= 0 && int(j) <= i || j < 0 && int(^j) > len(rules) {
					t.Errorf("%q: insn %d jumps to %d", rules, i, j)
				}
			}
		}
		if len(rules) == 3 && (len(pr.ins) != 2 || pr.needProto) {
			t.Errorf("(arp, ip, -) compiled to %d tests (needProto %v), want 2 (false)", len(pr.ins), pr.needProto)
		}
	}
	// Jump threading drops tests whose outcome is known on every path.
	for _, tc := range []struct {
		rules []string
		tests int
	}{
		{[]string{"arp", "arp request", "ip"}, 2},                          // arp request: only reached when arp was false
		{[]string{"tcp and dst port 22", "tcp and dst port 80"}, 3},        // the second tcp
		{[]string{"arp request", "arp reply", "arp", "ip6", "ip"}, 5},      // nothing decided
		{[]string{"ip and tcp", "ip6 and tcp", "arp request", "-"}, 5},     // arp request after ip true, ip6 true
		{[]string{"ip and udp", "ip and tcp", "not ip and (arp)", "-"}, 4}, // the second ip, and arp after ip
	} {
		pr, err := compileRules(tc.rules)
		if err != nil {
			t.Fatal(err)
		}
		if len(pr.ins) != tc.tests {
			t.Errorf("%q: %d tests, want %d", tc.rules, len(pr.ins), tc.tests)
		}
	}
}

var tenRules = []string{
	"arp request",
	"arp",
	"tcp and dst port 22 and src net 10.0.0.0/8",
	"tcp and (dst port 80 or dst port 443) and dst net 192.168.0.0/16",
	"udp and (dst port 53 or src port 53)",
	"udp and dst port 123",
	"icmp and not src net 10.0.0.0/8",
	"ip6 and (tcp or udp) and net 2001:db8::/32",
	"ip and dst host 10.0.0.1",
	"-",
}

var benchMix = []string{"tcp4", "udp4", "tcp6", "arpReq", "icmp4", "udp6", "tcp4", "frag4first", "lldp", "tcp6ext", "tcp4", "udp4"}

func mixFrames() [][]byte {
	var fs [][]byte
	for _, n := range benchMix {
		fs = append(fs, named[n])
	}
	return fs
}

func TestAllocsPerBatch(t *testing.T) {
	for _, rules := range [][]string{{"arp", "ip", "-"}, tenRules, {"arp", "ip"}} {
		h := elementtest.New(t, "Classifier", &Config{Rules: rules}, &elementtest.Options{Sink: true})
		if a := h.AllocsPerBatch(100, mixFrames()...); a != 0 {
			t.Errorf("%q: %v allocs per mixed batch, want 0", rules, a)
		}
		if a := h.AllocsPerBatch(100, named["tcp4"]); a != 0 {
			t.Errorf("%q: %v allocs per single-port batch, want 0", rules, a)
		}
	}
}

func BenchmarkClassifier(b *testing.B) {
	for _, bc := range []struct {
		name   string
		rules  []string
		frames [][]byte
	}{
		{"arp-ip-any/ip4-homerun", []string{"arp", "ip", "-"}, [][]byte{named["tcp4"]}},
		{"arp-ip-any/mix", []string{"arp", "ip", "-"}, mixFrames()},
		{"10rules/ip4-homerun", tenRules, [][]byte{named["tcp4"]}},
		{"10rules/mix", tenRules, mixFrames()},
	} {
		b.Run(bc.name, func(b *testing.B) {
			h := elementtest.New(b, "Classifier", &Config{Rules: bc.rules}, &elementtest.Options{Sink: true, Batch: 64})
			h.Bench(b, bc.frames...)
		})
	}
}

// BenchmarkProgram measures classify alone (no batch refill, no outputs).
func BenchmarkProgram(b *testing.B) {
	for _, bc := range []struct {
		name  string
		rules []string
	}{{"arp-ip-any", []string{"arp", "ip", "-"}}, {"10rules", tenRules}} {
		b.Run(bc.name, func(b *testing.B) {
			pr, err := compileRules(bc.rules)
			if err != nil {
				b.Fatal(err)
			}
			fs := mixFrames()
			b.ReportAllocs()
			sum := 0
			i := 0
			for b.Loop() {
				sum += pr.classify(fs[i], 14)
				i++
				if i == len(fs) {
					i = 0
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N), "ns/pkt")
			_ = sum
		})
	}
}
