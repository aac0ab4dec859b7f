package route

import (
	"net/netip"

	"github.com/junction-dataplane/junction/packet"
)

// What IPLookup (elements/ip) builds a table with, and what its mirrors
// (route/kernelmirror, route/fpmirror) read and write it by.

// ParsePrefix4 reads an IPv4 prefix or address (a /32), for IPv4-only keys.
func ParsePrefix4(s string) (netip.Prefix, error) { return parsePrefix(s) }

// ParsePrefix reads an IPv4 or IPv6 prefix, or an address (a host route).
func ParsePrefix(s string) (netip.Prefix, error) { return parsePrefixAny(s) }

// Unicast4 reports whether a is usable as an IPv4 host address.
func Unicast4(a netip.Addr) bool { return unicast4(a) }

// CheckVia checks that a is usable as a next hop of the family (v4:
// IPv4): unicast, no zone.
func CheckVia(a netip.Addr, v4 bool) error { return checkVia(a, v4) }

// CheckRoute reports what is wrong with r as a table entry (nil: nothing).
func CheckRoute(r Route) error { return checkRoute(r) }

// ParseConfig parses the routes key's entries and the routes_file's lines
// into one list, refusing more than limit routes (0: no limit) while
// reading; errors name the key and the entry or file line.
func ParseConfig(entries []string, file string, limit int) ([]Route, error) {
	rs, err := parseRouteSet(entries, file, limit)
	if err != nil {
		return nil, err
	}
	return rs.routes, nil
}

// Precheck checks, without building anything, that routes fit a table's
// fixed capacities (next-hop sets, IPv4 groups).
func Precheck(routes []Route) error { return precheck(routes) }

// MaxRoutesOrDefault is the route limit l sets (DefaultMaxRoutes when unset).
func (l Limits) MaxRoutesOrDefault() int { return (&Table{limits: l}).maxRoutes() }

// NewTableChecked is NewTableLimits for routes already checked by
// CheckRoute when checked is true (the check is then skipped).
func NewTableChecked(routes []Route, lim Limits, checked bool) (*Table, error) {
	return newTable(routes, lim, checked)
}

// Pick chooses one of n equal-cost paths by flow hash.
func Pick(n int, hash uint32) int { return pick(n, hash) }

// FIB is one published version of a table: immutable, read by every worker
// without locks. A lookup returns a next-hop value: 0 for no route, else
// v for the paths Hops(v).
type FIB = fib

// Current is the version readers use now; load it once per batch.
func (t *Table) Current() *FIB { return t.cur.Load() }

// Lookup4Batch looks up every IPv4 destination of dst (host order) into
// out, overlapping the cache misses.
func (f *fib) Lookup4Batch(dst []uint32, out []uint16) { f.lookup4Batch(dst, out) }

// Lookup4 looks up one IPv4 destination (host order).
func (f *fib) Lookup4(dst uint32) uint16 { return f.lookup4(dst) }

// Lookup6 looks up one IPv6 destination.
func (f *fib) Lookup6(dst *[16]byte) uint16 { return f.lookup6(dst) }

// Lookup6Batch looks up the IPv6 destination of every packet of pkts (each
// with a whole IPv6 header at its L3 offset) into out, the walks
// interleaved (fib6batch.go).
func (f *fib) Lookup6Batch(pkts []*packet.Packet, out []uint16) { f.lookup6Batch(pkts, out) }

// Hops are the paths of next-hop value v (v != 0), the first one first.
func (f *fib) Hops(v uint16) []Hop { return f.nh[v-1].hops }

// NewTableHeap is NewTable with every page on the plain heap, without
// huge-page slabs: for benchmarks comparing the two layouts in one binary.
func NewTableHeap(routes []Route) (*Table, error) {
	return newTableLayout(routes, Limits{}, false, pageLayout{heapOnly: true})
}

// HugeBytes is how much of the table's IPv4 pages the kernel backs with
// 2 MiB pages (slab.go; -1 where it cannot tell).
func (t *Table) HugeBytes() int {
	t.wmu.Lock()
	defer t.wmu.Unlock()
	return t.w.slab.hugeBytes()
}
