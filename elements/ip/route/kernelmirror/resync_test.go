package kernelmirror

import (
	"net/netip"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/junction-dataplane/junction/elements/ip/route"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
)

// TestKernelResyncIncremental: a resync after the first load (events were
// lost) applies only what the kernel changed meanwhile, as one version:
// routes added, deleted and re-pointed follow, the others are not
// republished, a route the table got from elsewhere stays, and the path
// lists the mirror holds are freed with the last route using them.
func TestKernelResyncIncremental(t *testing.T) {
	ns, ip := mirrorNS(t)
	for _, p := range []string{"192.0.2.0/24", "198.51.100.0/24", "203.0.113.0/24"} {
		ip("route", "add", p, "via", "10.255.0.2")
	}
	ip("route", "add", "2001:db8:1::/48", "via", "2001:db8:ffff::2")
	ip("route", "add", "192.0.2.0/24", "via", "10.255.0.3", "metric", "50")
	tb, err := route.NewTable(nil)
	if err != nil {
		t.Fatal(err)
	}
	nsh, err := netns.GetFromName(ns)
	if err != nil {
		t.Fatal(err)
	}
	defer nsh.Close()
	h, err := netlink.NewHandleAt(nsh)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	// The mirror without its event loop: the test plays the lost events.
	k := &Sync{t: tb, opt: Options{Table: 254, Interfaces: []string{"m0"}}, h: h,
		routes: newPrefixMap(0, 0), multi: map[netip.Prefix][]kernelRoute{}, other: map[otherKey]uint8{},
		applied: new(atomic.Uint64), skipped: new(atomic.Uint64), resyncs: new(atomic.Uint64)}
	if err := k.resync(true); err != nil {
		t.Fatal(err)
	}
	via := func(dst string) string {
		t.Helper()
		hop, ok := tb.Forward(netip.MustParseAddr(dst), 1)
		if !ok {
			return "none"
		}
		return hop.Via.String()
	}
	if got := via("192.0.2.1"); got != "10.255.0.2" {
		t.Fatalf("first load: 192.0.2.1 via %s, want the metric-0 route's 10.255.0.2", got)
	}
	if len(k.multi) != 1 {
		t.Errorf("prefixes with several routes: %d, want 1", len(k.multi))
	}
	if err := tb.Insert(route.Route{Prefix: netip.MustParsePrefix("100.64.0.0/10"), Out: 0}); err != nil {
		t.Fatal(err)
	}
	ip("route", "del", "192.0.2.0/24", "metric", "0") // the metric-50 route takes over
	ip("route", "del", "198.51.100.0/24")
	ip("route", "replace", "203.0.113.0/24", "via", "10.255.0.4")
	ip("route", "add", "233.252.0.0/24", "via", "10.255.0.2")
	ver, applied := tb.Version(), k.applied.Load()
	if err := k.resync(false); err != nil {
		t.Fatal(err)
	}
	for dst, want := range map[string]string{
		"192.0.2.1": "10.255.0.3", "198.51.100.1": "none", "203.0.113.1": "10.255.0.4",
		"233.252.0.1": "10.255.0.2", "2001:db8:1::1": "2001:db8:ffff::2", "100.64.0.1": "invalid IP",
	} {
		if got := via(dst); got != want {
			t.Errorf("after the resync %s via %s, want %s", dst, got, want)
		}
	}
	if n := k.applied.Load() - applied; n != 4 {
		t.Errorf("resync applied %d changes, want the 4 the kernel made", n)
	}
	if v := tb.Version() - ver; v != 1 {
		t.Errorf("resync published %d versions, want 1", v)
	}
	if len(k.multi) != 0 {
		t.Errorf("prefixes with several routes after the resync: %d, want 0", len(k.multi))
	}
	// A resync with nothing changed publishes nothing.
	ver = tb.Version()
	if err := k.resync(false); err != nil {
		t.Fatal(err)
	}
	if tb.Version() != ver {
		t.Errorf("a resync without changes published a version")
	}
	ip("route", "flush", "via", "10.255.0.2")
	ip("route", "flush", "via", "10.255.0.3")
	ip("route", "flush", "via", "10.255.0.4")
	ip("-6", "route", "flush", "via", "2001:db8:ffff::2")
	if err := k.resync(false); err != nil {
		t.Fatal(err)
	}
	// Left: the connected routes of m0, IPv4 and IPv6, sharing one path
	// list (out 0, no gateway).
	if n := len(k.hopSets.index); n != 1 || k.routes.len() != 2 {
		t.Errorf("after the gateway routes went: %d path lists and %d routes held, want 1 and 2 (the connected ones)", n, k.routes.len())
	}
}

