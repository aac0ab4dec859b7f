package route

import (
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/junction-dataplane/junction/packet"
)

// Hop is one path of a route: out of port Out towards Via. A zero Via marks
// a directly connected network: the next hop is the packet's destination.
type Hop struct {
	Via netip.Addr
	Out int
}

// Route is one IPv4 or IPv6 route: packets whose destination falls in Prefix
// leave on output port Out towards NextHop. A zero NextHop marks a directly
// connected network: the next hop is the packet's own destination. Also
// lists further equal-cost paths (ECMP): a packet takes one of the paths
// (NextHop, Out) and Also by its flow hash, so that a flow keeps one path.
//
// A route of another Type than Unicast has no paths (NextHop, Out and Also
// are zero): it stops the packets it matches, as the kernel's route types
// of the same names do.
type Route struct {
	Prefix  netip.Prefix
	NextHop netip.Addr
	Out     int
	Also    []Hop
	Type    Type
}

// Type is a route's kind, as the kernel's route types (ip route add
// blackhole|unreachable|prohibit PREFIX).
type Type uint8

const (
	Unicast     Type = iota // forwarded by its paths
	Blackhole               // dropped silently
	Unreachable             // dropped; the sender may be told host unreachable
	Prohibit                // dropped; the sender may be told administratively prohibited
	numTypes
)

var typeNames = [numTypes]string{"unicast", "blackhole", "unreachable", "prohibit"}

func (t Type) String() string {
	if t < numTypes {
		return typeNames[t]
	}
	return fmt.Sprintf("type %d", uint8(t))
}

// ParseType reads a route type's name ("blackhole", ...).
func ParseType(s string) (Type, bool) {
	for i, n := range typeNames {
		if s == n {
			return Type(i), true
		}
	}
	return 0, false
}

// TypeOfOut is the type a next-hop set's first path encodes: the table
// keeps a typed route as one path whose Out is -Type (the data path's
// check that a port exists catches it, so unicast lookups pay nothing
// for the types), Unicast for a real port.
func TypeOfOut(out int) Type {
	if out < 0 {
		return Type(-out)
	}
	return Unicast
}

// Hops returns every path of the route, the first one first (none for a
// route of another type than Unicast).
func (r Route) Hops() []Hop {
	if r.Type != Unicast {
		return nil
	}
	return append([]Hop{{Via: r.NextHop, Out: r.Out}}, r.Also...)
}

// first is the route's first path as the table stores it (a typed
// route's: Out = -Type).
func (r Route) first() Hop {
	if r.Type != Unicast {
		return Hop{Out: -int(r.Type)}
	}
	return Hop{Via: r.NextHop, Out: r.Out}
}

// paths is every path as the table stores it.
func (r Route) paths() []Hop {
	if r.Type != Unicast {
		return []Hop{r.first()}
	}
	return r.Hops()
}

// Equal reports whether two routes have the same prefix, type and paths.
func (r Route) Equal(o Route) bool {
	return r.Prefix == o.Prefix && r.Type == o.Type && r.NextHop == o.NextHop && r.Out == o.Out && slices.Equal(r.Also, o.Also)
}

// String formats the route in the syntax ParseRoute reads.
func (r Route) String() string {
	var b strings.Builder
	b.WriteString(r.Prefix.String())
	if r.Type != Unicast {
		b.WriteString(" ")
		b.WriteString(r.Type.String())
		return b.String()
	}
	for _, h := range r.Hops() {
		if h.Via.IsValid() {
			b.WriteString(" via ")
			b.WriteString(h.Via.String())
		}
	}
	for _, h := range r.Hops() {
		fmt.Fprintf(&b, " out %d", h.Out)
	}
	return b.String()
}

func routeFrom(p netip.Prefix, set nhSet) Route {
	if t := TypeOfOut(set.hops[0].Out); t != Unicast {
		return Route{Prefix: p, Type: t}
	}
	r := Route{Prefix: p, NextHop: set.hops[0].Via, Out: set.hops[0].Out}
	if len(set.hops) > 1 {
		r.Also = slices.Clone(set.hops[1:])
	}
	return r
}

