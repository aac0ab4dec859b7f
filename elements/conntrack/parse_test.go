package conntrack_test

import (
	"testing"

	"github.com/junction-dataplane/junction/elements/conntrack"
	ct "github.com/junction-dataplane/junction/elements/conntrack/cttest"
	"github.com/junction-dataplane/junction/elements/elementtest"
	"github.com/junction-dataplane/junction/packet"
)

// TestParseNoStaleKey: Conntrack parses each packet's tuple into a key
// slot its previous batches used; a packet whose tuple has no ports (a
// protocol other than TCP, UDP and ICMP echo) must not inherit the ports
// of the packet parsed into that slot before. Two GRE packets between
// the same addresses, each after a UDP packet with other ports in the
// same position of its batch, are one flow, keyed with ports 0.
func TestParseNoStaleKey(t *testing.T) {
	h := elementtest.New(t, "Conntrack", &conntrack.Config{Capacity: 64}, nil)
	tb := h.Element.(*conntrack.Conntrack).Table()
	gre := ct.Frame(ct.F{Proto: "udp", Src: cl, Dst: sv, Sport: 1, Dport: 2})
	gre[14+9] = 47 // GRE: tracked by address pair
	var flows []uint32
	for i, sport := range []uint16{1111, 2222, 3333} {
		udp := ct.Frame(ct.F{Proto: "udp", Src: cl, Dst: sv, Sport: sport, Dport: uint16(5000 + i)})
		h.Push(0, udp, udp)
		st, a := push(t, h, gre)
		if st != packet.CtNew && st != packet.CtEstablished {
			t.Fatalf("GRE packet %d: state %d", i, st)
		}
		if k := tb.Conn(a.Flow).T[0]; k.Sport != 0 || k.Dport != 0 || k.Proto != 47 {
			t.Fatalf("GRE packet %d: flow keyed %+v, want ports 0", i, k)
		}
		flows = append(flows, a.Flow)
	}
	if flows[0] != flows[1] || flows[1] != flows[2] {
		t.Errorf("the GRE packets were tracked as flows %v, want one", flows)
	}
	if n := tb.Len(); n != 4 {
		t.Errorf("%d flows, want 4 (three UDP, one GRE)", n)
	}
}
