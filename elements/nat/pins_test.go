package nat_test

import (
	"testing"

	"github.com/junction-dataplane/junction/elements/flowsteer"
	"github.com/junction-dataplane/junction/elements/nat"
	"github.com/junction-dataplane/junction/packet"
)

// TestSNATSkipsPinnedTuples: a reply tuple a reload pinned to a worker
// (a kept flow's, whose reply hashes elsewhere under the new count) is
// never given to a new flow: with every port of the range that hashes home
// pinned but one, flows get that one, then none (counted as exhausted).
func TestSNATSkipsPinnedTuples(t *testing.T) {
	const pub = 0xcb007101 // 203.0.113.1
	const lo, hi = 30000, 30099
	r := newSNATRig(t, 4096, 0, 2, "203.0.113.1", "30000-30099", false)
	var home []uint16
	for p := lo; p <= hi; p++ {
		if nat.Target(packet.FlowHashV4(rigServer, pub, 443, uint16(p), packet.ProtoUDP), 2) == 0 {
			home = append(home, uint16(p))
		}
	}
	if len(home) < 2 {
		t.Fatal("no ports hash home: test is void")
	}
	var pins []flowsteer.Pin
	for _, p := range home[:len(home)-1] {
		pins = append(pins, flowsteer.Pin{Src: rigServer, Dst: pub, Sport: 443, Dport: p, Proto: packet.ProtoUDP, Worker: 1})
	}
	flowsteer.Of(r.s.Context).SetPins(pins)
	flows := r.push(2)
	if got := r.s.Counter("translated"); got != 1 {
		t.Fatalf("%d flows translated, want 1 (one free port)", got)
	}
	if rep := r.table.Conn(flows[0]).T[1]; rep.Dport != home[len(home)-1] {
		t.Errorf("the flow got port %d, want %d, the one not pinned", rep.Dport, home[len(home)-1])
	}
	if ex := r.s.Counter("ports exhausted"); ex != 1 {
		t.Errorf("%d flows refused, want 1", ex)
	}
}
