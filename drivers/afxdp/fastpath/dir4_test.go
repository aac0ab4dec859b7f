package fastpath

import (
	"encoding/binary"
	"math/rand/v2"
	"net/netip"
	"testing"
	"time"
)

// refLPM is the reference the IPv4 table is checked against: every
// prefix, searched longest first.
type refLPM map[netip.Prefix]fastpathRoute

func (r refLPM) lookup(a netip.Addr) (fastpathRoute, bool) {
	for bits := 32; bits >= 0; bits-- {
		p, _ := a.Prefix(bits)
		if v, ok := r[p]; ok {
			return v, true
		}
	}
	return fastpathRoute{}, false
}

// TestDir4AgreesWithReference sets, replaces and deletes prefixes of
// every length at random, crowded into a few /16s so that /24s gain and
// lose groups and deletions uncover shorter prefixes, and after every
// step of changes compares the table, read as the program reads it,
// with a plain longest-prefix search: at random addresses and at the
// first and last address of every prefix and its neighbours.
func TestDir4AgreesWithReference(t *testing.T) {
	needRoot(t)
	d, err := newDir4(4096)
	if err != nil {
		t.Fatal(err)
	}
	defer d.close()
	d.quarantine = 0 // reuse at once: the test checks contents, not timing
	rng := rand.New(rand.NewPCG(1, 2))
	ref := refLPM{}
	hops := []fastpathRoute{{Flags: routeFlagLocal}}
	for i := range 12 {
		hops = append(hops, fastpathRoute{Ifindex: uint32(3 + i%3), Gateway: uint32(i)})
	}
	randPrefix := func() netip.Prefix {
		a := [4]byte{10, byte(rng.IntN(3)), byte(rng.IntN(4)), byte(rng.IntN(256))}
		if rng.IntN(20) == 0 {
			a[0] = byte(rng.IntN(256))
		}
		var bits int
		switch rng.IntN(4) {
		case 0:
			bits = rng.IntN(17) // 0../16
		case 1:
			bits = 17 + rng.IntN(8) // /17../24
		default:
			bits = 25 + rng.IntN(8) // longer: groups
		}
		return netip.PrefixFrom(netip.AddrFrom4(a), bits).Masked()
	}
	check := func(step int) {
		t.Helper()
		probe := func(a netip.Addr) {
			want, wok := ref.lookup(a)
			got, ok := d.lookup(a)
			if ok != wok || got != want {
				t.Fatalf("step %d: %v -> %+v %v, want %+v %v", step, a, got, ok, want, wok)
			}
		}
		for range 2000 {
			probe(netip.AddrFrom4([4]byte{10, byte(rng.IntN(3)), byte(rng.IntN(4)), byte(rng.IntN(256))}))
		}
		for p := range ref {
			first := p.Addr()
			f4 := first.As4()
			l := binary.BigEndian.Uint32(f4[:]) | ^mask4(p.Bits())
			binary.BigEndian.PutUint32(f4[:], l)
			last := netip.AddrFrom4(f4)
			probe(first)
			probe(last)
			if n := last.Next(); n.IsValid() {
				probe(n)
			}
			if pv := first.Prev(); pv.IsValid() {
				probe(pv)
			}
		}
		u := d.use()
		if u.Prefixes != len(ref) {
			t.Fatalf("step %d: %d prefixes held, want %d", step, u.Prefixes, len(ref))
		}
	}
	for step := range 300 {
		for range 1 + rng.IntN(20) {
			p := randPrefix()
			if _, held := ref[p]; held && rng.IntN(2) == 0 {
				if err := d.del(p); err != nil {
					t.Fatal(err)
				}
				delete(ref, p)
				continue
			}
			h := hops[rng.IntN(len(hops))]
			if err := d.set(p, h); err != nil {
				t.Fatal(err)
			}
			ref[p] = h
		}
		check(step)
	}
	// Everything deleted: no group, no next hop, no route left.
	for p := range ref {
		if err := d.del(p); err != nil {
			t.Fatal(err)
		}
		delete(ref, p)
	}
	check(-1)
	if u := d.use(); u.Groups != 0 || u.Nexthops != 0 || u.Pinned != 0 {
		t.Errorf("empty table uses %+v", u)
	}
}

