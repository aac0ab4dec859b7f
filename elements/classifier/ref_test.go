package classifier

import (
	"fmt"
	"math/rand/v2"
	"net/netip"
	"strings"
	"testing"
)

// A reference classifier: random rules as trees of the surface language,
// rendered to text with random spelling and parentheses, and evaluated
// directly on what a frame shows (truth). The compiled program must agree
// with it on every rule set and frame; the parser's precedence, the
// compiler's jumps and the program's header parsing are all under test.

type rprim struct {
	name string // arp, arp request, arp reply, ip, ip6, tcp, udp, icmp, icmp6, proto, host, net, port
	dir  string // "", "src", "dst"
	num  int    // proto or port
	pre  netip.Prefix
	// protoName spells "proto N" as "proto tcp" etc. when set.
	protoName string
}

type rnode struct {
	op   string // prim, not, and, or
	l, r *rnode
	p    rprim
}

var (
	refHosts4 = []string{"10.0.0.1", "10.0.0.2", "10.1.2.3", "192.168.1.1", "172.16.0.9"}
	refNets4  = []string{"10.0.0.0/8", "10.0.0.0/24", "10.1.0.0/16", "0.0.0.0/0", "192.168.1.0/24", "10.0.0.1/32", "10.0.0.2/31"}
	refHosts6 = []string{"2001:db8::1", "2001:db8::2", "2001:db8:1::5", "fe80::1", "::ffff:10.0.0.1"}
	refNets6  = []string{"2001:db8::/32", "2001:db8::/64", "2001:db8:1::/48", "::/0", "fe80::/10", "2001:db8::1/128",
		"2001:db8::/127", "::ffff:0.0.0.0/96", "2001:db8::/65", "2001:db8:1::4/126"}
	refPorts  = []int{53, 80, 443, 0, 65535}
	refProtos = []int{1, 6, 17, 58, 0, 44, 60, 47, 50}
)

func pick[T any](r *rand.Rand, xs []T) T { return xs[r.IntN(len(xs))] }

func randPrim(r *rand.Rand) rprim {
	dirs := []string{"", "src", "dst"}
	switch r.IntN(14) {
	case 0:
		return rprim{name: "arp"}
	case 1:
		return rprim{name: pick(r, []string{"arp request", "arp reply"})}
	case 2:
		return rprim{name: "ip"}
	case 3:
		return rprim{name: "ip6"}
	case 4:
		return rprim{name: pick(r, []string{"tcp", "udp"})}
	case 5:
		return rprim{name: pick(r, []string{"icmp", "icmp6"})}
	case 6:
		p := rprim{name: "proto", num: pick(r, refProtos)}
		if r.IntN(4) == 0 {
			p.protoName = pick(r, []string{"tcp", "udp", "icmp", "icmp6"})
		}
		return p
	case 7, 8:
		return rprim{name: "port", dir: pick(r, dirs), num: pick(r, refPorts)}
	case 9, 10:
		var a netip.Addr
		if r.IntN(2) == 0 {
			a = netip.MustParseAddr(pick(r, refHosts4))
		} else {
			a = netip.MustParseAddr(pick(r, refHosts6))
		}
		return rprim{name: "host", dir: pick(r, dirs), pre: netip.PrefixFrom(a, a.BitLen())}
	default:
		var s string
		if r.IntN(2) == 0 {
			s = pick(r, refNets4)
		} else {
			s = pick(r, refNets6)
		}
		return rprim{name: "net", dir: pick(r, dirs), pre: netip.MustParsePrefix(s)}
	}
}

func randTree(r *rand.Rand, depth int) *rnode {
	if depth <= 0 || r.IntN(3) == 0 {
		return &rnode{op: "prim", p: randPrim(r)}
	}
	switch r.IntN(5) {
	case 0:
		return &rnode{op: "not", l: randTree(r, depth-1)}
	case 1, 2:
		return &rnode{op: "and", l: randTree(r, depth-1), r: randTree(r, depth-1)}
	default:
		return &rnode{op: "or", l: randTree(r, depth-1), r: randTree(r, depth-1)}
	}
}

