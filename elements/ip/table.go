package ip

import (
	"fmt"
	"net/netip"
	"slices"
	"sync"
	"sync/atomic"
)

// Route is one IPv4 route: packets whose destination falls in Prefix leave
// on output port Out towards NextHop. A zero NextHop marks a directly
// connected network: the next hop is the packet's own destination.
type Route struct {
	Prefix  netip.Prefix
	NextHop netip.Addr
	Out     int
}

// String formats the route in the syntax ParseRoute reads.
func (r Route) String() string {
	if r.NextHop.IsValid() {
		return fmt.Sprintf("%s via %s out %d", r.Prefix, r.NextHop, r.Out)
	}
	return fmt.Sprintf("%s out %d", r.Prefix, r.Out)
}

// Table is a longest-prefix-match IPv4 route table shared by every worker.
// Readers (Lookup, and IPLookup's Push through snapshot) never lock: the
// current version is an immutable fib behind an atomic pointer. Writers build
// a new version from a Builder and swap it in (read-copy-update); a reader
// that loaded the old version keeps a consistent view until it is done, and
// the garbage collector frees the old version after the last reader.
type Table struct {
	cur atomic.Pointer[fib]
	wmu sync.Mutex // serialises writers only
}

// NewTable returns a table holding routes (see Builder.Insert for the rules).
func NewTable(routes []Route) (*Table, error) {
	b := NewBuilder()
	for _, r := range routes {
		if err := b.Insert(r); err != nil {
			return nil, err
		}
	}
	t := &Table{}
	t.cur.Store(b.build())
	return t, nil
}

// Lookup returns the route with the longest prefix containing dst (an IPv4
// address as a big-endian uint32).
func (t *Table) Lookup(dst uint32) (Route, bool) {
	f := t.cur.Load()
	i := f.lookup(dst)
	if i == 0 {
		return Route{}, false
	}
	return f.routes[i], true
}

// Routes returns the current routes sorted by prefix (not for the hot path).
func (t *Table) Routes() []Route {
	f := t.cur.Load()
	out := slices.Clone(f.routes[1:])
	sortRoutes(out)
	return out
}

// Len is the number of routes in the current version.
func (t *Table) Len() int { return len(t.cur.Load().routes) - 1 }

// Builder returns a builder holding a copy of the current routes, to modify
// and Publish. Concurrent writers should use Update, which serialises them.
func (t *Table) Builder() *Builder {
	b := NewBuilder()
	for _, r := range t.cur.Load().routes[1:] {
		b.routes[r.Prefix] = r
	}
	return b
}

// Publish builds b into a new version and makes it current. Lookups in
// progress finish on the version they started with.
func (t *Table) Publish(b *Builder) {
	t.cur.Store(b.build())
}

// Update applies fn to a builder holding the current routes and publishes
// the result if fn succeeds; writers are serialised, so that two updates
// never lose each other's changes. Readers are never blocked.
func (t *Table) Update(fn func(b *Builder) error) error {
	t.wmu.Lock()
	defer t.wmu.Unlock()
	b := t.Builder()
	if err := fn(b); err != nil {
		return err
	}
	t.Publish(b)
	return nil
}

// Replace swaps in a whole new set of routes.
func (t *Table) Replace(routes []Route) error {
	return t.Update(func(b *Builder) error {
		b.Reset()
		for _, r := range routes {
			if err := b.Insert(r); err != nil {
				return err
			}
		}
		return nil
	})
}

// Builder collects routes for a new table version. It is not safe for
// concurrent use; it allocates freely (load time, not the hot path).
type Builder struct {
	routes map[netip.Prefix]Route
}

// NewBuilder returns an empty builder.
func NewBuilder() *Builder { return &Builder{routes: map[netip.Prefix]Route{}} }

// MaxPort bounds a route's output port (and IPLookup's miss port).
const MaxPort = 255

// Insert adds r, replacing any route for the same prefix. The prefix must be
// IPv4 without host bits set; the next hop, if any, an IPv4 unicast address;
// Out within 0..MaxPort.
func (b *Builder) Insert(r Route) error {
	if err := checkRoute(r); err != nil {
		return err
	}
	b.routes[r.Prefix] = r
	return nil
}

// Delete removes the route for prefix p and reports whether there was one.
func (b *Builder) Delete(p netip.Prefix) bool {
	_, ok := b.routes[p]
	delete(b.routes, p)
	return ok
}

// Reset removes every route.
func (b *Builder) Reset() { clear(b.routes) }

// Len is the number of routes in the builder.
func (b *Builder) Len() int { return len(b.routes) }

func checkRoute(r Route) error {
	p := r.Prefix
	if !p.IsValid() || !p.Addr().Is4() {
		return fmt.Errorf("prefix %v is not an IPv4 prefix", p)
	}
	if p.Masked() != p {
		return fmt.Errorf("prefix %v has host bits set (did you mean %v?)", p, p.Masked())
	}
	if r.NextHop.IsValid() {
		if !r.NextHop.Is4() {
			return fmt.Errorf("next hop %v is not an IPv4 address", r.NextHop)
		}
		if !unicast4(r.NextHop) {
			return fmt.Errorf("next hop %v is not a unicast address", r.NextHop)
		}
	}
	if r.Out < 0 || r.Out > MaxPort {
		return fmt.Errorf("out %d is out of range 0..%d", r.Out, MaxPort)
	}
	return nil
}

