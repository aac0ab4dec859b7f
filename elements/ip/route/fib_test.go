package route

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"slices"
	"testing"

	"github.com/junction-dataplane/junction/packet"
)

// refTable is the simple reference LPM: one map per prefix length, searched
// from the longest length down.
type refTable struct {
	v4   [33]map[uint32]Route
	v6   map[netip.Prefix]Route
	lens []int // IPv6 lengths present, longest first
}

func newRefTable() *refTable {
	r := &refTable{v6: map[netip.Prefix]Route{}}
	for i := range r.v4 {
		r.v4[i] = map[uint32]Route{}
	}
	return r
}

func (r *refTable) insert(rt Route) {
	if rt.Prefix.Addr().Is4() {
		r.v4[rt.Prefix.Bits()][u32of(rt.Prefix.Addr())] = rt
		return
	}
	r.v6[rt.Prefix] = rt
	if !slices.Contains(r.lens, rt.Prefix.Bits()) {
		r.lens = append(r.lens, rt.Prefix.Bits())
		slices.SortFunc(r.lens, func(a, b int) int { return b - a })
	}
}

func (r *refTable) delete(p netip.Prefix) {
	if p.Addr().Is4() {
		delete(r.v4[p.Bits()], u32of(p.Addr()))
		return
	}
	delete(r.v6, p)
}

func (r *refTable) lookup4(d uint32) (Route, bool) {
	for l := 32; l >= 0; l-- {
		if rt, ok := r.v4[l][d&mask4(l)]; ok {
			return rt, true
		}
	}
	return Route{}, false
}

func (r *refTable) lookup6(a netip.Addr) (Route, bool) {
	for _, l := range r.lens {
		if rt, ok := r.v6[netip.PrefixFrom(a, l).Masked()]; ok {
			return rt, true
		}
	}
	return Route{}, false
}

// hopsOf returns what the lock-free path of version f gives for a value.
func hopsOf(f *fib, v uint16) []Hop {
	if v == 0 {
		return nil
	}
	return f.nh[v-1].hops
}

func check4(t *testing.T, f *fib, ref *refTable, d uint32) {
	t.Helper()
	got := hopsOf(f, f.lookup4(d))
	want, ok := ref.lookup4(d)
	if !ok {
		if got != nil {
			t.Fatalf("lookup %v: got %v, want no route", packet.AddrFromU32(d), got)
		}
		return
	}
	if !slices.Equal(got, want.Hops()) {
		t.Fatalf("lookup %v: got %v, want %v (route %v)", packet.AddrFromU32(d), got, want.Hops(), want)
	}
}

// TestFIBAgreesWithReference checks the lock-free IPv4 lookups, single and
// batched, against the reference on random tables, 2M lookups in all.
func TestFIBAgreesWithReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(2024, 4))
	total := 0
	sizes := []int{1, 30, 1000, 20000, 100000}
	if testing.Short() {
		sizes = sizes[:4] // the 100,000-route table takes seconds
	}
	for _, size := range sizes {
		rs := randomRoutes(rng, size)
		for i := range rs {
			if rs[i].NextHop.IsValid() { // a realistic number of next hops
				rs[i].NextHop = addrU32(0x0a000001 + uint32(rng.IntN(2000)))
			}
			if rng.IntN(10) == 0 { // some ECMP routes
				rs[i].NextHop = addrU32(0x0a000001 + uint32(rng.IntN(100)))
				rs[i].Also = []Hop{{Via: addrU32(0x0b000001 + uint32(rng.IntN(100))), Out: 1}}
			}
		}
		tb, err := NewTable(rs)
		if err != nil {
			t.Fatal(err)
		}
		ref := newRefTable()
		for _, r := range rs {
			ref.insert(r)
		}
		f := tb.cur.Load()
		n := 400000
		dst := make([]uint32, 64)
		val := make([]uint16, 64)
		for i := 0; i < n; i += 64 {
			for j := range dst {
				dst[j] = probe(rng, rs)
			}
			f.lookup4Batch(dst, val)
			for j, d := range dst {
				if val[j] != f.lookup4(d) {
					t.Fatalf("batch lookup %v: %d, single %d", packet.AddrFromU32(d), val[j], f.lookup4(d))
				}
				check4(t, f, ref, d)
			}
		}
		total += n
	}
	t.Logf("%d lookups agree", total)
}

