package classifier

import (
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/junction-dataplane/junction/elements/elementtest"
	"github.com/junction-dataplane/junction/packet"
)

// fuzzFrames are the frames every fuzzed rule is run on: the named frames,
// each also cut short at a few lengths.
func fuzzFrames() [][]byte {
	var fs [][]byte
	for _, n := range names() {
		f := named[n]
		fs = append(fs, f)
		for _, cut := range []int{0, 13, 14, 21, 33, 34, 37, 38, 53, 54, 57, 58} {
			if cut < len(f) {
				fs = append(fs, f[:cut])
			}
		}
	}
	return fs
}

// FuzzRule: any rule text either compiles or fails with a *ParseError
// pointing inside the rule, never both, never a panic; a compiled rule
// classifies any frame (named, truncated, random) into output 0 or "no
// match", jumping only forward.
func FuzzRule(f *testing.F) {
	for _, r := range []string{
		"-", "arp", "arp request", "arp reply", "ip", "ip6", "tcp", "udp", "icmp", "icmp6",
		"proto 47", "proto tcp", "src host 10.0.0.1", "dst host 2001:db8::1", "host fe80::1",
		"src net 10.0.0.0/8", "dst net 2001:db8::/32", "net 0.0.0.0/0", "src port 53", "dst port 80", "port 443",
		"not arp and not ip", "arp or ip and tcp", "(arp or ip) and tcp", "!(tcp||udp)&&ip6",
		"tcp && port 80 || udp && port 53", "tpc", "tcp udp", "(tcp", "tcp)", "port 65536", "net 10.1.0.0/8",
	} {
		f.Add(r)
	}
	for _, r := range tenRules {
		f.Add(r)
	}
	frames := fuzzFrames()
	f.Fuzz(func(t *testing.T, rule string) {
		pr, err := compileRules([]string{rule})
		if (pr == nil) == (err == nil) {
			t.Fatalf("%q: program %v with error %v", rule, pr, err)
		}
		if err != nil {
			var pe *ParseError
			if !errors.As(err, &pe) || pe.Col < 1 || pe.Col > len(rule)+1 || pe.Msg == "" {
				t.Fatalf("%q: bad error %#v", rule, err)
			}
			return
		}
		for i, in := range pr.ins {
			if in.jt >= 0 && int(in.jt) <= i || in.jf >= 0 && int(in.jf) <= i || in.jt < -2 || in.jf < -2 {
				t.Fatalf("%q: insn %d jumps to %d/%d", rule, i, in.jt, in.jf)
			}
		}
		r := rand.New(rand.NewPCG(uint64(len(rule)), 7))
		buf := make([]byte, 128)
		for _, fr := range frames {
			if p := pr.classify(fr, 14); p != 0 && p != 1 {
				t.Fatalf("%q: port %d", rule, p)
			}
		}
		for range 32 {
			n := r.IntN(len(buf))
			for i := range n {
				buf[i] = byte(r.Uint32())
			}
			if r.IntN(2) == 0 && n >= 14 { // mostly IP, or the headers are never reached
				buf[12], buf[13] = pick(r, []byte{0x08, 0x86}), pick(r, []byte{0x00, 0xdd, 0x06})
			}
			if p := pr.classify(buf[:n], r.IntN(40)); p != 0 && p != 1 {
				t.Fatalf("%q: port %d", rule, p)
			}
		}
	})
}

// fuzzRules use every test of the language, through the whole element.
var fuzzRules = []string{
	"arp request", "arp reply", "arp",
	"tcp and (src port 80 or dst port 443) and src net 10.0.0.0/8",
	"udp and port 53 and not dst host 10.0.0.1",
	"icmp or icmp6",
	"proto 47 or proto 50 or proto 44 or proto 0",
	"ip6 and (tcp or udp) and (net 2001:db8::/32 or dst host fe80::1)",
	"ip and dst net 192.168.0.0/16",
	"ip6",
}

// FuzzClassify: random frame bytes (with a random L3 offset) through
// Classifier never panic, and each packet leaves by exactly one output or
// the "no match" drop.
func FuzzClassify(f *testing.F) {
	for _, fr := range fuzzFrames() {
		f.Add(fr, uint8(14))
	}
	f.Add([]byte{}, uint8(0))
	f.Add(named["tcp4"], uint8(200))
	h := elementtest.New(f, "Classifier", &Config{Rules: fuzzRules}, nil)
	f.Fuzz(func(t *testing.T, frame []byte, l3 uint8) {
		// min, not an if: a branch on the length would be new coverage the
		// fuzzer spends its time minimizing huge inputs for.
		frame = frame[:min(len(frame), packet.BufSize-packet.Headroom)]
		p := h.Packet(frame)
		p.L3 = uint16(l3)
		before := h.Counter("no match")
		h.PushBatch(0, p)
		n := int(h.Counter("no match") - before)
		for _, o := range h.Outs {
			n += len(o.Pkts)
		}
		if n != 1 {
			t.Fatalf("%d packets out for 1 in", n)
		}
		h.Reset()
		if out := h.Pool.Outstanding(); out != 0 {
			t.Fatalf("%d packets leaked", out)
		}
	})
}
