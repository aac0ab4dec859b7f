package route

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

func u32(a netip.Addr) uint32 { b := a.As4(); return binary.BigEndian.Uint32(b[:]) }

func addrU32(v uint32) netip.Addr {
	var b [4]byte
	binary.BigEndian.PutUint32(b[:], v)
	return netip.AddrFrom4(b)
}

// refLPM is the naive reference: routes sorted longest prefix first, the
// first that contains the address wins.
type refLPM []Route

func newRef(rs []Route) refLPM {
	r := slices.Clone(rs)
	slices.SortStableFunc(r, func(a, b Route) int { return b.Prefix.Bits() - a.Prefix.Bits() })
	return r
}

func (r refLPM) lookup(a netip.Addr) (Route, bool) {
	for _, rt := range r {
		if rt.Prefix.Contains(a) {
			return rt, true
		}
	}
	return Route{}, false
}

// randomRoutes makes n distinct random routes; lengths favour /8../32 with
// some short ones, and some prefixes nest inside earlier ones so that
// overlaps are common.
func randomRoutes(rng *rand.Rand, n int) []Route {
	seen := map[netip.Prefix]bool{}
	var rs []Route
	for len(rs) < n {
		var bits int
		switch x := rng.IntN(100); {
		case x < 3:
			bits = rng.IntN(8)
		case x < 40:
			bits = 8 + rng.IntN(9) // 8..16
		case x < 80:
			bits = 17 + rng.IntN(8) // 17..24
		default:
			bits = 25 + rng.IntN(8) // 25..32
		}
		a := rng.Uint32()
		if len(rs) > 0 && rng.IntN(3) == 0 {
			// nest in (or next to) an existing prefix
			base := rs[rng.IntN(len(rs))].Prefix
			a = u32(base.Addr()) | rng.Uint32()>>uint(min(base.Bits(), 31))
			if base.Bits() == 32 {
				a = u32(base.Addr())
			}
		}
		p := netip.PrefixFrom(addrU32(a), bits).Masked()
		if seen[p] {
			continue
		}
		seen[p] = true
		r := Route{Prefix: p, Out: rng.IntN(8)}
		if rng.IntN(2) == 0 {
			r.NextHop = addrU32(0x0a000000 | rng.Uint32()&0xffffff)
		}
		rs = append(rs, r)
	}
	return rs
}

// probe returns lookup addresses: uniform ones and ones inside, at the
// edges of, and just outside the table's prefixes.
func probe(rng *rand.Rand, rs []Route) uint32 {
	if rng.IntN(4) == 0 || len(rs) == 0 {
		return rng.Uint32()
	}
	p := rs[rng.IntN(len(rs))].Prefix
	lo := u32(p.Addr())
	span := uint32(0xffffffff)
	if p.Bits() > 0 {
		span = 1<<(32-p.Bits()) - 1
	}
	switch rng.IntN(5) {
	case 0:
		return lo
	case 1:
		return lo + span
	case 2:
		return lo - 1
	case 3:
		return lo + span + 1
	}
	return lo + rng.Uint32()&span
}

func TestTableAgreesWithReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(42, 1812))
	total := 0
	for _, size := range []int{1, 10, 100, 1000, 2000} {
		for trial := range 3 {
			rs := randomRoutes(rng, size)
			if trial == 2 { // make sure of a default route
				def := netip.MustParsePrefix("0.0.0.0/0")
				rs = slices.DeleteFunc(rs, func(r Route) bool { return r.Prefix == def })
				rs = append(rs, Route{Prefix: def, Out: 9})
			}
			tb, err := NewTable(rs)
			if err != nil {
				t.Fatal(err)
			}
			ref := newRef(rs)
			n := 35000
			if size >= 1000 {
				n = 5000
			}
			for range n {
				d := probe(rng, rs)
				got, gok := tb.Lookup(d)
				want, wok := ref.lookup(addrU32(d))
				if gok != wok || !got.Equal(want) {
					t.Fatalf("table of %d, lookup %v: got %v %v, want %v %v", len(rs), addrU32(d), got, gok, want, wok)
				}
			}
			total += n
		}
	}
	t.Logf("%d lookups agree", total)
	if total < 100000 {
		t.Fatalf("only %d lookups", total)
	}
}