// TestDir4Pinned: with the groups all taken, a /24 that gains a longer
// prefix goes to the slow path whole (the graph has every prefix), and
// gets its covering route back once its longer prefixes are gone.
func TestDir4Pinned(t *testing.T) {
	needRoot(t)
	d, err := newDir4(1) // 64 groups
	if err != nil {
		t.Fatal(err)
	}
	defer d.close()
	via := fastpathRoute{Ifindex: 3, Gateway: 7}
	long := fastpathRoute{Ifindex: 4}
	if err := d.set(netip.MustParsePrefix("10.0.0.0/8"), via); err != nil {
		t.Fatal(err)
	}
	n := d.groups + 2
	for i := range n {
		p := netip.PrefixFrom(netip.AddrFrom4([4]byte{10, 1, byte(i), 128}), 25)
		if err := d.set(p, long); err != nil {
			t.Fatal(err)
		}
	}
	if u := d.use(); u.Groups != d.groups || u.Pinned != 2 {
		t.Fatalf("use %+v, want %d groups and 2 pinned", u, d.groups)
	}
	slow := fastpathRoute{Flags: routeFlagLocal}
	for i := range n {
		lo := netip.AddrFrom4([4]byte{10, 1, byte(i), 1})
		hi := netip.AddrFrom4([4]byte{10, 1, byte(i), 200})
		wantLo, wantHi := via, long
		if i >= d.groups {
			wantLo, wantHi = slow, slow
		}
		if got, _ := d.lookup(lo); got != wantLo {
			t.Errorf("%v: %+v, want %+v", lo, got, wantLo)
		}
		if got, _ := d.lookup(hi); got != wantHi {
			t.Errorf("%v: %+v, want %+v", hi, got, wantHi)
		}
	}
	// A second longer prefix in a pinned /24, then both gone.
	pin := [4]byte{10, 1, byte(d.groups), 0}
	p2 := netip.PrefixFrom(netip.AddrFrom4(pin), 26)
	if err := d.set(p2, long); err != nil {
		t.Fatal(err)
	}
	if err := d.del(netip.PrefixFrom(netip.AddrFrom4([4]byte{10, 1, byte(d.groups), 128}), 25)); err != nil {
		t.Fatal(err)
	}
	if got, _ := d.lookup(netip.AddrFrom4(pin)); got != slow {
		t.Errorf("pinned /24 with one longer prefix left: %+v", got)
	}
	if err := d.del(p2); err != nil {
		t.Fatal(err)
	}
	if got, _ := d.lookup(netip.AddrFrom4(pin)); got != via {
		t.Errorf("pinned /24 with no longer prefix left: %+v, want the /8's %+v", got, via)
	}
	if u := d.use(); u.Pinned != 1 {
		t.Errorf("use %+v, want 1 pinned", u)
	}
}

// TestDir4Quarantine: a freed group or next hop is not handed out again
// before the quarantine has passed (a program may still hold it), and
// is after.
func TestDir4Quarantine(t *testing.T) {
	needRoot(t)
	d, err := newDir4(64)
	if err != nil {
		t.Fatal(err)
	}
	defer d.close()
	d.quarantine = 200 * time.Millisecond
	a := netip.MustParsePrefix("10.0.0.128/25")
	b := netip.MustParsePrefix("10.0.1.128/25")
	if err := d.set(a, fastpathRoute{Ifindex: 3}); err != nil {
		t.Fatal(err)
	}
	g0, nh0 := d.t24[0x0a0000]&^dir4Group, d.t8[uint32(d.t24[0x0a0000]&^dir4Group)*dir4GroupSize+200]
	if err := d.del(a); err != nil {
		t.Fatal(err)
	}
	if err := d.set(b, fastpathRoute{Ifindex: 4}); err != nil {
		t.Fatal(err)
	}
	e := d.t24[0x0a0001]
	g1, nh1 := e&^dir4Group, d.t8[uint32(e&^dir4Group)*dir4GroupSize+200]
	if e&dir4Group == 0 || g1 == g0 || nh1 == nh0 {
		t.Fatalf("reused within the quarantine: group %d -> %d, next hop %d -> %d", g0, g1, nh0, nh1)
	}
	if err := d.del(b); err != nil {
		t.Fatal(err)
	}
	time.Sleep(d.quarantine)
	if err := d.set(a, fastpathRoute{Ifindex: 5}); err != nil {
		t.Fatal(err)
	}
	e = d.t24[0x0a0000]
	if g := e &^ dir4Group; g != g0 && g != g1 {
		t.Errorf("after the quarantine a new group %d, want %d or %d reused", g, g0, g1)
	}
	if nh := d.t8[uint32(e&^dir4Group)*dir4GroupSize+200]; nh != nh0 && nh != nh1 {
		t.Errorf("after the quarantine a new next hop %d, want %d or %d reused", nh, nh0, nh1)
	}
}
