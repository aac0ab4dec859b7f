package route

import (
	"net/netip"
	"strings"
	"testing"

	"github.com/junction-dataplane/junction/elements"
)

// TestRouteTypeSyntax: the types parse in both orders, print back in the
// syntax ParseRoute reads, and refuse paths.
func TestRouteTypeSyntax(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"10.100.5.1 blackhole", "10.100.5.1/32 blackhole"},
		{"blackhole 10.100.5.1/32", "10.100.5.1/32 blackhole"},
		{"unreachable 2001:db8::/32", "2001:db8::/32 unreachable"},
		{"10.0.0.0/8 prohibit", "10.0.0.0/8 prohibit"},
	} {
		r, err := ParseRoute(c.in)
		if err != nil || r.String() != c.want {
			t.Errorf("%q: %v, %v; want %q", c.in, r, err, c.want)
			continue
		}
		if back, err := ParseRoute(r.String()); err != nil || !back.Equal(r) {
			t.Errorf("%q does not read back: %v %v", r, back, err)
		}
	}
	for _, c := range []struct{ in, want string }{
		{"10.0.0.0/8 blackhole out 0", "has no via or out"},
		{"blackhole", "needs a prefix"},
		{"10.0.0.0/8 via 10.1.0.1 out 0 blackhole", "unexpected \"blackhole\""},
	} {
		if _, err := ParseRoute(c.in); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v, want %q", c.in, err, c.want)
		}
	}
	if err := checkRoute(Route{Prefix: netip.MustParsePrefix("10.0.0.0/8"), Type: Blackhole, Out: 1}); err == nil {
		t.Error("a blackhole route with a port passed checkRoute")
	}
}

// TestTableTypes: a typed route under a covering prefix takes its
// addresses, lists with its type, shares one next-hop set per type, and
// deletes back to the covering route.
func TestTableTypes(t *testing.T) {
	tb, err := NewTable([]Route{
		{Prefix: netip.MustParsePrefix("10.100.0.0/16"), NextHop: netip.MustParseAddr("10.2.0.2"), Out: 1},
		{Prefix: netip.MustParsePrefix("10.100.5.1/32"), Type: Blackhole},
		{Prefix: netip.MustParsePrefix("10.100.6.1/32"), Type: Blackhole},
		{Prefix: netip.MustParsePrefix("2001:db8::/32"), Type: Prohibit},
	})
	if err != nil {
		t.Fatal(err)
	}
	f := tb.Current()
	if v := f.Lookup4(0x0a640501); v == 0 || TypeOfOut(f.Hops(v)[0].Out) != Blackhole {
		t.Errorf("10.100.5.1 looks up %d", v)
	}
	if v, w := f.Lookup4(0x0a640501), f.Lookup4(0x0a640601); v != w {
		t.Errorf("two blackholes use two next-hop sets (%d, %d)", v, w)
	}
	if h, ok := tb.Forward(netip.MustParseAddr("10.100.5.2"), 0); !ok || h.Out != 1 {
		t.Errorf("the covering prefix: %+v %v", h, ok)
	}
	if r, ok := tb.Route(netip.MustParseAddr("2001:db8::1")); !ok || r.Type != Prohibit || r.Hops() != nil {
		t.Errorf("IPv6 prohibit: %+v", r)
	}
	if m := tb.Mem(); m.NextHopSets != 3 {
		t.Errorf("%d next-hop sets, want 3 (one path, blackhole, prohibit)", m.NextHopSets)
	}
	if _, err := tb.Delete(netip.MustParsePrefix("10.100.5.1/32")); err != nil {
		t.Fatal(err)
	}
	if h, ok := tb.Forward(netip.MustParseAddr("10.100.5.1"), 0); !ok || h.Out != 1 {
		t.Errorf("after the delete: %+v %v", h, ok)
	}
}

// TestOffloadTypes: a blackhole (or unreachable, prohibit) route under an
// offloaded prefix is held in the fast path as "never forward here", so
// that its packets reach the graph instead of leaving by the covering
// route; deleting it hands its addresses back to the covering route.
func TestOffloadTypes(t *testing.T) {
	ff := &fakeFast{routes: map[netip.Prefix]offloadRoute{}, fail: map[netip.Prefix]bool{}}
	lan := &fastDev{name: "lan", ft: ff}
	ports, fp, err := resolveOffload(t, []string{"lan"}, devMap{"lan": lan})
	if err != nil {
		t.Fatal(err)
	}
	tab, err := NewTable(mustRoutes(t, "10.16.0.0/12 via 10.2.0.2 out 0", "10.16.5.1 blackhole", "10.16.6.0/24 prohibit"))
	if err != nil {
		t.Fatal(err)
	}
	s, err := startOffload(tab, fp, ports, &elements.Stats{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	got := ff.snapshot()
	for _, p := range []string{"10.16.5.1/32", "10.16.6.0/24"} {
		if r, ok := got[netip.MustParsePrefix(p)]; !ok || r.out != nil {
			t.Errorf("%s in the fast path: %+v %v, want held as never-forward", p, r, ok)
		}
	}
	if r := got[netip.MustParsePrefix("10.16.0.0/12")]; r.out != lan {
		t.Errorf("the covering prefix: %+v", r)
	}
	if err := tab.Insert(Route{Prefix: netip.MustParsePrefix("10.16.7.0/24"), Type: Unreachable}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the unreachable route held in the fast path", func() bool {
		r, ok := ff.snapshot()[netip.MustParsePrefix("10.16.7.0/24")]
		return ok && r.out == nil
	})
}