func TestTableEdges(t *testing.T) {
	rs := []string{
		"0.0.0.0/0 via 192.0.2.1 out 0",
		"10.0.0.0/8 via 10.255.0.1 out 1",
		"10.1.0.0/16 out 2",
		"10.1.2.0/24 via 10.1.0.9 out 3",
		"10.1.2.128/25 out 4",
		"10.1.2.200/32 out 5",
		"10.1.2.201 out 6", // bare address: /32
		"172.16.0.0/12 out 7",
		"172.16.0.0/17 out 8", // /17: first level-2 bit
		"255.255.255.255/32 out 9",
	}
	var routes []Route
	for _, s := range rs {
		r, err := ParseRoute(s)
		if err != nil {
			t.Fatalf("%q: %v", s, err)
		}
		routes = append(routes, r)
	}
	tb, err := NewTable(routes)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		dst string
		out int
	}{
		{"1.2.3.4", 0}, {"0.0.0.0", 0}, {"9.255.255.255", 0}, {"11.0.0.0", 0},
		{"10.0.0.0", 1}, {"10.255.255.255", 1}, {"10.0.255.255", 1}, {"10.2.0.0", 1},
		{"10.1.0.0", 2}, {"10.1.1.255", 2}, {"10.1.3.0", 2}, {"10.1.255.255", 2},
		{"10.1.2.0", 3}, {"10.1.2.127", 3},
		{"10.1.2.128", 4}, {"10.1.2.199", 4}, {"10.1.2.202", 4}, {"10.1.2.255", 4},
		{"10.1.2.200", 5}, {"10.1.2.201", 6},
		{"172.16.0.0", 8}, {"172.16.127.255", 8}, {"172.16.128.0", 7}, {"172.31.255.255", 7}, {"172.32.0.0", 0},
		{"255.255.255.255", 9}, {"255.255.255.254", 0},
	} {
		r, ok := tb.Lookup(u32(netip.MustParseAddr(tc.dst)))
		if !ok || r.Out != tc.out {
			t.Errorf("%s: route %v (ok %v), want out %d", tc.dst, r, ok, tc.out)
		}
	}
	// Without the default route, misses are misses; deleting the /25
	// uncovers the /24 again.
	err = tb.Update(func(b *Builder) error {
		if !b.Delete(netip.MustParsePrefix("0.0.0.0/0")) || !b.Delete(netip.MustParsePrefix("10.1.2.128/25")) {
			return errors.New("delete found nothing")
		}
		if b.Delete(netip.MustParsePrefix("10.1.2.128/26")) {
			return errors.New("deleted a route that does not exist")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if r, ok := tb.Lookup(u32(netip.MustParseAddr("1.2.3.4"))); ok {
		t.Errorf("after deleting the default: 1.2.3.4 -> %v", r)
	}
	if r, _ := tb.Lookup(u32(netip.MustParseAddr("10.1.2.130"))); r.Out != 3 {
		t.Errorf("after deleting the /25: 10.1.2.130 -> %v, want out 3", r)
	}
	if tb.Len() != len(rs)-2 || len(tb.Routes()) != len(rs)-2 {
		t.Errorf("Len %d, Routes %d, want %d", tb.Len(), len(tb.Routes()), len(rs)-2)
	}
	// An only-/0 table and an empty one.
	tb, _ = NewTable([]Route{{Prefix: netip.MustParsePrefix("0.0.0.0/0"), Out: 3}})
	for _, d := range []uint32{0, 1, 0x7fffffff, 0xffffffff} {
		if r, ok := tb.Lookup(d); !ok || r.Out != 3 {
			t.Errorf("default only: %v -> %v", addrU32(d), r)
		}
	}
	tb, _ = NewTable(nil)
	if _, ok := tb.Lookup(0x0a000001); ok {
		t.Errorf("empty table found a route")
	}
}

func TestParseRouteErrors(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"", "empty"},
		{"10.0.0.0/33 out 1", "bad prefix"},
		{"10.0.0/8 out 1", "bad prefix"},
		{"2001:db8::/129 out 1", "bad prefix"},
		{"::ffff:10.0.0.0/104 out 1", "IPv4 form"},
		{"2001:db8::/32 via 10.0.0.1 out 1", "bad via"},
		{"banana out 1", "bad prefix"},
		{"10.1.0.0/8 out 1", "host bits set (did you mean 10.0.0.0/8?)"},
		{"10.0.0.0/8 via 10.1.0 out 1", "bad via"},
		{"10.0.0.0/8 via ::1 out 1", "bad via"},
		{"10.0.0.0/8 via 224.0.0.1 out 1", "not a unicast"},
		{"10.0.0.0/8 via out 1", "bad via"},
		{"10.0.0.0/8 via 10.0.0.1 via 10.0.0.2 out 1 out 2 out 3", "2 via and 3 out"},
		{"10.0.0.0/8 via", "via needs an address"},
		{"10.0.0.0/8", "missing \"out PORT\""},
		{"10.0.0.0/8 via 10.1.0.2", "missing \"out PORT\""},
		{"10.0.0.0/8 out", "out needs a port"},
		{"10.0.0.0/8 out x", "bad out port"},
		{"10.0.0.0/8 out -1", "out of range"},
		{"10.0.0.0/8 out 256", "out of range"},
		{"10.0.0.0/8 out 1 out 2", "2 out ports but no via"},
		{"10.0.0.0/8 dev eth0 out 1", "unexpected \"dev\""},
	} {
		_, err := ParseRoute(tc.in)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: error %v, want one containing %q", tc.in, err, tc.want)
		}
	}
}