func prec(n *rnode) int {
	switch n.op {
	case "or":
		return 1
	case "and":
		return 2
	}
	return 3
}

func randCase(r *rand.Rand, s string) string {
	if r.IntN(8) == 0 {
		return strings.ToUpper(s)
	}
	return s
}

// render writes n with just the parentheses precedence needs (and now and
// then some it does not), so the parser's precedence is what is tested.
func render(r *rand.Rand, n *rnode) string {
	var sb strings.Builder
	var w func(n *rnode, min int)
	sp := func() {
		sb.WriteString(pick(r, []string{" ", " ", "  ", "\t"}))
	}
	w = func(n *rnode, min int) {
		paren := prec(n) < min || r.IntN(10) == 0
		if paren {
			sb.WriteString("(")
			if r.IntN(2) == 0 {
				sb.WriteString(" ")
			}
		}
		switch n.op {
		case "prim":
			sb.WriteString(renderPrim(r, n.p))
		case "not":
			if r.IntN(2) == 0 {
				sb.WriteString("!")
			} else {
				sb.WriteString(randCase(r, "not"))
				sp()
			}
			w(n.l, 3)
		case "and", "or":
			w(n.l, prec(n))
			sp()
			sym := "&&"
			if n.op == "or" {
				sym = "||"
			}
			if r.IntN(2) == 0 {
				sb.WriteString(sym)
			} else {
				sb.WriteString(randCase(r, n.op))
			}
			sp()
			w(n.r, prec(n)+1) // left-associative: a right operand of the same level needs parentheses
		}
		if paren {
			sb.WriteString(")")
		}
	}
	w(n, 0)
	return sb.String()
}

func renderPrim(r *rand.Rand, p rprim) string {
	var s string
	switch p.name {
	case "proto":
		if p.protoName != "" {
			s = "proto " + p.protoName
		} else {
			s = fmt.Sprintf("proto %d", p.num)
		}
	case "port":
		s = fmt.Sprintf("port %d", p.num)
	case "host":
		s = "host " + p.pre.Addr().String()
	case "net":
		s = "net " + p.pre.String()
	default:
		s = p.name
	}
	if p.dir != "" {
		s = p.dir + " " + s
	}
	return randCase(r, s)
}

// refEval is the language's meaning, written from the manual (docs/elements.md),
// over what the frame shows.
func refEval(n *rnode, t truth) bool {
	switch n.op {
	case "not":
		return !refEval(n.l, t)
	case "and":
		return refEval(n.l, t) && refEval(n.r, t)
	case "or":
		return refEval(n.l, t) || refEval(n.r, t)
	}
	p := n.p
	isProto := func(v int) bool { return t.ipVer != 0 && (t.proto == v || t.upper == v) }
	icmp6 := t.ipVer == 6 && (t.proto == 58 || t.upper == 58)
	src, dst := p.dir != "dst", p.dir != "src"
	switch p.name {
	case "arp":
		return t.etype == 0x0806
	case "arp request":
		return t.arpOp == 1
	case "arp reply":
		return t.arpOp == 2
	case "ip":
		return t.etype == 0x0800
	case "ip6":
		return t.etype == 0x86dd
	case "tcp":
		return isProto(6)
	case "udp":
		return isProto(17)
	case "icmp":
		return t.ipVer == 4 && t.proto == 1 || icmp6
	case "icmp6":
		return icmp6
	case "proto":
		switch p.protoName {
		case "tcp":
			return isProto(6)
		case "udp":
			return isProto(17)
		case "icmp":
			return t.ipVer == 4 && t.proto == 1 || icmp6
		case "icmp6":
			return icmp6
		}
		return isProto(p.num)
	case "port":
		return t.portsOK && (src && t.sport == p.num || dst && t.dport == p.num)
	case "host", "net":
		fam := 6
		if p.pre.Addr().Is4() {
			fam = 4
		}
		return t.ipVer == fam && (src && p.pre.Contains(t.src) || dst && p.pre.Contains(t.dst))
	}
	panic("unknown primitive " + p.name)
}

