package kernelmirror

import (
	"cmp"
	"encoding/binary"
	"net/netip"
	"slices"
	"time"

	"github.com/junction-dataplane/junction/elements/ip/route"
)

// The mirror's state for a prefix is one map entry holding the kernel's
// best route to it, with no heap object of its own and no pointer in the
// entry, so that a full table costs the map and nothing per route for the
// garbage collector to walk: a route's paths are a reference into the set
// of distinct path lists (a full table from a few peers has a handful),
// counted by the routes holding them. The few prefixes the kernel holds
// several routes for (other metrics or TOS) keep their whole list beside
// it (Sync.multi).

// prefixMap maps prefixes to their best kernel route, with pointer-free
// keys: an IPv4 prefix is one word (address and length), an IPv6 one two
// words and a length. A netip.Prefix key holds a pointer (the address's
// zone handle), which the collector scans in every entry, and its 32
// bytes take the generic hash and compare on every event.
//
// A map that has shrunk (Sync.shrink) keeps its old maps beside the new
// ones while their entries move over a step at a time (drain); a prefix
// is in one or the other, never both.
type prefixMap struct {
	v4 map[uint64]kernelRoute
	v6 map[route.Key6]kernelRoute
	// old4 and old6 are the maps being drained (nil: none).
	old4 map[uint64]kernelRoute
	old6 map[route.Key6]kernelRoute
}

func newPrefixMap(n4, n6 int) prefixMap {
	return prefixMap{v4: make(map[uint64]kernelRoute, n4), v6: make(map[route.Key6]kernelRoute, n6)}
}

func (m *prefixMap) get(p netip.Prefix) (kernelRoute, bool) {
	if p.Addr().Is4() {
		k := route.Key4(p)
		kr, ok := m.v4[k]
		if !ok && m.old4 != nil {
			kr, ok = m.old4[k]
		}
		return kr, ok
	}
	k := route.Key6Of(p)
	kr, ok := m.v6[k]
	if !ok && m.old6 != nil {
		kr, ok = m.old6[k]
	}
	return kr, ok
}

func (m *prefixMap) set(p netip.Prefix, kr kernelRoute) {
	if p.Addr().Is4() {
		k := route.Key4(p)
		m.v4[k] = kr
		if m.old4 != nil {
			delete(m.old4, k)
		}
		return
	}
	k := route.Key6Of(p)
	m.v6[k] = kr
	if m.old6 != nil {
		delete(m.old6, k)
	}
}

func (m *prefixMap) del(p netip.Prefix) {
	if p.Addr().Is4() {
		k := route.Key4(p)
		delete(m.v4, k)
		if m.old4 != nil {
			delete(m.old4, k)
		}
		return
	}
	k := route.Key6Of(p)
	delete(m.v6, k)
	if m.old6 != nil {
		delete(m.old6, k)
	}
}

func (m *prefixMap) len() int { return len(m.v4) + len(m.v6) + len(m.old4) + len(m.old6) }

// each calls f with every prefix and its route; f may delete the prefix
// or set its route.
func (m *prefixMap) each(f func(p netip.Prefix, kr kernelRoute)) {
	for _, v4 := range []map[uint64]kernelRoute{m.v4, m.old4} {
		for k, kr := range v4 {
			f(route.PrefixOfKey4(k), kr)
		}
	}
	for _, v6 := range []map[route.Key6]kernelRoute{m.v6, m.old6} {
		for k, kr := range v6 {
			f(k.Prefix(), kr)
		}
	}
}

// draining reports whether old maps are still being drained.
func (m *prefixMap) draining() bool { return m.old4 != nil || m.old6 != nil }

// startDrain makes the current maps the old ones and starts new ones,
// sized for what they hold (a Go map never gives back the memory of
// entries deleted from it).
func (m *prefixMap) startDrain() {
	m.old4, m.old6 = m.v4, m.v6
	m.v4, m.v6 = make(map[uint64]kernelRoute, len(m.old4)), make(map[route.Key6]kernelRoute, len(m.old6))
}

