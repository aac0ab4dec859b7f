package nat_test

import (
	"fmt"
	"testing"

	"github.com/junction-dataplane/junction/elements"
	"github.com/junction-dataplane/junction/elements/conntrack"
	ct "github.com/junction-dataplane/junction/elements/conntrack/cttest"
	"github.com/junction-dataplane/junction/elements/elementtest"
	"github.com/junction-dataplane/junction/elements/flowsteer"
	"github.com/junction-dataplane/junction/elements/nat"
	"github.com/junction-dataplane/junction/packet"
)

// hairpinRules are nat-gateway.toml's DNAT rules.
var hairpinRules = []string{"tcp 203.0.113.1:8080 -> 192.168.1.10:80", "udp 203.0.113.1:5000 -> 192.168.1.10:5000"}

// lanClient is a second inside host, the hairpinning client.
const lanClient = "192.168.1.20"

// newHairpinChain is Conntrack → DNAT → SNAT(to, hairpin) for worker w of
// workers, DNAT and SNAT sharing one graph's steering table.
func newHairpinChain(t *testing.T, to string, w, workers int) (*chain, *flowsteer.Table) {
	state := elements.NewGraphState()
	o := &elementtest.Options{Worker: w, Workers: workers, State: state}
	c := &chain{t: t}
	c.ct = elementtest.New(t, "Conntrack", &conntrack.Config{Capacity: 256}, o)
	c.d = elementtest.New(t, "DNAT", &nat.DNATConfig{Rules: hairpinRules}, o)
	c.s = elementtest.New(t, "SNAT", &nat.SNATConfig{To: to, Ports: "1024-65535", Hairpin: true}, o)
	return c, flowsteer.Of(c.d.Context)
}

func ports(d ct.Decoded) (uint16, uint16) {
	if d.TCP != nil {
		return uint16(d.TCP.SrcPort), uint16(d.TCP.DstPort)
	}
	return uint16(d.UDP.SrcPort), uint16(d.UDP.DstPort)
}