// TestFIBIncremental applies random inserts, replacements and deletes
// (deletes uncover shorter prefixes, groups fold back) in batches and checks
// every published version against the reference, and that old versions
// are left untouched by later ones.
func TestFIBIncremental(t *testing.T) {
	rng := rand.New(rand.NewPCG(77, 78))
	pool := randomRoutes(rng, 3000)
	tb, _ := NewTable(nil)
	ref := newRefTable()
	var live []netip.Prefix
	type snap struct {
		f     *fib
		probe []uint32
		want  [][]Hop
	}
	var snaps []snap
	for step := range 300 {
		var cs []Change
		for range 1 + rng.IntN(40) {
			if len(live) > 0 && rng.IntN(3) == 0 {
				i := rng.IntN(len(live))
				cs = append(cs, Change{Route: Route{Prefix: live[i]}, Delete: true})
				live = slices.Delete(live, i, i+1)
				continue
			}
			r := pool[rng.IntN(len(pool))]
			r.Out = rng.IntN(4)
			if !slices.Contains(live, r.Prefix) {
				live = append(live, r.Prefix)
			}
			cs = append(cs, Change{Route: r})
		}
		if err := tb.Apply(cs); err != nil {
			t.Fatal(err)
		}
		for _, c := range cs {
			if c.Delete {
				ref.delete(c.Route.Prefix)
			} else {
				ref.insert(c.Route)
			}
		}
		f := tb.cur.Load()
		s := snap{f: f}
		for range 300 {
			d := probe(rng, pool)
			check4(t, f, ref, d)
			s.probe = append(s.probe, d)
			s.want = append(s.want, hopsOf(f, f.lookup4(d)))
		}
		if step%10 == 0 {
			snaps = append(snaps, s)
		}
		if tb.Len() != len(live) {
			t.Fatalf("step %d: Len %d, want %d", step, tb.Len(), len(live))
		}
	}
	// Copy-on-write: every old version still answers as it did.
	for i, s := range snaps {
		for j, d := range s.probe {
			if got := hopsOf(s.f, s.f.lookup4(d)); !slices.Equal(got, s.want[j]) {
				t.Fatalf("version %d changed after publish: %v now %v, was %v", i, packet.AddrFromU32(d), got, s.want[j])
			}
		}
	}
	// Delete everything: the table is empty again and every group is free.
	var all []netip.Prefix
	all = append(all, live...)
	if n, err := tb.Delete(all...); err != nil || n != len(all) {
		t.Fatalf("delete all: %d, %v; want %d", n, err, len(all))
	}
	m := tb.Mem()
	if m.Routes4 != 0 || m.Groups != 0 || m.NextHopSets != 0 {
		t.Errorf("after deleting all: %+v", m)
	}
	f := tb.cur.Load()
	for range 10000 {
		if v := f.lookup4(rng.Uint32()); v != 0 {
			t.Fatalf("empty table found %d", v)
		}
	}
}

func TestFIBEdges(t *testing.T) {
	parse := func(ss ...string) []Route { return mustRoutes(t, ss...) }
	tb, err := NewTable(parse(
		"0.0.0.0/0 out 0", "10.1.2.0/24 out 1", "10.1.2.0/25 out 2", "10.1.2.128/25 out 3",
		"10.1.2.255/32 out 4", "255.255.255.255/32 out 5", "0.0.0.0/32 out 6",
		"::/0 out 7", "2001:db8::/32 out 8", "2001:db8::/64 out 9", "2001:db8::/65 out 10",
		"2001:db8::1/128 out 11", "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff out 12", "8000::/1 out 13",
	))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		dst string
		out int
	}{
		{"0.0.0.0", 6}, {"0.0.0.1", 0}, {"10.1.1.255", 0}, {"10.1.2.0", 2}, {"10.1.2.127", 2}, {"10.1.2.128", 3},
		{"10.1.2.254", 3}, {"10.1.2.255", 4}, {"10.1.3.0", 0}, {"255.255.255.255", 5}, {"255.255.255.254", 0},
		{"::", 7}, {"2001:db8::", 10}, {"2001:db8::1", 11}, {"2001:db8::2", 10}, {"2001:db8:0:0:8000::", 9},
		{"2001:db8:0:1::", 8}, {"2001:db9::", 7}, {"ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", 12},
		{"ffff:ffff:ffff:ffff:ffff:ffff:ffff:fffe", 13}, {"7fff::", 7},
	} {
		h, ok := tb.Forward(netip.MustParseAddr(tc.dst), 0)
		if !ok || h.Out != tc.out {
			t.Errorf("%s: %v %v, want out %d", tc.dst, h, ok, tc.out)
		}
		r, ok := tb.Route(netip.MustParseAddr(tc.dst))
		if !ok || r.Out != tc.out || !r.Prefix.Contains(netip.MustParseAddr(tc.dst)) {
			t.Errorf("Route(%s) = %v %v, want out %d", tc.dst, r, ok, tc.out)
		}
	}
	// Deletes uncover: /25s go, the /24 is back; the /65 goes, the /64 is
	// back; the defaults go, misses are misses.
	n, err := tb.Delete(netip.MustParsePrefix("10.1.2.0/25"), netip.MustParsePrefix("10.1.2.128/25"),
		netip.MustParsePrefix("2001:db8::/65"), netip.MustParsePrefix("0.0.0.0/0"), netip.MustParsePrefix("::/0"),
		netip.MustParsePrefix("10.9.9.0/24"))
	if err != nil || n != 5 {
		t.Fatalf("delete: %d %v", n, err)
	}
	for _, tc := range []struct {
		dst string
		out int
	}{
		{"10.1.2.0", 1}, {"10.1.2.200", 1}, {"10.1.2.255", 4}, {"1.1.1.1", -1}, {"2001:db8::2", 9}, {"::1", -1}, {"2001:db8::1", 11},
	} {
		h, ok := tb.Forward(netip.MustParseAddr(tc.dst), 0)
		if (tc.out < 0) == ok || (ok && h.Out != tc.out) {
			t.Errorf("after delete %s: %v %v, want out %d", tc.dst, h, ok, tc.out)
		}
	}
}