// drain moves up to n entries from the old maps to the new ones and
// reports whether any are left; the old maps go once empty.
func (m *prefixMap) drain(n int) (more bool) {
	n = moveEntries(m.old4, m.v4, n)
	if len(m.old4) == 0 {
		m.old4 = nil
	}
	moveEntries(m.old6, m.v6, n)
	if len(m.old6) == 0 {
		m.old6 = nil
	}
	return m.draining()
}

// moveEntries moves up to n entries from one map to the other and returns
// what is left of n.
func moveEntries[K comparable](from, to map[K]kernelRoute, n int) int {
	for k, kr := range from {
		if n == 0 {
			break
		}
		to[k] = kr
		delete(from, k)
		n--
	}
	return n
}

// touchedSet holds the prefixes changed since the last published version
// with their best route as each change left it (touched.has false: the
// prefix has no route left), so that publishing them reads no second time
// the million-entry map each change has just written. Its keys are
// prefixMap's, pointer-free: a netip.Prefix key took the generic hash on
// every event.
type touchedSet struct {
	v4 map[uint64]touched
	v6 map[route.Key6]touched
}

type touched struct {
	kr  kernelRoute
	has bool
}

func newTouchedSet() touchedSet {
	return touchedSet{v4: map[uint64]touched{}, v6: map[route.Key6]touched{}}
}

// set records p's best route now (has false: none).
func (s *touchedSet) set(p netip.Prefix, kr kernelRoute, has bool) {
	if p.Addr().Is4() {
		s.v4[route.Key4(p)] = touched{kr, has}
	} else {
		s.v6[route.Key6Of(p)] = touched{kr, has}
	}
}

func (s *touchedSet) len() int { return len(s.v4) + len(s.v6) }

func (s *touchedSet) clear() {
	clear(s.v4)
	clear(s.v6)
}

// each calls f with every prefix of the set and its recorded route.
func (s *touchedSet) each(f func(p netip.Prefix, kr kernelRoute, has bool)) {
	for k, t := range s.v4 {
		f(route.PrefixOfKey4(k), t.kr, t.has)
	}
	for k, t := range s.v6 {
		f(k.Prefix(), t.kr, t.has)
	}
}

// kernelRoute is one kernel route for a prefix; the kernel may hold
// several (different metrics or TOS) and forwards by the best one.
type kernelRoute struct {
	prio uint32 // the kernel's metric: the lowest wins
	tos  uint8
	typ  route.Type
	hops hopRef // a unicast route's paths
	seen uint32 // the dump (Sync.epoch) that last saw it
}

// hopRef names a path list in hopSets; 0 is none.
type hopRef uint32

// hopSets holds each distinct path list once, counted by reference.
type hopSets struct {
	sets  [][]route.Hop // by hopRef; sets[0] is unused
	refs  []uint32
	index map[string]hopRef
	free  []hopRef
	key   []byte
}

// keyOf encodes hops as the index's key (in a buffer reused by each call).
func (h *hopSets) keyOf(hops []route.Hop) []byte {
	b := h.key[:0]
	for _, x := range hops {
		a := x.Via.As16()
		b = append(b, a[:]...)
		b = append(b, byte(x.Via.BitLen()>>2))
		b = binary.LittleEndian.AppendUint32(b, uint32(x.Out))
	}
	h.key = b
	return b
}

// find returns the reference of a list equal to hops (0: none held).
func (h *hopSets) find(hops []route.Hop) hopRef {
	if len(hops) == 0 {
		return 0
	}
	return h.index[string(h.keyOf(hops))]
}

// acquire returns a reference to a list equal to hops, holding it once more.
func (h *hopSets) acquire(hops []route.Hop) hopRef {
	if r := h.find(hops); r != 0 {
		h.refs[r]++
		return r
	}
	if h.index == nil {
		h.index = map[string]hopRef{}
		h.sets, h.refs = make([][]route.Hop, 1), make([]uint32, 1)
	}
	var r hopRef
	if n := len(h.free); n > 0 {
		r, h.free = h.free[n-1], h.free[:n-1]
		h.sets[r], h.refs[r] = slices.Clone(hops), 1
	} else {
		r = hopRef(len(h.sets))
		h.sets, h.refs = append(h.sets, slices.Clone(hops)), append(h.refs, 1)
	}
	h.index[string(h.keyOf(hops))] = r
	return r
}