// Limits bound what a table may hold; a change that would exceed them is
// refused whole, before anything is replaced.
type Limits struct {
	MaxRoutes int // IPv4 + IPv6 routes; 0 = DefaultMaxRoutes
}

// DefaultMaxRoutes is the default route limit: four full Internet tables.
const DefaultMaxRoutes = 4_000_000

// Table is a longest-prefix-match route table for IPv4 and IPv6, shared by
// every worker. Readers (IPLookup's Push) never lock: the current version is
// an immutable fib behind an atomic pointer, loaded once per batch. Writers
// are serialised by a mutex and build the next version by copy-on-write
// (see fib.go), then publish it with one atomic store; a reader that loaded
// the old version keeps a consistent view until it is done, and the garbage
// collector frees what only old versions used.
//
// Insert, Delete and Apply cost O(what changes), not O(table): this is the
// path for live updates (the kernel source, a routing daemon). Replace,
// Publish and Update rebuild or diff the whole table.
type Table struct {
	cur atomic.Pointer[fib]
	// onChange runs after each publish (OnChange).
	onChange atomic.Pointer[func()]
	wmu      sync.Mutex // serialises writers only
	w        *writerState
	limits   Limits
	layout   pageLayout // where builds put their pages
	ver      uint64     // the last version published (under wmu, or before the table is shared)

	// journal records which prefixes each version since jBase changed
	// (Apply's changes), so that a mirror of the table (the fast-path
	// offload) can follow it without walking it; a rebuild (Replace,
	// Publish, Update) or an overflow moves jBase past what is lost.
	journal   []journalRec
	jBase     uint64
	journalOn bool // only while a mirror follows the table (StartJournal)
}

// journalRec is one prefix changed by version ver, and whether the change
// deleted it or, if not, the next-hop set it gave the prefix. The set is
// still the prefix's, and still allocated, as long as no later record
// names the prefix, so the journal's last record of a prefix gives its
// route without a look-up in the rules (a cache miss a change in a
// million-rule table).
type journalRec struct {
	ver uint64
	p   netip.Prefix
	del bool
	v   uint16
}

// maxJournal bounds the journal; past it, the older half is dropped and a
// mirror that has not caught up walks the table instead.
const maxJournal = 1 << 16

// NewTable returns a table holding routes (see Builder.Insert for the rules).
func NewTable(routes []Route) (*Table, error) {
	return NewTableLimits(routes, Limits{})
}

// NewTableLimits is NewTable with limits.
func NewTableLimits(routes []Route, lim Limits) (*Table, error) {
	return newTable(routes, lim, false)
}

func newTable(routes []Route, lim Limits, checked bool) (*Table, error) {
	return newTableLayout(routes, lim, checked, pageLayout{})
}

// pageLayout chooses where a table's IPv4 pages live; the zero value is
// the production choice (slab.go). Tests and benchmarks compare the others.
type pageLayout struct {
	heapOnly bool // every page a separate object on the ordinary heap, no slabs
	noAdvice bool // slabs without huge-page advice (where the kernel refuses it)
}

func newTableLayout(routes []Route, lim Limits, checked bool, layout pageLayout) (*Table, error) {
	t := &Table{limits: lim, layout: layout}
	w, err := t.buildChecked(routes, checked)
	if err != nil {
		return nil, err
	}
	t.w = w
	t.swap(w.publish())
	t.jBase = t.ver
	return t, nil
}

func (t *Table) maxRoutes() int {
	if t.limits.MaxRoutes > 0 {
		return t.limits.MaxRoutes
	}
	return DefaultMaxRoutes
}

// build makes a fresh writer state holding routes, checking every limit
// first; nothing is shared with the live table.
func (t *Table) build(routes []Route) (*writerState, error) {
	return t.buildChecked(routes, false)
}