func TestTableRCU(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	const versions = 40
	var sets [versions][]Route
	for v := range sets {
		// Every version maps everything to out v (via a default route and
		// some random longer prefixes), so an answer names its version.
		rs := randomRoutes(rng, 200)
		for i := range rs {
			rs[i].Out = v
		}
		sets[v] = append(rs, Route{Prefix: netip.MustParsePrefix("0.0.0.0/0"), Out: v})
	}
	tb, err := NewTable(sets[0])
	if err != nil {
		t.Fatal(err)
	}
	var stop atomic.Bool
	var wg sync.WaitGroup
	var lookups atomic.Int64
	for r := range 2 {
		wg.Go(func() {
			rr := rand.New(rand.NewPCG(uint64(r), 9))
			last := 0
			for n := 0; !stop.Load() || n < 1000; n++ {
				// The lock-free path the workers use.
				rt, ok := tb.Forward(addrU32(rr.Uint32()), rr.Uint32())
				if !ok || rt.Out < last || rt.Out >= versions {
					t.Errorf("lookup: %v %v after version %d", rt, ok, last)
					return
				}
				last = rt.Out // versions only move forward
				lookups.Add(1)
			}
		})
	}
	// Writers: one publishes whole versions in order; two others add
	// and remove a route concurrently through Update.
	for v := 1; v < versions; v++ {
		if err := tb.Replace(sets[v]); err != nil {
			t.Fatal(err)
		}
	}
	stop.Store(true)
	wg.Wait()
	var ww sync.WaitGroup
	for w := range 2 {
		ww.Go(func() {
			for i := range 20 {
				p := netip.PrefixFrom(addrU32(uint32(w)<<24|uint32(i)<<8), 24)
				tb.Update(func(b *Builder) error { return b.Insert(Route{Prefix: p, Out: versions - 1}) })
			}
		})
	}
	ww.Wait()
	have := map[netip.Prefix]bool{}
	for _, r := range tb.Routes() {
		have[r.Prefix] = true
	}
	for w := range 2 {
		for i := range 20 {
			if p := netip.PrefixFrom(addrU32(uint32(w)<<24|uint32(i)<<8), 24); !have[p] {
				t.Errorf("concurrent Update lost %v", p)
			}
		}
	}
	t.Logf("%d lookups during %d swaps", lookups.Load(), versions-1)
}

