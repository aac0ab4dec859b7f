package fpmirror

import (
	"net/netip"
	"testing"

	"github.com/junction-dataplane/junction/drivers"
	"github.com/junction-dataplane/junction/elements"
	"github.com/junction-dataplane/junction/elements/ip/route"
)

// nopFast takes routes, one by one or in batches, and keeps nothing: what a
// benchmark with it measures is the mirror's own work (the table's journal,
// the mirror's maps), not a fast path's.
type nopFast struct{ drivers.FastPathTable }

func (nopFast) SetRoute(netip.Prefix, netip.Addr, drivers.Device) error { return nil }
func (nopFast) DeleteRoute(netip.Prefix) error                          { return nil }
func (nopFast) SetRoutes(rs []drivers.FastRoute, errs []error)          { clear(errs[:len(rs)]) }
func (nopFast) DeleteRoutes(ps []netip.Prefix, errs []error)            { clear(errs[:len(ps)]) }

// BenchmarkFollowTable: the mirror following a table of 200,000 /24s
// withdrawn and announced again 1,000 at a time (a round of the mirror
// after each thousand, as its 10 ms rounds see a full table loaded by a
// routing daemon), the table's own writes untimed; ns/op is per route
// change.
func BenchmarkFollowTable(b *testing.B) {
	const n, step = 200000, 1000
	rs := make([]route.Route, n)
	ps := make([]netip.Prefix, n)
	for i := range rs {
		ps[i] = netip.PrefixFrom(netip.AddrFrom4([4]byte{10 + byte(i>>16), byte(i >> 8), byte(i), 0}), 24)
		rs[i] = route.Route{Prefix: ps[i], NextHop: netip.AddrFrom4([4]byte{192, 0, 2, 1})}
	}
	tab, err := route.NewTable(rs)
	if err != nil {
		b.Fatal(err)
	}
	st := &elements.Stats{}
	s := &Sync{t: tab, fp: nopFast{}, ports: []drivers.Device{nil}, applied: st.Counter("applied"), failed: st.Counter("failed")}
	tab.StartJournal()
	if err := s.sync(); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	changes := 0
	for range b.N {
		for i := 0; i < n; i += step {
			b.StopTimer()
			if _, err := tab.Delete(ps[i : i+step]...); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
			if err := s.sync(); err != nil {
				b.Fatal(err)
			}
		}
		for i := 0; i < n; i += step {
			b.StopTimer()
			if err := tab.Insert(rs[i : i+step]...); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
			if err := s.sync(); err != nil {
				b.Fatal(err)
			}
		}
		changes += 2 * n
	}
	b.StopTimer()
	if s.have.len() != n {
		b.Fatalf("the mirror holds %d routes, want %d", s.have.len(), n)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(changes), "ns/change")
}