// buildChecked is build; checked says precheck already passed on routes
// (IPLookupConfig.Validate runs it, so loading a file does not pay twice).
func (t *Table) buildChecked(routes []Route, checked bool) (*writerState, error) {
	if len(routes) > t.maxRoutes() {
		return nil, fmt.Errorf("%w: %d routes exceed the limit of %d", errTableFull, len(routes), t.maxRoutes())
	}
	if !checked {
		if err := precheck(routes); err != nil {
			return nil, err
		}
	}
	w := newWriterState()
	w.layout = t.layout
	if n := estimatePages4(routes); n >= slabMinPages && !t.layout.heapOnly {
		// A large build: its pages go to one slab on huge pages.
		w.slab = newPageSlab(n, !t.layout.noAdvice)
	}
	var perLen [33]int
	for i := range routes {
		if routes[i].Prefix.Addr().Is4() {
			perLen[routes[i].Prefix.Bits()]++
		}
	}
	for l, n := range perLen {
		if n > 0 {
			w.rules4[l] = make(map[uint32]uint16, n)
		}
	}
	// Shorter prefixes first (a counting sort by length, through indices):
	// an entry is then rewritten only by prefixes that refine it, and a
	// group starts from its final base.
	var start [130]int
	for i := range routes {
		start[routes[i].Prefix.Bits()+1]++
	}
	for l := 1; l < len(start); l++ {
		start[l] += start[l-1]
	}
	order := make([]int32, len(routes))
	for i := range routes {
		l := routes[i].Prefix.Bits()
		order[start[l]] = int32(i)
		start[l]++
	}
	for _, i := range order {
		if _, err := w.apply(Change{Route: routes[i]}); err != nil {
			return nil, err
		}
	}
	return w, nil
}

// precheck counts what routes would need (groups, next-hop sets, distinct
// prefixes) without building anything, so that an oversized table is
// refused before memory is committed to it.
func precheck(routes []Route) error {
	groups := map[uint32]struct{}{}
	sets := map[string]struct{}{}
	sets1 := map[Hop]struct{}{}
	for i := range routes {
		r := &routes[i]
		if err := checkRoute(*r); err != nil {
			return fmt.Errorf("route %v: %w", r.Prefix, err)
		}
		if r.Prefix.Addr().Is4() && r.Prefix.Bits() > 24 {
			groups[u32of(r.Prefix.Addr())>>8] = struct{}{}
		}
		if len(sets)+len(sets1) <= MaxNextHopSets {
			if len(r.Also) == 0 {
				sets1[r.first()] = struct{}{}
			} else {
				sets[nhKey(r.Hops())] = struct{}{}
			}
		}
	}
	if len(groups) > maxGroups {
		return fmt.Errorf("%w: %d /24s hold a longer prefix, the structure has room for %d", errTableFull, len(groups), maxGroups)
	}
	if len(sets)+len(sets1) > MaxNextHopSets {
		return fmt.Errorf("%w: more than %d distinct next-hop sets", errTableFull, MaxNextHopSets)
	}
	return nil
}

// Change is one route update: Route inserted (or replaced), or, with
// Delete set, the route for Route.Prefix removed.
type Change struct {
	Route  Route
	Delete bool
}

// apply makes change c and returns the next-hop set the prefix now has (0
// for a deletion).
func (w *writerState) apply(c Change) (uint16, error) {
	p := c.Route.Prefix
	if c.Delete {
		var v uint16
		if p.Addr().Is4() {
			a := u32of(p.Addr())
			if a&^mask4(p.Bits()) != 0 {
				return 0, nil
			}
			v = w.delete4(a, p.Bits())
		} else {
			v = w.delete6(p)
		}
		if v != 0 {
			w.nhUnref(v)
		}
		return 0, nil
	}
	var v uint16
	var err error
	if len(c.Route.Also) == 0 {
		one := [1]Hop{c.Route.first()}
		v, err = w.nhRef(one[:])
	} else {
		v, err = w.nhRef(c.Route.Hops())
	}
	if err != nil {
		return 0, err
	}
	var old uint16
	if p.Addr().Is4() {
		old, err = w.insert4(u32of(p.Addr()), p.Bits(), v)
		if err != nil {
			w.nhUnref(v)
			return 0, err
		}
	} else {
		old = w.insert6(p, v)
	}
	if old != 0 {
		w.nhUnref(old)
	}
	return v, nil
}

