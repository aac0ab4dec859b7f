package fpmirror

import (
	"net/netip"
	"testing"
)

// installed gives back every prefix it was told of, IPv4 and IPv6 apart
// (10.0.0.0/8 is not ::ffff:10.0.0.0/8), with its route.
func TestInstalled(t *testing.T) {
	pf := netip.MustParsePrefix
	in := newInstalled()
	d := &fastDev{name: "wan"}
	gw := netip.MustParseAddr("10.2.0.2")
	routes := map[netip.Prefix]offloadRoute{
		pf("0.0.0.0/0"):           {gw: gw, out: d},
		pf("10.0.0.0/8"):          {out: d},
		pf("::ffff:10.0.0.0/104"): {},
		pf("::/0"):                {gw: netip.MustParseAddr("2001:db8::1"), out: d},
		pf("2001:db8:1::/48"):     {out: d},
		pf("192.0.2.7/32"):        {gw: gw, out: d},
	}
	for p, w := range routes {
		in.set(p, w)
	}
	if in.len() != len(routes) || len(in.dests) != 4 {
		t.Fatalf("%d prefixes, %d distinct routes; want %d and 4", in.len(), len(in.dests), len(routes))
	}
	seen := 0
	in.each(func(p netip.Prefix) {
		w, ok := in.get(p)
		if want, known := routes[p]; !known || !ok || w != want {
			t.Errorf("%v: got %v %v, want %v (known %v)", p, w, ok, want, known)
		}
		seen++
	})
	if seen != len(routes) {
		t.Errorf("each gave %d prefixes, want %d", seen, len(routes))
	}
	in.del(pf("10.0.0.0/8"))
	if _, ok := in.get(pf("10.0.0.0/8")); ok {
		t.Error("10.0.0.0/8 still held after del")
	}
	if _, ok := in.get(pf("::ffff:10.0.0.0/104")); !ok {
		t.Error("deleting 10.0.0.0/8 took ::ffff:10.0.0.0/104 too")
	}
}