// randSpec draws a frame: every kind, protocols, fragments, options,
// extension headers, short length claims and truncation.
func randSpec(r *rand.Rand) spec {
	kinds := []int{kARP, kIP4, kIP4, kIP4, kIP6, kIP6, kIP6, kOther, kVLAN}
	s := newSpec(pick(r, kinds))
	s.arpOp = uint16(1 + r.IntN(3))
	s.proto = uint8(pick(r, []int{6, 6, 17, 17, 1, 58, 47, 50, 0}))
	s.sport, s.dport = uint16(pick(r, refPorts)), uint16(pick(r, refPorts))
	if s.kind == kIP6 {
		s.src, s.dst = netip.MustParseAddr(pick(r, refHosts6)), netip.MustParseAddr(pick(r, refHosts6))
		if r.IntN(3) == 0 {
			for range 1 + r.IntN(3) {
				e := extHdr{typ: uint8(pick(r, []int{0, 43, 44, 60, 51})), units: uint8(r.IntN(3))}
				e.nonFirst = e.typ == 44 && r.IntN(2) == 0
				s.ext = append(s.ext, e)
			}
		}
	} else {
		s.src, s.dst = netip.MustParseAddr(pick(r, refHosts4)), netip.MustParseAddr(pick(r, refHosts4))
		s.v4frag = pick(r, []int{0, 0, 0, 1, 2})
		s.v4opts = r.IntN(4) == 0
	}
	if s.proto == 0 && s.kind == kIP6 {
		s.proto = 6 // next header 0 is hop-by-hop: the builder cannot end a chain with it
	}
	if r.IntN(8) == 0 {
		s.shortLen = r.IntN(80)
	}
	if r.IntN(3) == 0 {
		s.trunc = r.IntN(100)
	}
	return s
}

func TestReferenceEquivalence(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	const sets, framesPerSet = 400, 200
	specs := make([]spec, 2000)
	frames := make([][]byte, len(specs))
	truths := make([]truth, len(specs))
	for i := range specs {
		specs[i] = randSpec(r)
		frames[i], truths[i] = build(specs[i])
	}
	matched := make(map[int]int) // port -> hits, to show the test exercises every outcome
	for set := 0; set < sets; set++ {
		nr := 1 + r.IntN(4)
		trees := make([]*rnode, nr)
		texts := make([]string, nr)
		for i := range trees {
			if r.IntN(20) == 0 {
				texts[i] = "-"
				continue
			}
			trees[i] = randTree(r, 1+r.IntN(4))
			texts[i] = render(r, trees[i])
		}
		pr, err := compileRules(texts)
		if err != nil {
			t.Fatalf("rules %q: %v", texts, err)
		}
		for k := 0; k < framesPerSet; k++ {
			i := r.IntN(len(frames))
			want := nr
			for j, tr := range trees {
				if tr == nil || refEval(tr, truths[i]) {
					want = j
					break
				}
			}
			if got := pr.classify(frames[i], 14); got != want {
				t.Fatalf("rules %q, frame %+v (truth %+v):\n% x\ngot port %d, want %d", texts, specs[i], truths[i], frames[i], got, want)
			}
			if want == nr {
				matched[-1]++
			} else {
				matched[want]++
			}
		}
	}
	if matched[-1] == 0 || matched[0] == 0 || matched[1] == 0 {
		t.Errorf("outcomes too uniform to mean anything: %v", matched)
	}
	t.Logf("outcomes (port: count, -1 = no match): %v", matched)
}

// Every primitive must both match and miss some frame of the random mix,
// or the equivalence test would not be testing it.
func TestReferencePrimitivesDiscriminate(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	var truths []truth
	for range 3000 {
		_, tr := build(randSpec(r))
		truths = append(truths, tr)
	}
	for range 500 {
		p := randPrim(r)
		n := &rnode{op: "prim", p: p}
		yes := 0
		for _, tr := range truths {
			if refEval(n, tr) {
				yes++
			}
		}
		if yes == 0 || yes == len(truths) {
			t.Errorf("%s %s %d %v: matches %d of %d frames", p.dir, p.name, p.num, p.pre, yes, len(truths))
		}
	}
}