// Apply makes every change and publishes one new version holding all of
// them. Changes are checked first; if any is invalid, or the table would
// exceed its limits, none is applied. Deleting a route that does not exist
// is not an error. Readers are never blocked.
func (t *Table) Apply(changes []Change) error {
	for _, c := range changes {
		if c.Delete {
			if p := c.Route.Prefix; !p.IsValid() || p.Addr().Is4In6() {
				return fmt.Errorf("delete: bad prefix %v", p)
			}
			continue
		}
		if err := checkRoute(c.Route); err != nil {
			return fmt.Errorf("route %v: %w", c.Route.Prefix, err)
		}
	}
	t.wmu.Lock()
	defer t.wmu.Unlock()
	w := t.w
	// Capacity: new routes, new groups and new next-hop sets, counted
	// pessimistically (deletions are not credited). Whether a route is
	// new is looked up only when counting every set as new would pass
	// the limit: each look-up is a cache miss in a map of a million
	// rules, and a full table's load is a million of them.
	nset := 0
	for _, c := range changes {
		if !c.Delete {
			nset++
		}
	}
	exact := w.n4+w.n6+nset > t.maxRoutes()
	adds, groups, sets := 0, map[uint32]struct{}{}, map[string]struct{}{}
	for _, c := range changes {
		if c.Delete {
			continue
		}
		p := c.Route.Prefix
		if !exact {
			adds++
		} else if _, _, held := w.exact(p); !held {
			adds++
		}
		if p.Addr().Is4() {
			if a := u32of(p.Addr()); w.needsGroup(a, p.Bits()) {
				groups[a>>8] = struct{}{}
			}
		}
		if len(c.Route.Also) == 0 {
			// One path, the common case: known without building its
			// key (a full table's announce is a million of these).
			if _, ok := w.nhIndex1[c.Route.first()]; ok {
				continue
			}
		}
		k := nhKey(c.Route.paths())
		if _, ok := w.nhIndex[k]; !ok {
			sets[k] = struct{}{}
		}
	}
	if w.n4+w.n6+adds > t.maxRoutes() {
		return fmt.Errorf("%w: %d routes would exceed the limit of %d", errTableFull, w.n4+w.n6+adds, t.maxRoutes())
	}
	if len(w.groups)-len(w.gfree)+len(groups) > maxGroups {
		return fmt.Errorf("%w: more than %d /24s would hold a longer prefix", errTableFull, maxGroups)
	}
	if len(w.nhIndex)+len(sets) > MaxNextHopSets {
		return fmt.Errorf("%w: more than %d distinct next-hop sets", errTableFull, MaxNextHopSets)
	}
	j0 := len(t.journal)
	for _, c := range changes {
		v, err := w.apply(c)
		if err != nil {
			// Not reached after the checks above; publish what was done
			// so that the published state matches the writer's.
			t.swap(w.publish())
			t.recorded(j0)
			return err
		}
		if t.journalOn {
			t.journal = append(t.journal, journalRec{p: c.Route.Prefix, del: c.Delete, v: v})
		}
	}
	t.swap(w.publish())
	t.recorded(j0)
	return nil
}

// recorded dates the journal's records from j0 on, Apply's, with the
// version just published, and bounds the journal (under wmu).
func (t *Table) recorded(j0 int) {
	for i := j0; i < len(t.journal); i++ {
		t.journal[i].ver = t.ver
	}
	if len(t.journal) > maxJournal {
		drop := len(t.journal) / 2
		t.jBase = max(t.jBase, t.journal[drop-1].ver)
		t.journal = append(t.journal[:0], t.journal[drop:]...)
	}
}

