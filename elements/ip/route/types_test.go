package route

import (
	"net/netip"
	"strings"
	"testing"
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

// TestPrefixKeys: the mirrors' map keys give back the prefix they were
// made of, and an IPv4 prefix and its IPv4-mapped IPv6 form get different
// keys.
func TestPrefixKeys(t *testing.T) {
	for _, s := range []string{"0.0.0.0/0", "10.0.0.0/8", "192.0.2.7/32", "255.255.255.0/24"} {
		p := netip.MustParsePrefix(s)
		if got := PrefixOfKey4(Key4(p)); got != p {
			t.Errorf("Key4 round trip of %v: %v", p, got)
		}
	}
	for _, s := range []string{"::/0", "2001:db8::/32", "2001:db8:1:2:3:4:5:6/128", "::ffff:10.0.0.0/104"} {
		p := netip.MustParsePrefix(s)
		if got := Key6Of(p).Prefix(); got != p {
			t.Errorf("Key6 round trip of %v: %v", p, got)
		}
	}
	if Key4(netip.MustParsePrefix("10.0.0.0/8")) == Key4(netip.MustParsePrefix("10.0.0.0/9")) {
		t.Error("lengths 8 and 9 of one address share a key")
	}
}