// unicast4 reports whether a is usable as a host address: not in
// 0.0.0.0/8, 127.0.0.0/8, 224.0.0.0/4 or 240.0.0.0/4.
func unicast4(a netip.Addr) bool {
	b := a.As4()
	return !martian(uint32(b[0]) << 24)
}

func sortRoutes(rs []Route) {
	slices.SortFunc(rs, func(a, b Route) int {
		if c := a.Prefix.Addr().Compare(b.Prefix.Addr()); c != 0 {
			return c
		}
		return a.Prefix.Bits() - b.Prefix.Bits()
	})
}

// The lookup structure is a multibit trie with strides 16, 8 and 8 and
// controlled prefix expansion (Srinivasan & Varghese): every prefix is
// expanded to the stride boundaries below it, so that a lookup reads at most
// one entry per level — three dependent loads, then the route itself. A
// level-1 entry covers a /16, a level-2 entry a /24, a level-3 entry a /32.
//
// An entry is a uint32: with ptrBit set, the low bits index a 256-entry
// chunk of the next level; otherwise they are a route index, 0 meaning no
// route. Level 1 is a fixed array, so indexing it needs no bounds check.
//
// Cost: level 1 is 256 KiB; every /16 holding a longer prefix costs a 1 KiB
// level-2 chunk, every /24 holding a longer prefix a 1 KiB level-3 chunk.
// That suits small and medium tables (10k random prefixes: ~10 MiB); a
// full Internet table wants DIR-24-8 or Poptrie (a later issue). Rebuilding
// is O(routes + memory) per published version.
const ptrBit = 1 << 31

type fib struct {
	l1     *[1 << 16]uint32
	l2     []uint32 // chunks of 256
	l3     []uint32 // chunks of 256
	routes []Route  // routes[0] is unused: index 0 means "no route"
}

func (f *fib) lookup(dst uint32) uint32 {
	e := f.l1[dst>>16]
	if e&ptrBit != 0 {
		e = f.l2[(e&^ptrBit)<<8|(dst>>8)&0xff]
		if e&ptrBit != 0 {
			e = f.l3[(e&^ptrBit)<<8|dst&0xff]
		}
	}
	return e
}

// build expands the routes in ascending prefix length, so that a longer
// prefix always overwrites the shorter ones it refines, and a chunk created
// for a longer prefix starts out filled with the entry it replaces.
func (b *Builder) build() *fib {
	f := &fib{l1: new([1 << 16]uint32), routes: make([]Route, 1, len(b.routes)+1)}
	for _, r := range b.routes {
		f.routes = append(f.routes, r)
	}
	rs := f.routes[1:]
	slices.SortFunc(rs, func(x, y Route) int {
		if d := x.Prefix.Bits() - y.Prefix.Bits(); d != 0 {
			return d
		}
		return x.Prefix.Addr().Compare(y.Prefix.Addr())
	})
	for i := range rs {
		idx := uint32(i + 1)
		a4 := rs[i].Prefix.Addr().As4()
		addr := uint32(a4[0])<<24 | uint32(a4[1])<<16 | uint32(a4[2])<<8 | uint32(a4[3])
		bits := rs[i].Prefix.Bits()
		switch {
		case bits <= 16:
			lo := addr >> 16
			fill(f.l1[lo:lo+1<<(16-bits)], idx)
		case bits <= 24:
			c := f.chunk2(addr)
			lo := c<<8 | (addr>>8)&0xff
			fill(f.l2[lo:lo+1<<(24-bits)], idx)
		default:
			c := f.chunk3(addr)
			lo := c<<8 | addr&0xff
			fill(f.l3[lo:lo+1<<(32-bits)], idx)
		}
	}
	return f
}

func fill(s []uint32, v uint32) {
	for i := range s {
		s[i] = v
	}
}

// chunk2 returns the level-2 chunk under addr's /16, making it if needed.
func (f *fib) chunk2(addr uint32) uint32 {
	e := &f.l1[addr>>16]
	if *e&ptrBit != 0 {
		return *e &^ ptrBit
	}
	c := uint32(len(f.l2) >> 8)
	for range 256 {
		f.l2 = append(f.l2, *e)
	}
	*e = ptrBit | c
	return c
}

// chunk3 returns the level-3 chunk under addr's /24, making it if needed.
func (f *fib) chunk3(addr uint32) uint32 {
	c2 := f.chunk2(addr)
	i := c2<<8 | (addr>>8)&0xff
	if e := f.l2[i]; e&ptrBit != 0 {
		return e &^ ptrBit
	}
	c := uint32(len(f.l3) >> 8)
	for range 256 {
		f.l3 = append(f.l3, f.l2[i])
	}
	f.l2[i] = ptrBit | c
	return c
}