// TestKernelNewInterface: a route through an interface of the mirror's
// that appeared after it started is mirrored (the event makes the mirror
// look the interfaces up again).
func TestKernelNewInterface(t *testing.T) {
	ns, ip := mirrorNS(t)
	tb, err := route.NewTable(nil)
	if err != nil {
		t.Fatal(err)
	}
	k, err := Start(tb, Options{Table: 254, Interfaces: []string{"m0", "m9"}, NetNS: ns}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close()
	ip("link", "add", "m9", "type", "veth", "peer", "name", "m8")
	ip("link", "set", "m9", "up")
	ip("link", "set", "m8", "up")
	ip("addr", "add", "10.254.0.1/24", "dev", "m9")
	ip("route", "add", "192.0.2.0/24", "via", "10.254.0.2")
	want := route.Hop{Via: netip.MustParseAddr("10.254.0.2"), Out: 1}
	for t0 := time.Now(); ; time.Sleep(time.Millisecond) {
		if h, ok := tb.Forward(netip.MustParseAddr("192.0.2.1"), 1); ok && h == want {
			break
		}
		if time.Since(t0) > 2*time.Second {
			h, ok := tb.Forward(netip.MustParseAddr("192.0.2.1"), 1)
			t.Fatalf("192.0.2.1 -> %v %v after 2 s, want %v (skipped %d)", h, ok, want, k.skipped.Load())
		}
	}
}

// TestHopSets: equal path lists share one reference, counted; the last
// release frees it and a freed slot is reused for another list, while a
// slice handed out earlier keeps its contents (a table version may still
// read it).
func TestHopSets(t *testing.T) {
	var h hopSets
	a := []route.Hop{{Via: netip.MustParseAddr("10.0.0.1"), Out: 0}}
	b := []route.Hop{{Via: netip.MustParseAddr("10.0.0.1"), Out: 1}, {Via: netip.MustParseAddr("10.0.0.2"), Out: 1}}
	v6 := []route.Hop{{Via: netip.MustParseAddr("::ffff:10.0.0.1"), Out: 0}} // not the IPv4 address
	ra, ra2, rb, r6 := h.acquire(a), h.acquire(slices.Clone(a)), h.acquire(b), h.acquire(v6)
	if ra == 0 || ra != ra2 || rb == ra || r6 == ra || r6 == rb {
		t.Fatalf("references %d %d %d %d: want equal lists shared, others apart, none 0", ra, ra2, rb, r6)
	}
	if h.find(a) != ra || h.find(nil) != 0 || h.find([]route.Hop{{Out: 5}}) != 0 {
		t.Fatalf("find: %d %d %d", h.find(a), h.find(nil), h.find([]route.Hop{{Out: 5}}))
	}
	held := h.sets[rb]
	h.release(ra)
	if h.find(a) != ra {
		t.Fatalf("a list freed while still held once")
	}
	h.release(ra)
	h.release(rb)
	if h.find(a) != 0 || h.find(b) != 0 || len(h.index) != 1 {
		t.Fatalf("after the last releases: find %d %d, %d lists indexed, want 0 0 1", h.find(a), h.find(b), len(h.index))
	}
	c := []route.Hop{{Via: netip.MustParseAddr("10.9.9.9"), Out: 3}}
	if rc := h.acquire(c); rc != rb && rc != ra {
		t.Errorf("a new list got reference %d, want a freed one (%d or %d)", rc, ra, rb)
	}
	if !slices.Equal(held, b) {
		t.Errorf("a released list's slice changed: %v", held)
	}
}

// prefixMap gives back every prefix it holds, IPv4 and IPv6 apart
// (0.0.0.0/0 is not ::/0, 10.0.0.0/8 not ::ffff:10.0.0.0/104), with its
// route; deleting while walking it is allowed.
func TestPrefixMap(t *testing.T) {
	m := newPrefixMap(0, 0)
	want := map[netip.Prefix]kernelRoute{}
	for i, s := range []string{"0.0.0.0/0", "10.0.0.0/8", "255.255.255.255/32", "::/0", "::ffff:10.0.0.0/104",
		"2001:db8::/32", "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff/128"} {
		p := netip.MustParsePrefix(s)
		kr := kernelRoute{prio: uint32(i), hops: hopRef(i)}
		m.set(p, kr)
		want[p] = kr
	}
	if m.len() != len(want) {
		t.Fatalf("%d prefixes held, want %d", m.len(), len(want))
	}
	seen := 0
	m.each(func(p netip.Prefix, kr kernelRoute) {
		if w, ok := want[p]; !ok || w != kr {
			t.Errorf("%v: %+v, want %+v (known %v)", p, kr, w, ok)
		}
		if got, ok := m.get(p); !ok || got != kr {
			t.Errorf("get(%v) = %+v %v", p, got, ok)
		}
		seen++
		if p.Bits() == 0 {
			m.del(p)
		}
	})
	if seen != len(want) || m.len() != len(want)-2 {
		t.Errorf("walked %d, %d left after deleting the two defaults; want %d and %d", seen, m.len(), len(want), len(want)-2)
	}
	if _, ok := m.get(netip.MustParsePrefix("10.0.0.0/8")); !ok {
		t.Error("10.0.0.0/8 lost")
	}
}

// TestShrinkInSteps: a map down to under a quarter of its peak moves to
// new maps drainStep entries a call, and while it does, every prefix is
// found once, with its route, whatever set and del do meanwhile; the old
// maps go when empty, and a map that never fell that far is left alone.
func TestShrinkInSteps(t *testing.T) {
	k := &Sync{routes: newPrefixMap(0, 0)}
	const n4, n6 = 60000, 20000
	p4 := func(i int) netip.Prefix {
		return netip.PrefixFrom(netip.AddrFrom4([4]byte{10, byte(i >> 16), byte(i >> 8), byte(i)}), 32)
	}
	p6 := func(i int) netip.Prefix {
		return netip.PrefixFrom(netip.AddrFrom16([16]byte{0x20, 0x01, 0x0d, 0xb8, 5: byte(i >> 16), 6: byte(i >> 8), 7: byte(i)}), 64)
	}
	want := map[netip.Prefix]kernelRoute{}
	set := func(p netip.Prefix, kr kernelRoute) { k.routes.set(p, kr); want[p] = kr }
	del := func(p netip.Prefix) { k.routes.del(p); delete(want, p) }
	for i := range n4 {
		set(p4(i), kernelRoute{prio: uint32(i)})
	}
	for i := range n6 {
		set(p6(i), kernelRoute{prio: uint32(i)})
	}
	check := func(when string) {
		t.Helper()
		if k.routes.len() != len(want) {
			t.Fatalf("%s: %d prefixes held, want %d", when, k.routes.len(), len(want))
		}
		seen := map[netip.Prefix]bool{}
		k.routes.each(func(p netip.Prefix, kr kernelRoute) {
			if seen[p] {
				t.Fatalf("%s: %v walked twice", when, p)
			}
			seen[p] = true
			if w, ok := want[p]; !ok || w != kr {
				t.Fatalf("%s: %v holds %+v, want %+v (known %v)", when, p, kr, w, ok)
			}
		})
		for p, w := range want {
			if kr, ok := k.routes.get(p); !ok || kr != w {
				t.Fatalf("%s: get(%v) = %+v %v, want %+v", when, p, kr, ok, w)
			}
		}
	}
	if k.shrink() || k.routes.draining() {
		t.Fatal("a map at its peak shrank")
	}
	// Down to a third of the peak: not yet.
	for i := range n4 * 2 / 3 {
		del(p4(i))
	}
	for i := range n6 * 2 / 3 {
		del(p6(i))
	}
	if k.shrink() || k.routes.draining() {
		t.Fatal("a map at a third of its peak shrank")
	}
	// Under a quarter: it drains a step a call.
	for i := range n4 * 4 / 5 {
		del(p4(i))
	}
	for i := range n6 * 4 / 5 {
		del(p6(i))
	}
	left := len(want)
	if !k.shrink() || !k.routes.draining() {
		t.Fatalf("%d of %d prefixes left: no shrink started", left, n4+n6)
	}
	if moved := len(k.routes.v4) + len(k.routes.v6); moved != drainStep {
		t.Errorf("the first step moved %d entries, want %d", moved, drainStep)
	}
	check("after the first step")
	steps := 1
	for i := 0; k.routes.draining(); i++ {
		// Changes meanwhile: new prefixes, deletions and replacements of
		// prefixes in either map.
		set(p4(n4+i), kernelRoute{prio: 1})
		set(p6(n6+i), kernelRoute{prio: 2})
		del(p4(n4*4/5 + i))
		set(p6(n6*4/5+i), kernelRoute{prio: 3, tos: 1})
		check("while draining")
		k.shrink()
		steps++
		if steps > left/drainStep+2 {
			t.Fatalf("still draining after %d steps of %d prefixes", steps, left)
		}
	}
	check("drained")
	if k.routes.old4 != nil || k.routes.old6 != nil {
		t.Error("the old maps kept")
	}
	if k.shrink() || k.routes.draining() {
		t.Error("a second shrink started at once")
	}
}

// BenchmarkDrainStep: one step of a shrinking map (drainStep entries
// moved) a quarter of the way down from a million IPv4 prefixes, as a
// withdrawn full table leaves it; ns/op is a step.
func BenchmarkDrainStep(b *testing.B) {
	const n = 1 << 20
	var k Sync
	fill := func() {
		k.routes = newPrefixMap(0, 0)
		for i := range n {
			k.routes.set(netip.PrefixFrom(netip.AddrFrom4([4]byte{byte(i >> 16), byte(i >> 8), byte(i), 0}), 24), kernelRoute{prio: uint32(i)})
		}
		for i := range n * 4 / 5 {
			k.routes.del(netip.PrefixFrom(netip.AddrFrom4([4]byte{byte(i >> 16), byte(i >> 8), byte(i), 0}), 24))
		}
		k.routes.startDrain()
	}
	b.StopTimer()
	fill()
	for range b.N {
		if !k.routes.draining() {
			fill()
		}
		b.StartTimer()
		k.routes.drain(drainStep)
		b.StopTimer()
	}
}
