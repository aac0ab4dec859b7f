package fastpath

import (
	"fmt"
	"math/rand/v2"
	"net/netip"
	"testing"

	"github.com/junction-dataplane/junction/drivers/kfeature"
)

// TestSetRoutes: a batch of routes lands in the maps as SetRoute would put
// each (IPv4 and IPv6, local and with gateways), every route the maps
// refuse gets its own error and no other does (bad routes mixed in; a
// trie filled to its size half-way through, where the kernel stops the
// batch and the rest go one by one), and DeleteRoutes removes what it is
// given, missing prefixes included, without an error.
//
// It runs with the kernel's batches and with lpm_trie_batch emulated
// missing (JUNCTION_KERNEL_MISSING), where every route goes one by one
// with the same results.
func TestSetRoutes(t *testing.T) {
	needRoot(t)
	t.Run("batches", func(t *testing.T) {
		if err := kfeature.Have(kfeature.LPMTrieBatch); err != nil {
			t.Skipf("this kernel: %v", err)
		}
		setRoutes(t, true)
	})
	t.Run("without batches", func(t *testing.T) {
		t.Setenv(kfeature.EnvMissing, string(kfeature.LPMTrieBatch))
		setRoutes(t, false)
	})
}

func setRoutes(t *testing.T, batches bool) {
	const size = 100
	tb, err := NewTables(size, 4, 4)
	if err != nil {
		t.Fatal(err)
	}
	defer tb.Close()
	if tb.routeBatches != batches {
		t.Fatalf("the tables take route batches: %v, want %v", tb.routeBatches, batches)
	}

	var cs []RouteChange
	bad := map[int]bool{}
	for i := range 80 {
		p := netip.PrefixFrom(netip.AddrFrom4([4]byte{10, byte(i), 0, 0}), 16)
		r := Route{Ifindex: 3 + i%2, Gateway: netip.AddrFrom4([4]byte{192, 0, 2, byte(i)})}
		switch {
		case i%17 == 5:
			r.Gateway = netip.MustParseAddr("2001:db8::1") // the other family
			bad[len(cs)] = true
		case i%23 == 7:
			r = Route{} // no ifindex
			bad[len(cs)] = true
		case i%10 == 0:
			r = Route{Local: true}
		}
		cs = append(cs, RouteChange{Prefix: p, Route: r})
	}
	cs = append(cs, RouteChange{Prefix: netip.MustParsePrefix("::ffff:10.0.0.0/104"), Route: Route{Ifindex: 3}})
	bad[len(cs)-1] = true
	for i := range 30 {
		p := netip.PrefixFrom(netip.AddrFrom16([16]byte{0x20, 0x01, 0x0d, 0xb8, byte(i)}), 40)
		cs = append(cs, RouteChange{Prefix: p, Route: Route{Ifindex: 4, Gateway: netip.MustParseAddr(fmt.Sprintf("fe80::%x", i+1))}})
	}
	errs := make([]error, len(cs))
	tb.SetRoutes(cs, errs)
	for i, c := range cs {
		if (errs[i] != nil) != bad[i] {
			t.Errorf("route %d (%v %+v): error %v, want an error: %v", i, c.Prefix, c.Route, errs[i], bad[i])
		}
		if bad[i] {
			continue
		}
		if c.Prefix.Addr().Is4() {
			want, _ := routeValue(c.Prefix, c.Route)
			if v, ok := tb.dir.lookup(c.Prefix.Addr()); !ok || v != want {
				t.Errorf("%v: table holds %+v (%v), want %+v", c.Prefix, v, ok, want)
			}
		} else {
			var v fastpathRoute6
			want, _ := route6Value(c.Prefix, c.Route)
			if err := tb.routes6.Lookup(*route6Key(c.Prefix), &v); err != nil || v != want {
				t.Errorf("%v: map holds %+v (%v), want %+v", c.Prefix, v, err, want)
			}
		}
	}

	// A full IPv6 trie: the kernel refuses the elements past its size,
	// each gets its error, those before it none. (The IPv4 table has no
	// such limit: dir4.go.)
	var more []RouteChange
	for i := range 80 {
		p := netip.PrefixFrom(netip.AddrFrom16([16]byte{0x20, 0x01, 0x0d, 0xb9, byte(i)}), 40)
		more = append(more, RouteChange{Prefix: p, Route: Route{Ifindex: 3}})
	}
	errs = make([]error, len(more))
	tb.SetRoutes(more, errs)
	room := size - 30 // the IPv6 routes of cs
	for i := range more {
		if (errs[i] == nil) != (i < room) {
			t.Errorf("route %d of a batch into a trie with room for %d: error %v", i, room, errs[i])
		}
	}

	var del []netip.Prefix
	for _, c := range cs {
		del = append(del, c.Prefix)
	}
	del = append(del, netip.MustParsePrefix("198.51.100.0/24"), netip.MustParsePrefix("2001:db8:ffff::/48")) // never set
	errs = make([]error, len(del))
	tb.DeleteRoutes(del, errs)
	for i, p := range del {
		if errs[i] != nil && !p.Addr().Is4In6() {
			t.Errorf("delete %v: %v", p, errs[i])
		}
	}
	for _, c := range cs {
		if !c.Prefix.Addr().Is4() {
			continue
		}
		if v, ok := tb.dir.lookup(c.Prefix.Addr()); ok {
			t.Errorf("%v still held after DeleteRoutes: %+v", c.Prefix, v)
		}
	}
}

// BenchmarkSetRoutes: a full table's worth of IPv4 /24s (2^18 of them,
// 64 apart, with a few next hops) set and then deleted through
// SetRoutes and DeleteRoutes in batches of 4,096 as the fast-path
// mirror gives them, in address order and in a random order (a routing
// daemon's); ns per change, a set and a delete each counted.
func BenchmarkSetRoutes(b *testing.B) {
	needRoot(b)
	const n = 1 << 18
	for _, order := range []string{"seq", "random"} {
		b.Run("order="+order, func(b *testing.B) {
			tb, err := NewTables(1<<20, 4, 4)
			if err != nil {
				b.Fatal(err)
			}
			defer tb.Close()
			cs := make([]RouteChange, n)
			for i := range cs {
				a := uint32(10)<<24 | uint32(i)<<6<<8
				cs[i] = RouteChange{Prefix: netip.PrefixFrom(netip.AddrFrom4([4]byte{byte(a >> 24), byte(a >> 16), byte(a >> 8), 0}), 24),
					Route: Route{Ifindex: 3 + i%4, Gateway: netip.AddrFrom4([4]byte{192, 0, 2, byte(i % 4)})}}
			}
			if order == "random" {
				rand.New(rand.NewPCG(7, 7)).Shuffle(n, func(i, j int) { cs[i], cs[j] = cs[j], cs[i] })
			}
			ps := make([]netip.Prefix, n)
			for i := range cs {
				ps[i] = cs[i].Prefix
			}
			errs := make([]error, 4096)
			b.ResetTimer()
			for range b.N {
				for i := 0; i < n; i += 4096 {
					tb.SetRoutes(cs[i:i+4096], errs)
					if errs[0] != nil {
						b.Fatal(errs[0])
					}
				}
				for i := 0; i < n; i += 4096 {
					tb.DeleteRoutes(ps[i:i+4096], errs)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/(2*n), "ns/change")
		})
	}
}