// StartJournal makes the table journal its changes from now on, for a
// mirror that has just walked it.
func (t *Table) StartJournal() {
	t.wmu.Lock()
	defer t.wmu.Unlock()
	if !t.journalOn {
		t.journalOn = true
		t.jBase = t.ver
	}
}

// rebuilt forgets the journal after a version that replaced the whole
// table (under wmu): a mirror older than it must walk the table.
func (t *Table) rebuilt() {
	t.journal = t.journal[:0]
	t.jBase = t.ver
}

// ChangesSince fills changed (emptied first; the caller's, reused from
// call to call so that following the table allocates nothing) with every
// prefix changed after version since: its route now, or a Delete. It
// returns the current version; ok is false when the journal no longer
// covers since (the caller walks Routes instead). A prefix's latest record
// decides: a deletion needs no look-up of the route.
func (t *Table) ChangesSince(since uint64, changed map[netip.Prefix]Change) (ver uint64, ok bool) {
	if len(changed) > 0 {
		clear(changed)
	}
	t.wmu.Lock()
	defer t.wmu.Unlock()
	if since < t.jBase || since > t.ver {
		return t.ver, false
	}
	for i := len(t.journal) - 1; i >= 0 && t.journal[i].ver > since; i-- {
		rec := &t.journal[i]
		if _, seen := changed[rec.p]; seen {
			continue
		}
		c := Change{Route: Route{Prefix: rec.p}, Delete: true}
		if !rec.del {
			c = Change{Route: routeFrom(rec.p, t.w.nh[rec.v-1])}
		}
		changed[rec.p] = c
	}
	return t.ver, true
}

// Insert adds or replaces routes, publishing one new version.
func (t *Table) Insert(routes ...Route) error {
	cs := make([]Change, len(routes))
	for i, r := range routes {
		cs[i] = Change{Route: r}
	}
	return t.Apply(cs)
}

// Delete removes the routes for prefixes, publishing one new version, and
// returns how many existed.
func (t *Table) Delete(prefixes ...netip.Prefix) (int, error) {
	t.wmu.Lock()
	n := 0
	for _, p := range prefixes {
		if _, _, ok := t.w.exact(p); ok {
			n++
		}
	}
	t.wmu.Unlock()
	cs := make([]Change, len(prefixes))
	for i, p := range prefixes {
		cs[i] = Change{Route: Route{Prefix: p}, Delete: true}
	}
	return n, t.Apply(cs)
}

func (w *writerState) exact(p netip.Prefix) (uint16, netip.Prefix, bool) {
	if !p.IsValid() {
		return 0, p, false
	}
	if p.Addr().Is4() {
		v, ok := w.rules4[p.Bits()][u32of(p.Addr())]
		return v, p, ok && p.Masked() == p
	}
	v, ok := w.rules6[p]
	return v, p, ok
}

// Lookup returns the route with the longest prefix containing dst (an IPv4
// address as a big-endian uint32), as the current version has it. It is
// for introspection (it takes the writers' lock to read the prefix, which
// the forwarding structure does not keep); packets use the lock-free path.
func (t *Table) Lookup(dst uint32) (Route, bool) {
	return t.Route(packet.AddrFromU32(dst))
}

// Route returns the route the current version uses for dst (IPv4 or IPv6),
// for introspection.
func (t *Table) Route(dst netip.Addr) (Route, bool) {
	t.wmu.Lock()
	defer t.wmu.Unlock()
	var p netip.Prefix
	var v uint16
	var ok bool
	if dst.Is4() || dst.Is4In6() {
		a := dst.Unmap().As4()
		p, v, ok = t.w.lookupRule4(u32from(a))
	} else {
		p, v, ok = t.w.lookupRule6(dst.WithZone(""))
	}
	if !ok {
		return Route{}, false
	}
	return routeFrom(p, t.w.nh[v-1]), true
}

