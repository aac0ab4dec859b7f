package flowsteer

import (
	"math/rand/v2"
	"testing"

	"github.com/junction-dataplane/junction/packet"
)

// TestMasqSteering: with a masquerading SNAT's steering (1 to 4 workers),
// a TCP or UDP packet from an inside address goes to its source port's
// owner, one to an outside address and port of the range to its
// destination port's owner, so that an inside endpoint's flows and the
// replies to its mapping (a port its owner gave it) meet on one worker
// (RFC 4787 REQ-1 across workers); a packet between two port-owned ends
// (inside to inside, hairpinning) goes to the lower owner from either
// side; an ICMP error goes where the packet it quotes went; DNAT'd flows
// (a rule's public endpoint, a backend's replies) and other traffic keep
// the flow hash; OwnerTuple gives the same worker as the frame's hash.
func TestMasqSteering(t *testing.T) {
	pub, in, srv := a4("203.0.113.1"), a4("192.168.1.10"), a4("198.51.100.7")
	for _, w := range []int{1, 2, 3, 4} {
		tb := &Table{}
		tb.Set("dnat", []Reverse{{Proto: packet.ProtoTCP, Backend: in, Lo: 80, Hi: 80, Public: pub, PubLo: 8080}})
		tb.SetMasq("snat", &Masq{Addrs: []uint32{pub}, Lo: 1024, Hi: 65535,
			Inside: []Prefix{{Addr: a4("192.168.1.0"), Bits: 24}}, Workers: w})
		owner := func(f []byte) int { return Owner(tb.Hash(f, packet.EthernetLen), w) }
		rng := rand.New(rand.NewPCG(1, uint64(w)))
		for range 500 {
			a := uint16(1024 + rng.IntN(64000))
			s := uint16(1 + rng.IntN(60000))
			for _, proto := range []uint8{packet.ProtoTCP, packet.ProtoUDP} {
				out := ip4Frame(in, srv, proto, a, s, nil)
				if g := owner(out); g != Port(a, w) {
					t.Fatalf("%d workers: inside port %d steered to %d, its owner is %d", w, a, g, Port(a, w))
				}
				// A port o the owner of a gave the mapping.
				o := uint16(1024 + rng.IntN(60000))
				for Port(o, w) != Port(a, w) {
					o++
				}
				reply := ip4Frame(srv, pub, proto, s, o, nil)
				if g := owner(reply); g != Port(a, w) {
					t.Fatalf("%d workers: reply to port %d steered to %d, want %d", w, o, g, Port(a, w))
				}
				if g := tb.OwnerTuple(srv, pub, s, o, proto, w); g != Port(a, w) {
					t.Fatalf("OwnerTuple %d, want %d", g, Port(a, w))
				}
				if g := owner(icmpError(a4("198.51.100.1"), pub, 3, 3, ip4Frame(pub, srv, proto, o, s, nil))); g != Port(a, w) {
					t.Fatalf("an error quoting the mapped packet went to %d, want %d", g, Port(a, w))
				}
				// Hairpinning: from another inside endpoint to the mapping, and back.
				b := uint16(1024 + rng.IntN(64000))
				there := ip4Frame(a4("192.168.1.20"), pub, proto, b, o, nil)
				back := ip4Frame(in, pub, proto, a, b, nil) // to b's mapping, kept port
				if owner(there) != min(Port(b, w), Port(o, w)) || owner(back) != min(Port(a, w), Port(b, w)) {
					t.Fatalf("hairpinned packets not steered to the lower owner")
				}
			}
		}
		// DNAT'd: the public endpoint and the backend's replies keep the flow hash.
		c := ip4Frame(srv, pub, packet.ProtoTCP, 40000, 8080, nil)
		r := ip4Frame(in, srv, packet.ProtoTCP, 80, 40000, nil)
		if tb.Hash(c, packet.EthernetLen) != packet.FlowHashV4(srv, pub, 40000, 8080, packet.ProtoTCP) ||
			tb.Hash(r, packet.EthernetLen) != packet.FlowHashV4(pub, srv, 8080, 40000, packet.ProtoTCP) {
			t.Fatalf("%d workers: DNAT'd packets not steered by the flow hash", w)
		}
		// Neither end owned: the flow hash.
		o := ip4Frame(srv, a4("198.51.100.9"), packet.ProtoUDP, 5, 6, nil)
		if tb.Hash(o, packet.EthernetLen) != packet.FlowHashFrame(o, packet.EthernetLen) {
			t.Fatalf("a flow not masqueraded changed its hash")
		}
	}
}

// TestMasqHashAllocs: the steering by port allocates nothing.
func TestMasqHashAllocs(t *testing.T) {
	tb := &Table{}
	tb.SetMasq("snat", &Masq{Addrs: []uint32{a4("203.0.113.1")}, Lo: 1024, Hi: 65535,
		Inside: []Prefix{{Addr: a4("192.168.1.0"), Bits: 24}}, Workers: 2})
	f := ip4Frame(a4("192.168.1.10"), a4("198.51.100.7"), packet.ProtoUDP, 5000, 53, nil)
	if n := testing.AllocsPerRun(100, func() { tb.Hash(f, packet.EthernetLen) }); n != 0 {
		t.Errorf("%.0f allocations", n)
	}
}

// BenchmarkSteerHash: FromDevice's steering hash of one IPv4 UDP packet
// without a masquerading SNAT (as before), and with one: a packet from an
// inside host (steered by port) and one between two outside hosts (not
// masqueraded: the port check, then the flow hash).
func BenchmarkSteerHash(b *testing.B) {
	in, srv := a4("192.168.1.10"), a4("198.51.100.7")
	masq := &Masq{Addrs: []uint32{a4("203.0.113.1")}, Lo: 1024, Hi: 65535,
		Inside: []Prefix{{Addr: a4("192.168.1.0"), Bits: 24}}, Workers: 2}
	for _, c := range []struct {
		name string
		masq bool
		src  uint32
	}{{"nomasq", false, in}, {"masq/inside", true, in}, {"masq/other", true, a4("198.51.100.9")}} {
		b.Run(c.name, func(b *testing.B) {
			tb := &Table{}
			tb.Set("dnat", []Reverse{{Proto: packet.ProtoTCP, Backend: in, Lo: 80, Hi: 80, Public: a4("203.0.113.1"), PubLo: 8080}})
			if c.masq {
				tb.SetMasq("snat", masq)
			}
			f := ip4Frame(c.src, srv, packet.ProtoUDP, 5000, 53, nil)
			b.ReportAllocs()
			var sink uint32
			for range b.N {
				sink += tb.Hash(f, packet.EthernetLen)
			}
			_ = sink
		})
	}
}