// TestFIB6AgreesWithReference is the IPv6 property test, with updates.
func TestFIB6AgreesWithReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(6, 6))
	rs := GenerateRoutes(GenOptions{Seed: 3, Routes6: 5000, ECMP: 0.05, Default: true})
	// Nest some prefixes in others, of every length.
	for i := range 2000 {
		base := rs[rng.IntN(len(rs))].Prefix
		l := base.Bits() + 1 + rng.IntN(129-base.Bits())
		if l > 128 {
			continue
		}
		a := base.Addr().As16()
		for j := base.Bits() / 8; j < 16; j++ {
			a[j] ^= byte(rng.Uint32()) & ^byte(0xff<<(8-min(8, max(0, base.Bits()-8*j))))
		}
		p := netip.PrefixFrom(netip.AddrFrom16(a), l).Masked()
		if p.Bits() <= base.Bits() {
			continue
		}
		rs = append(rs, Route{Prefix: p, NextHop: netip.MustParseAddr("2001:db8::1"), Out: i % 5})
	}
	rs = dedupe(rs)
	tb, err := NewTable(rs)
	if err != nil {
		t.Fatal(err)
	}
	ref := newRefTable()
	for _, r := range rs {
		ref.insert(r)
	}
	probe6 := func() netip.Addr {
		p := rs[rng.IntN(len(rs))].Prefix
		a := p.Addr().As16()
		for j := p.Bits() / 8; j < 16; j++ {
			if rng.IntN(2) == 0 {
				a[j] = byte(rng.Uint32())
			}
		}
		return netip.AddrFrom16(a)
	}
	checkAll := func(n int) {
		f := tb.cur.Load()
		for range n {
			a := probe6()
			b := a.As16()
			got := hopsOf(f, f.lookup6(&b))
			want, ok := ref.lookup6(a)
			if ok != (got != nil) || (ok && !slices.Equal(got, want.Hops())) {
				t.Fatalf("lookup %v: got %v, want %v (%v)", a, got, want.Hops(), want)
			}
		}
	}
	checkAll(100000)
	nodes := tb.Mem().Nodes6
	// Delete half, check; reinsert, check: node count returns.
	var del []netip.Prefix
	for i, r := range rs {
		if i%2 == 0 {
			del = append(del, r.Prefix)
			ref.delete(r.Prefix)
		}
	}
	if _, err := tb.Delete(del...); err != nil {
		t.Fatal(err)
	}
	checkAll(50000)
	var back []Route
	for i, r := range rs {
		if i%2 == 0 {
			back = append(back, r)
			ref.insert(r)
		}
	}
	if err := tb.Insert(back...); err != nil {
		t.Fatal(err)
	}
	checkAll(50000)
	if n := tb.Mem().Nodes6; n != nodes {
		t.Errorf("nodes after delete and reinsert: %d, want %d (pruning is off)", n, nodes)
	}
	if _, err := tb.Delete(prefixesOf(rs)...); err != nil {
		t.Fatal(err)
	}
	if m := tb.Mem(); m.Nodes6 != 1 || m.Routes6 != 0 {
		t.Errorf("after deleting all: %+v", m)
	}
}