// Forward is the lock-free lookup the data path makes: the path a packet to
// dst with flow hash hash takes in the current version.
func (t *Table) Forward(dst netip.Addr, hash uint32) (Hop, bool) {
	f := t.cur.Load()
	var v uint16
	if dst.Is4() {
		b := dst.As4()
		v = f.lookup4(u32from(b))
	} else {
		b := dst.As16()
		v = f.lookup6(&b)
	}
	if v == 0 {
		return Hop{}, false
	}
	s := &f.nh[v-1]
	return s.hops[pick(len(s.hops), hash)], true
}

// pick maps a flow hash onto n paths (multiply-shift: no division).
func pick(n int, hash uint32) int {
	return int((uint64(hash) * uint64(n)) >> 32)
}

// Version is the number of the current version; it grows with every
// publish, rebuilds (Replace, Publish, Update) included, so that a mirror
// can tell whether it is behind.
func (t *Table) Version() uint64 { return t.cur.Load().ver }

// Routes returns the current routes sorted by prefix (not for the hot path).
func (t *Table) Routes() []Route {
	t.wmu.Lock()
	defer t.wmu.Unlock()
	w := t.w
	out := make([]Route, 0, w.n4+w.n6)
	for l, m := range w.rules4 {
		for a, v := range m {
			out = append(out, routeFrom(netip.PrefixFrom(packet.AddrFromU32(a), l), w.nh[v-1]))
		}
	}
	for p, v := range w.rules6 {
		out = append(out, routeFrom(p, w.nh[v-1]))
	}
	sortRoutes(out)
	return out
}

// Len is the number of routes in the current version.
func (t *Table) Len() int {
	t.wmu.Lock()
	defer t.wmu.Unlock()
	return t.w.n4 + t.w.n6
}

// Mem reports the current version's size.
func (t *Table) Mem() MemStats {
	t.wmu.Lock()
	defer t.wmu.Unlock()
	return t.w.memStats()
}

// Builder returns a builder holding a copy of the current routes, to modify
// and Publish. Concurrent writers should use Update, which serialises them.
// It copies the whole table: for frequent small changes use Apply.
func (t *Table) Builder() *Builder {
	b := NewBuilder()
	for _, r := range t.Routes() {
		b.routes[r.Prefix] = r
	}
	return b
}

// swap makes f the version readers see. Every new version also calls the
// OnChange hook: IPLookup bumps its graph's fast-path generation with it,
// since a flow FastTrack learned under the old routes may now leave by
// another port or next hop, so its entry must be relearned.
func (t *Table) swap(f *fib) {
	t.ver++
	f.ver = t.ver
	t.cur.Store(f)
	if h := t.onChange.Load(); h != nil {
		(*h)()
	}
}

// OnChange makes f run after every new version is published (from the
// writer's goroutine: f must be safe for concurrent use); nil removes it.
func (t *Table) OnChange(f func()) {
	if f == nil {
		t.onChange.Store(nil)
		return
	}
	t.onChange.Store(&f)
}

// Publish makes b's routes the table's, as one new version. The change is
// applied as a difference against the current routes, so lookups of
// unchanged prefixes are never disturbed. It panics if b breaks a limit;
// use Update or Replace to get an error instead.
func (t *Table) Publish(b *Builder) {
	t.wmu.Lock()
	defer t.wmu.Unlock()
	if err := t.publishLocked(b); err != nil {
		panic(err)
	}
}

func (t *Table) publishLocked(b *Builder) error {
	rs := make([]Route, 0, len(b.routes))
	for _, r := range b.routes {
		rs = append(rs, r)
	}
	// Build it aside first: the limits are checked, and nothing live is
	// touched, until it is known to fit.
	w, err := t.build(rs)
	if err != nil {
		return err
	}
	t.w = w
	t.swap(w.publish())
	t.rebuilt()
	return nil
}

// Update applies fn to a builder holding the current routes and publishes
// the result if fn succeeds; writers are serialised, so that two updates
// never lose each other's changes. Readers are never blocked.
func (t *Table) Update(fn func(b *Builder) error) error {
	t.wmu.Lock()
	defer t.wmu.Unlock()
	b := NewBuilder()
	w := t.w
	for l, m := range w.rules4 {
		for a, v := range m {
			p := netip.PrefixFrom(packet.AddrFromU32(a), l)
			b.routes[p] = routeFrom(p, w.nh[v-1])
		}
	}
	for p, v := range w.rules6 {
		b.routes[p] = routeFrom(p, w.nh[v-1])
	}
	if err := fn(b); err != nil {
		return err
	}
	return t.publishLocked(b)
}

