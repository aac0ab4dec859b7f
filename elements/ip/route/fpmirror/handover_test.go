package fpmirror

import (
	"net/netip"
	"testing"

	"github.com/junction-dataplane/junction/elements"
	"github.com/junction-dataplane/junction/elements/ip/route"
)

// TestOffloadHandOver: a table rebuilt by a reload starts a second mirror
// into the same fast path while the first still runs; whichever closes
// first (the old one after the switch, or the new one when the reload
// fails) must not leave the fast path without the routes the other
// holds.
func TestOffloadHandOver(t *testing.T) {
	for _, newFirst := range []bool{false, true} {
		ff := &fakeFast{routes: map[netip.Prefix]offloadRoute{}, fail: map[netip.Prefix]bool{}}
		lan := &fastDev{name: "lan", ft: ff}
		ports, fp, err := resolveOffload(t, []string{"lan"}, devMap{"lan": lan})
		if err != nil {
			t.Fatal(err)
		}
		oldT, _ := route.NewTable(mustRoutes(t, "10.1.0.0/24 out 0", "10.2.0.0/24 out 0"))
		newT, _ := route.NewTable(mustRoutes(t, "10.1.0.0/24 out 0", "10.3.0.0/24 out 0"))
		a, err := Start(oldT, fp, ports, &elements.Stats{})
		if err != nil {
			t.Fatal(err)
		}
		b, err := Start(newT, fp, ports, &elements.Stats{})
		if err != nil {
			t.Fatal(err)
		}
		HandOver(a, b)
		closing, staying, want := a, b, "10.3.0.0/24"
		if newFirst {
			closing, staying, want = b, a, "10.2.0.0/24"
		}
		closing.Close()
		waitFor(t, "the staying mirror's routes back in the fast path", func() bool {
			got := ff.snapshot()
			_, one := got[netip.MustParsePrefix("10.1.0.0/24")]
			_, two := got[netip.MustParsePrefix(want)]
			return one && two
		})
		staying.Close()
		if n := len(ff.snapshot()); n != 0 {
			t.Errorf("new first %v: %d routes left after both closed", newFirst, n)
		}
	}
}