// TestHairpin: hairpinning of DNAT'd flows (RFC 4787 REQ-9, RFC 5382
// REQ-8). An inside host's TCP SYN or UDP datagram to the public address
// and a DNAT'd port leaves the hairpin SNAT for the inside server with the
// public address as its source ("External source IP address and port",
// REQ-9a / REQ-8a) and a port whose reply FromDevice steers to the worker
// the client's packets went to (with 2 workers, on each); the server's
// reply leaves for the client from the public address and port the client
// connected to. An inside flow not DNAT'd passes the hairpin SNAT untranslated, and with an empty to (off)
// the hairpinned packet keeps the client's source, as without it.
func TestHairpin(t *testing.T) {
	for _, workers := range []int{1, 2} {
		for w := range workers {
			for _, proto := range []string{"tcp", "udp"} {
				t.Run(fmt.Sprintf("%d_workers/w%d/%s", workers, w, proto), func(t *testing.T) {
					c, steer := newHairpinChain(t, pub, w, workers)
					pubPort, srvPort := uint16(8080), uint16(80)
					if proto == "udp" {
						pubPort, srvPort = 5000, 5000
					}
					// A client port FromDevice steers to worker w.
					sport := uint16(40000)
					var req []byte
					for ; ; sport++ {
						req = ct.Frame(ct.F{Proto: proto, Src: lanClient, Dst: pub, Sport: sport, Dport: pubPort, Flags: ct.SYN, Payload: 4})
						if flowsteer.Owner(steer.Hash(req, 14), workers) == w {
							break
						}
					}
					out := c.run(req)
					d := check(t, "hairpinned", out, pub, inside, 0, 0)
					p, dp := ports(d)
					if dp != srvPort {
						t.Fatalf("to port %d, want %d", dp, srvPort)
					}
					if got := flowsteer.Owner(steer.Hash(ct.Frame(ct.F{Proto: proto, Src: inside, Dst: pub, Sport: srvPort, Dport: p, Flags: ct.SYN | ct.ACK}), 14), workers); got != w {
						t.Fatalf("the server's reply to %s:%d is steered to worker %d, the client's packets to %d", pub, p, got, w)
					}
					back := ct.Frame(ct.F{Proto: proto, Src: inside, Dst: pub, Sport: srvPort, Dport: p, Flags: ct.SYN | ct.ACK, Payload: 3})
					check(t, "reply", c.run(back), pub, lanClient, pubPort, sport)
					// The flow keeps its binding.
					again := ct.Frame(ct.F{Proto: proto, Src: lanClient, Dst: pub, Sport: sport, Dport: pubPort, Flags: ct.ACK, Payload: 4})
					if proto == "tcp" {
						again = nil // the handshake's ACK would need sequence numbers; the UDP case shows it
					}
					if again != nil {
						check(t, "second datagram", c.run(again), pub, inside, p, srvPort)
					}
					if c.s.Counter("translated") != 1 {
						t.Errorf("translated = %d, want 1", c.s.Counter("translated"))
					}
				})
			}
		}
	}
	t.Run("not hairpinned", func(t *testing.T) {
		c, _ := newHairpinChain(t, pub, 0, 1)
		// An inside flow to another inside host, not DNAT'd. (An
		// outside client's DNAT'd flow is kept away from the hairpin
		// SNAT by the Classifier of inside sources in front of it.)
		check(t, "lan to lan", c.run(ct.Frame(ct.F{Proto: "udp", Src: lanClient, Dst: inside, Sport: 41001, Dport: 53})),
			lanClient, inside, 41001, 53)
		if n := c.s.Counter("translated"); n != 0 {
			t.Errorf("translated = %d, want 0", n)
		}
	})
	t.Run("off", func(t *testing.T) {
		c, _ := newHairpinChain(t, "", 0, 1)
		check(t, "hairpin off", c.run(ct.Frame(ct.F{Proto: "tcp", Src: lanClient, Dst: pub, Sport: 41002, Dport: 8080, Flags: ct.SYN})),
			lanClient, inside, 41002, 80)
	})
}

// TestHairpinAllocs: the hairpin SNAT's per-batch path allocates nothing,
// binding new hairpinned flows with two workers (the steering's mapping of
// the reply source) and passing flows it does not bind.
func TestHairpinAllocs(t *testing.T) {
	state := elements.NewGraphState()
	o := &elementtest.Options{Worker: 1, Workers: 2, State: state}
	cth := elementtest.New(t, "Conntrack", &conntrack.Config{Capacity: 1 << 16}, o)
	d := elementtest.New(t, "DNAT", &nat.DNATConfig{Rules: hairpinRules}, o)
	s := elementtest.New(t, "SNAT", &nat.SNATConfig{To: pub, Ports: "1024-65535", Hairpin: true},
		&elementtest.Options{Worker: 1, Workers: 2, State: state, Sink: true})
	b := packet.NewBatch(64)
	port := 1000
	frames := func() {
		b.Reset()
		for i := range 64 {
			dst, dport := pub, uint16(5000)
			if i%4 == 3 {
				dst, dport = inside, 53 // not DNAT'd: passes unbound
			}
			cth.Push(0, ct.Frame(ct.F{Proto: "udp", Src: lanClient, Dst: dst, Sport: uint16(port), Dport: dport}))
			port++
			d.PushBatch(0, take(cth))
			b.Add(take(d))
		}
	}
	a := testing.AllocsPerRun(50, func() {
		frames()
		s.Element.Push(0, b)
	})
	base := testing.AllocsPerRun(50, func() {
		frames()
		for _, p := range b.Pkts {
			p.Free()
		}
	})
	if a > base {
		t.Fatalf("hairpin SNAT allocates: %v allocations per batch with it, %v without", a, base)
	}
	if s.Counter("translated") == 0 {
		t.Fatal("nothing translated")
	}
}