// release drops one hold on r; the last one frees the list.
func (h *hopSets) release(r hopRef) {
	if r == 0 {
		return
	}
	if h.refs[r]--; h.refs[r] == 0 {
		delete(h.index, string(h.keyOf(h.sets[r])))
		h.sets[r] = nil // a table version may still read the old slice: never reused
		h.free = append(h.free, r)
	}
}

// route is the Table's route for the kernel's route kr to p.
func (k *Sync) route(p netip.Prefix, kr kernelRoute) route.Route {
	if kr.typ != route.Unicast {
		return route.Route{Prefix: p, Type: kr.typ}
	}
	hops := k.hopSets.sets[kr.hops]
	return route.Route{Prefix: p, NextHop: hops[0].Via, Out: hops[0].Out, Also: hops[1:]}
}

// routeBuf holds a prefix's routes while an event is noted: the one the
// mirror has and the one the event adds, without a heap allocation.
type routeBuf [2]kernelRoute

// routesOf returns the kernel's routes to p, best first: in buf when it
// has one or none (so that one more appends without allocating).
func (k *Sync) routesOf(p netip.Prefix, buf *routeBuf) []kernelRoute {
	if list, ok := k.multi[p]; ok {
		return list
	}
	if kr, ok := k.routes.get(p); ok {
		buf[0] = kr
		return buf[:1]
	}
	return buf[:0]
}

// setRoutes makes list (best first) the kernel's routes to p.
func (k *Sync) setRoutes(p netip.Prefix, list []kernelRoute) {
	switch len(list) {
	case 0:
		k.routes.del(p)
		delete(k.multi, p)
	case 1:
		k.routes.set(p, list[0])
		delete(k.multi, p)
	default:
		// A copy: list may be the caller's routeBuf.
		k.routes.set(p, list[0])
		k.multi[p] = slices.Clone(list)
	}
}

// sortKernelRoutes orders a prefix's routes best first, as the kernel chooses.
func sortKernelRoutes(list []kernelRoute) {
	slices.SortStableFunc(list, func(a, b kernelRoute) int { return cmp.Compare(a.prio, b.prio) })
}

// sweep forgets the routes the last complete dump did not see and reports
// whether any of p's went.
func (k *Sync) sweep(p netip.Prefix) bool {
	var buf routeBuf
	list := k.routesOf(p, &buf)
	kept := slices.DeleteFunc(list, func(kr kernelRoute) bool {
		if kr.seen == k.epoch {
			return false
		}
		k.hopSets.release(kr.hops)
		return true
	})
	if len(kept) == len(list) {
		return false
	}
	k.setRoutes(p, kept)
	return true
}

// shrink gives a withdrawn table's memory back: once the mirror holds a
// quarter of what it held at most, its entries move to new maps, drainStep
// at a time (each call, while draining), and the old maps go when empty.
// Moved at once, the 300,000 entries left a quarter of the way down from a
// full table held a CPU for 80 ms, and a process waiting for that CPU (on
// a two-CPU machine, the other busy with the routing daemon) waited that
// long (benchmarks/routing.md, "A withdrawn table's map given back a step
// at a time"). It reports whether entries are still to move.
func (k *Sync) shrink() (more bool) {
	if k.routes.draining() {
		return k.routes.drain(drainStep)
	}
	n := k.routes.len()
	k.peak = max(k.peak, n)
	if k.peak < 1<<14 || n >= k.peak/4 {
		return false
	}
	k.routes.startDrain()
	k.peak = n
	return k.routes.drain(drainStep)
}

// drainStep is how many entries shrink moves a call: about a millisecond
// of CPU.
const drainStep = 4096

// drainEvery is how often the mirror moves a step of a shrinking map
// when no version is being published.
const drainEvery = 2 * time.Millisecond