// Replace swaps in a whole new set of routes. The new table is built aside
// and checked against the limits first: on any error the table is left as
// it was.
func (t *Table) Replace(routes []Route) error {
	w, err := t.build(routes)
	if err != nil {
		return err
	}
	t.wmu.Lock()
	t.w = w
	t.swap(w.publish())
	t.rebuilt()
	t.wmu.Unlock()
	return nil
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

// MaxPaths bounds the equal-cost paths of one route.
const MaxPaths = 64

// Insert adds r, replacing any route for the same prefix. The prefix must be
// IPv4 or IPv6 without host bits set; next hops, if any, unicast addresses
// of the prefix's family; Out within 0..MaxPort.
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
	if !p.IsValid() || p.Addr().Is4In6() || p.Addr().Zone() != "" {
		return fmt.Errorf("prefix %v is not an IPv4 or IPv6 prefix", p)
	}
	if p.Masked() != p {
		return fmt.Errorf("prefix %v has host bits set (did you mean %v?)", p, p.Masked())
	}
	if r.Type != Unicast {
		if r.Type >= numTypes {
			return fmt.Errorf("unknown route type %d", r.Type)
		}
		if r.NextHop.IsValid() || r.Out != 0 || len(r.Also) > 0 {
			return fmt.Errorf("a %v route has no paths (no via, no out)", r.Type)
		}
		return nil
	}
	if len(r.Also) >= MaxPaths {
		return fmt.Errorf("%d paths: at most %d", len(r.Also)+1, MaxPaths)
	}
	via := 0
	for i := -1; i < len(r.Also); i++ {
		h := Hop{Via: r.NextHop, Out: r.Out}
		if i >= 0 {
			h = r.Also[i]
		}
		if h.Via.IsValid() {
			via++
			if err := checkVia(h.Via, p.Addr().Is4()); err != nil {
				return err
			}
		}
		if h.Out < 0 || h.Out > MaxPort {
			return fmt.Errorf("out %d is out of range 0..%d", h.Out, MaxPort)
		}
	}
	if via != 0 && via != len(r.Also)+1 {
		return errors.New("either every path has a via address or none has")
	}
	return nil
}

func checkVia(a netip.Addr, v4 bool) error {
	switch {
	case v4 && !a.Is4():
		return fmt.Errorf("next hop %v is not an IPv4 address", a)
	case !v4 && (!a.Is6() || a.Is4In6()):
		return fmt.Errorf("next hop %v is not an IPv6 address", a)
	case a.Zone() != "":
		return fmt.Errorf("next hop %v: zones are not supported (the out port names the link)", a)
	case v4 && !unicast4(a):
		return fmt.Errorf("next hop %v is not a unicast address", a)
	case !v4 && (a.IsMulticast() || a.IsUnspecified() || a.IsLoopback()):
		return fmt.Errorf("next hop %v is not a unicast address", a)
	}
	return nil
}

// unicast4 reports whether a is usable as a host address: not in
// 0.0.0.0/8, 127.0.0.0/8, 224.0.0.0/4 or 240.0.0.0/4.
func unicast4(a netip.Addr) bool {
	b := a.As4()
	return !Martian(uint32(b[0]) << 24)
}

func sortRoutes(rs []Route) {
	slices.SortFunc(rs, func(a, b Route) int {
		if c := a.Prefix.Addr().Compare(b.Prefix.Addr()); c != 0 {
			return c
		}
		return a.Prefix.Bits() - b.Prefix.Bits()
	})
}

func u32from(b [4]byte) uint32 {
	return uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
}

func u32of(a netip.Addr) uint32 { return u32from(a.As4()) }