func FuzzRoute(f *testing.F) {
	for _, s := range []string{
		"10.0.0.0/8 via 10.1.0.2 out 0", "192.168.1.0/24 out 1", "0.0.0.0/0 via 192.0.2.1 out 1",
		"10.1.2.3 out 255", "10.0.0.0/8 out 0 via 10.0.0.1", "", "out", "1.2.3.4/32 via 1.2.3.4 out 01",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, err := ParseRoute(s)
		if err != nil {
			if !r.Equal(Route{}) {
				t.Fatalf("%q: route %v together with error %v", s, r, err)
			}
			return
		}
		// A parsed route is valid, prints in the syntax it came from,
		// and a table holding it finds it.
		if err := CheckRoute(r); err != nil {
			t.Fatalf("%q parsed into invalid %v: %v", s, r, err)
		}
		r2, err := ParseRoute(r.String())
		if err != nil || !r2.Equal(r) {
			t.Fatalf("%q -> %v -> %q -> %v, %v", s, r, r.String(), r2, err)
		}
		tb, err := NewTable([]Route{r})
		if err != nil {
			t.Fatal(err)
		}
		if got, ok := tb.Route(r.Prefix.Addr()); !ok || !got.Equal(r) {
			t.Fatalf("table of %v: lookup got %v %v", r, got, ok)
		}
	})
}

func BenchmarkTableLookup(b *testing.B) {
	for _, size := range []int{10, 10000} {
		rng := rand.New(rand.NewPCG(5, uint64(size)))
		rs := randomRoutes(rng, size)
		tb, err := NewTable(rs)
		if err != nil {
			b.Fatal(err)
		}
		dsts := make([]uint32, 4096)
		for i := range dsts {
			dsts[i] = probe(rng, rs)
		}
		b.Run(fmt.Sprintf("routes=%d", size), func(b *testing.B) {
			b.ReportAllocs()
			var sink int
			i := 0
			for b.Loop() {
				r, _ := tb.Lookup(dsts[i&4095])
				sink += r.Out
				i++
			}
			_ = sink
		})
	}
}

// mustRoutes parses route strings or fails the test.
func mustRoutes(t *testing.T, ss ...string) []Route {
	t.Helper()
	var rs []Route
	for _, s := range ss {
		r, err := ParseRoute(s)
		if err != nil {
			t.Fatal(err)
		}
		rs = append(rs, r)
	}
	return rs
}