func dedupe(rs []Route) []Route {
	seen := map[netip.Prefix]bool{}
	out := rs[:0]
	for _, r := range rs {
		if !seen[r.Prefix] {
			seen[r.Prefix] = true
			out = append(out, r)
		}
	}
	return out
}

func prefixesOf(rs []Route) []netip.Prefix {
	ps := make([]netip.Prefix, len(rs))
	for i, r := range rs {
		ps[i] = r.Prefix
	}
	return ps
}

// TestTableLimits: what does not fit is refused whole and the table stays.
func TestTableLimits(t *testing.T) {
	tb, err := NewTableLimits([]Route{{Prefix: netip.MustParsePrefix("10.0.0.0/8"), Out: 1}}, Limits{MaxRoutes: 3})
	if err != nil {
		t.Fatal(err)
	}
	v := tb.Version()
	four := []Route{
		{Prefix: netip.MustParsePrefix("1.0.0.0/8")}, {Prefix: netip.MustParsePrefix("2.0.0.0/8")},
		{Prefix: netip.MustParsePrefix("3.0.0.0/8")}, {Prefix: netip.MustParsePrefix("4.0.0.0/8")},
	}
	if err := tb.Replace(four); !errors.Is(err, errTableFull) {
		t.Errorf("Replace of 4 routes with max 3: %v", err)
	}
	if err := tb.Insert(four[:3]...); !errors.Is(err, errTableFull) {
		t.Errorf("Insert to 4 routes with max 3: %v", err)
	}
	if tb.Version() != v || tb.Len() != 1 {
		t.Errorf("refused changes changed the table: version %d->%d, %d routes", v, tb.Version(), tb.Len())
	}
	// A full table takes changes to routes it holds: only a route that is
	// new counts against the limit (looked up once the batch could pass it).
	if err := tb.Insert(four[:2]...); err != nil {
		t.Fatalf("Insert up to the limit: %v", err)
	}
	again := append(slices.Clone(four[:2]), Route{Prefix: netip.MustParsePrefix("10.0.0.0/8"), Out: 2})
	if err := tb.Insert(again...); err != nil || tb.Len() != 3 {
		t.Errorf("replacing the routes of a full table: %v, %d routes", err, tb.Len())
	}
	if r, ok := tb.Lookup(0x0a010101); !ok || r.Out != 2 {
		t.Errorf("10.1.1.1 after the replace: %v %v, want port 2", r, ok)
	}
	if err := tb.Insert(append(again, four[2])...); !errors.Is(err, errTableFull) || tb.Len() != 3 {
		t.Errorf("a new route past the limit among replacements: %v, %d routes", err, tb.Len())
	}
	if _, err := tb.Delete(four[0].Prefix, four[1].Prefix); err != nil {
		t.Fatal(err)
	}
	// More /24s with longer prefixes than there are groups.
	var many []Route
	for i := range maxGroups + 1 {
		many = append(many, Route{Prefix: netip.PrefixFrom(packet.AddrFromU32(0x0b000000|uint32(i)<<8|0x80), 25)})
	}
	if err := tb.Replace(many); !errors.Is(err, errTableFull) {
		t.Errorf("Replace with %d groups: %v", len(many), err)
	}
	if r, ok := tb.Lookup(0x0a010101); !ok || r.Out != 2 {
		t.Errorf("table changed by a refused Replace: %v %v", r, ok)
	}
	// Too many next-hop sets.
	var hops []Route
	for i := range MaxNextHopSets + 1 {
		hops = append(hops, Route{Prefix: netip.PrefixFrom(packet.AddrFromU32(0x0c000000|uint32(i)<<8), 24), NextHop: packet.AddrFromU32(0x0d000000 | uint32(i))})
	}
	big, _ := NewTable(nil)
	if err := big.Replace(hops); !errors.Is(err, errTableFull) {
		t.Errorf("Replace with %d next-hop sets: %v", len(hops), err)
	}
	if err := big.Insert(hops...); !errors.Is(err, errTableFull) || big.Len() != 0 {
		t.Errorf("Insert with %d next-hop sets: %v, %d routes", len(hops), err, big.Len())
	}
	if err := big.Insert(hops[:MaxNextHopSets]...); err != nil {
		t.Errorf("Insert of exactly %d next-hop sets: %v", MaxNextHopSets, err)
	}
	if err := big.Apply([]Change{{Route: Route{Prefix: netip.MustParsePrefix("10.0.0.1/8")}}}); err == nil {
		t.Errorf("Apply accepted a prefix with host bits")
	}
}