// TestChangesSince: the journal a mirror follows names every prefix a
// version changed, with its route now; a rebuild or an overflow makes older
// versions unanswerable (the mirror then walks the table), and versions
// never go back, rebuilds included.
func TestChangesSince(t *testing.T) {
	pf := netip.MustParsePrefix
	tab, err := NewTable(mustRoutes(t, "10.0.0.0/8 out 0", "10.1.0.0/16 out 1"))
	if err != nil {
		t.Fatal(err)
	}
	tab.StartJournal()
	v0 := tab.Version()
	if err := tab.Insert(mustRoutes(t, "192.0.2.0/24 via 10.1.0.7 out 0")...); err != nil {
		t.Fatal(err)
	}
	if _, err := tab.Delete(pf("10.1.0.0/16")); err != nil {
		t.Fatal(err)
	}
	if err := tab.Insert(mustRoutes(t, "10.0.0.0/8 out 1")...); err != nil {
		t.Fatal(err)
	}
	ch := map[netip.Prefix]Change{}
	v, ok := tab.ChangesSince(v0, ch)
	if !ok || v != tab.Version() || v != v0+3 || len(ch) != 3 {
		t.Fatalf("ChangesSince(%d) = %v, %d, %v; want 3 prefixes up to %d", v0, ch, v, ok, v0+3)
	}
	if c := ch[pf("10.1.0.0/16")]; !c.Delete {
		t.Errorf("deleted prefix reported as %v", c)
	}
	if c := ch[pf("10.0.0.0/8")]; c.Delete || c.Route.Out != 1 {
		t.Errorf("10.0.0.0/8 reported as %v, want its latest route (out 1)", c)
	}
	if c := ch[pf("192.0.2.0/24")]; c.Delete || c.Route.NextHop != netip.MustParseAddr("10.1.0.7") {
		t.Errorf("192.0.2.0/24 reported as %v, want its route", c)
	}
	if _, ok := tab.ChangesSince(v0+2, ch); !ok || len(ch) != 1 {
		t.Errorf("ChangesSince(v0+2) = %v, %v: want only the last change", ch, ok)
	}
	if _, ok := tab.ChangesSince(v, ch); !ok || len(ch) != 0 {
		t.Errorf("ChangesSince(now) = %v, %v", ch, ok)
	}
	// A prefix deleted then added again, and one added then deleted, in
	// later versions: its latest record decides.
	if _, err := tab.Delete(pf("192.0.2.0/24")); err != nil {
		t.Fatal(err)
	}
	if err := tab.Insert(mustRoutes(t, "192.0.2.0/24 out 1", "198.51.100.0/24 out 0")...); err != nil {
		t.Fatal(err)
	}
	if _, err := tab.Delete(pf("198.51.100.0/24")); err != nil {
		t.Fatal(err)
	}
	if _, ok := tab.ChangesSince(v, ch); !ok || len(ch) != 2 || ch[pf("192.0.2.0/24")].Delete || ch[pf("192.0.2.0/24")].Route.Out != 1 || !ch[pf("198.51.100.0/24")].Delete {
		t.Errorf("after delete+add and add+delete: %v, %v", ch, ok)
	}
	// A next-hop set freed and given to another route: the records name
	// sets by number, and a prefix's older record names one that now
	// belongs to another route; the latest record decides.
	v = tab.Version()
	if err := tab.Insert(mustRoutes(t, "203.0.113.0/24 via 10.1.0.8 out 0")...); err != nil {
		t.Fatal(err)
	}
	if err := tab.Insert(mustRoutes(t, "203.0.113.0/24 via 10.1.0.9 out 0")...); err != nil {
		t.Fatal(err)
	}
	if err := tab.Insert(mustRoutes(t, "233.252.0.0/24 via 10.1.0.10 out 1")...); err != nil {
		t.Fatal(err)
	}
	if _, ok := tab.ChangesSince(v, ch); !ok || len(ch) != 2 ||
		ch[pf("203.0.113.0/24")].Route.NextHop != netip.MustParseAddr("10.1.0.9") ||
		ch[pf("233.252.0.0/24")].Route.NextHop != netip.MustParseAddr("10.1.0.10") {
		t.Errorf("after a set was freed and reused: %v, %v", ch, ok)
	}
	v = tab.Version()
	// A rebuild: older versions are unanswerable; the version still grows.
	if err := tab.Replace(mustRoutes(t, "10.0.0.0/8 out 0")); err != nil {
		t.Fatal(err)
	}
	if tab.Version() <= v {
		t.Fatalf("version went from %d to %d across Replace", v, tab.Version())
	}
	if _, ok := tab.ChangesSince(v, ch); ok {
		t.Error("ChangesSince answered across a Replace")
	}
	// An overflow: the oldest versions are dropped.
	vr := tab.Version()
	var rs []Route
	for i := 0; i < maxJournal/2+10; i++ {
		rs = append(rs, Route{Prefix: netip.PrefixFrom(netip.AddrFrom4([4]byte{100, byte(i >> 8), byte(i), 0}), 24), Out: 0})
	}
	// Five versions of ~16k changes: more records than maxJournal.
	for _, half := range [][]Route{rs[:len(rs)/2], rs[len(rs)/2:], rs[:len(rs)/2], rs[len(rs)/2:], rs[:len(rs)/2]} {
		if err := tab.Insert(half...); err != nil {
			t.Fatal(err)
		}
	}
	if _, ok := tab.ChangesSince(vr, ch); ok {
		t.Error("ChangesSince answered for versions the journal dropped")
	}
	if _, ok := tab.ChangesSince(tab.Version()-1, ch); !ok || len(ch) != len(rs)/2 {
		t.Errorf("the last version: %d prefixes, %v; want %d", len(ch), ok, len(rs)/2)
	}
}