// TestECMP: a flow keeps its path; flows spread over every path about
// evenly.
func TestECMP(t *testing.T) {
	r, err := ParseRoute("0.0.0.0/0 via 10.0.0.1 via 10.0.0.2 via 10.0.0.3 out 0 out 1 out 2")
	if err != nil {
		t.Fatal(err)
	}
	if got := r.String(); got != "0.0.0.0/0 via 10.0.0.1 via 10.0.0.2 via 10.0.0.3 out 0 out 1 out 2" {
		t.Errorf("String: %q", got)
	}
	r2, err := ParseRoute("2001:db8::/32 via fe80::1 via fe80::2 out 3")
	if err != nil || len(r2.Hops()) != 2 || r2.Also[0].Out != 3 {
		t.Fatalf("one out for all vias: %v %v", r2, err)
	}
	tb, err := NewTable([]Route{r, r2})
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	var count [3]int
	for range 30000 {
		h := rng.Uint32()
		a, _ := tb.Forward(netip.MustParseAddr("192.0.2.9"), h)
		b, _ := tb.Forward(netip.MustParseAddr("198.51.100.1"), h)
		if a != b {
			t.Fatalf("hash %d: paths %v and %v", h, a, b)
		}
		count[a.Out]++
		if a.Via != packet.AddrFromU32(0x0a000001+uint32(a.Out)) {
			t.Fatalf("path %v: via and out do not pair", a)
		}
	}
	for i, c := range count {
		if c < 9000 || c > 11000 {
			t.Errorf("path %d got %d of 30000 flows", i, c)
		}
	}
}

func TestGenerateRoutes(t *testing.T) {
	a := GenerateRoutes(GenOptions{Seed: 1, Routes: 50000, Routes6: 1000, NextHops: 300, ECMP: 0.01, Default: true})
	b := GenerateRoutes(GenOptions{Seed: 1, Routes: 50000, Routes6: 1000, NextHops: 300, ECMP: 0.01, Default: true})
	c := GenerateRoutes(GenOptions{Seed: 2, Routes: 50000})
	if len(a) != 51002 || !slices.EqualFunc(a, b, Route.Equal) || slices.EqualFunc(a[:50000], c, Route.Equal) {
		t.Fatalf("not deterministic by seed: %d routes", len(a))
	}
	var lens [129]int
	hops := map[netip.Addr]bool{}
	for _, r := range a[:50000] {
		lens[r.Prefix.Bits()]++
		hops[r.NextHop] = true
		if err := checkRoute(r); err != nil {
			t.Fatal(err)
		}
	}
	if lens[24] < 27000 || lens[24] > 33000 || lens[22]+lens[23] < 8000 || lens[16] < 400 {
		t.Errorf("length mix: /16 %d, /22 %d, /23 %d, /24 %d", lens[16], lens[22], lens[23], lens[24])
	}
	if len(hops) < 250 || len(hops) > 300 {
		t.Errorf("%d next hops, want about 300", len(hops))
	}
	if _, err := NewTable(a); err != nil {
		t.Fatal(err)
	}
}

func BenchmarkApply(b *testing.B) {
	benchApply(b, GenerateRoutes(GenOptions{Seed: 9, Routes: 200000}), GenerateRoutes(GenOptions{Seed: 10, Routes: 1000}))
}

// BenchmarkApply6 is BenchmarkApply with IPv6 routes: a deletion looks for
// the rule it uncovers among the shorter lengths of its node.
func BenchmarkApply6(b *testing.B) {
	benchApply(b, GenerateRoutes(GenOptions{Seed: 9, Routes6: 200000}), GenerateRoutes(GenOptions{Seed: 10, Routes6: 1000}))
}

// benchApply flaps the routes of flap (added, then deleted) over a table
// of base, in batches of 1, 100 and 1000 changes.
func benchApply(b *testing.B, base, flap []Route) {
	tb, err := NewTable(base)
	if err != nil {
		b.Fatal(err)
	}
	for _, batch := range []int{1, 100, 1000} {
		b.Run(fmt.Sprintf("batch=%d", batch), func(b *testing.B) {
			cs := make([]Change, batch)
			i := 0
			n := 0
			for b.Loop() {
				for j := range cs {
					r := flap[i%len(flap)]
					cs[j] = Change{Route: r, Delete: (i/len(flap))%2 == 1}
					i++
				}
				if err := tb.Apply(cs); err != nil {
					b.Fatal(err)
				}
				n += batch
			}
			b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "changes/s")
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(n), "ns/change")
		})
	}
}
