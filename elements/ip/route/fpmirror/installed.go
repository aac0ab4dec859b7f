package fpmirror

import (
	"net/netip"

	"github.com/junction-dataplane/junction/elements/ip/route"
)

// installed is what the mirror has put into the fast path: each prefix's
// route. A full table is over a million prefixes, so it is kept compact
// and free of pointers: a map keyed by netip.Prefix (whose Addr holds a
// pointer) to a route holding a Device interface took about 70 bytes an
// entry and a scan by every garbage collection; here an entry is a
// pointer-free key and the index of its route among the few distinct ones
// (next hops and ports).
type installed struct {
	m4    map[uint64]uint32     // IPv4 prefix (route.Key4) -> index in dests
	m6    map[route.Key6]uint32 // IPv6 prefix -> index in dests
	dests []offloadRoute
	index map[offloadRoute]uint32
	// last is the route set last and its index: a table's changes mostly
	// share a next hop, and index's key hashes an interface.
	last  offloadRoute
	lastI uint32
}

func newInstalled() *installed {
	return &installed{m4: map[uint64]uint32{}, m6: map[route.Key6]uint32{}, index: map[offloadRoute]uint32{}}
}

func (in *installed) len() int { return len(in.m4) + len(in.m6) }

// get returns p's route, if the fast path holds one.
func (in *installed) get(p netip.Prefix) (offloadRoute, bool) {
	var i uint32
	var ok bool
	if p.Addr().Is4() {
		i, ok = in.m4[route.Key4(p)]
	} else {
		i, ok = in.m6[route.Key6Of(p)]
	}
	if !ok {
		return offloadRoute{}, false
	}
	return in.dests[i], true
}

// set records that the fast path holds w for p.
func (in *installed) set(p netip.Prefix, w offloadRoute) {
	i := in.lastI
	if w != in.last || len(in.dests) == 0 {
		var ok bool
		if i, ok = in.index[w]; !ok {
			i = uint32(len(in.dests))
			in.dests = append(in.dests, w)
			in.index[w] = i
		}
		in.last, in.lastI = w, i
	}
	if p.Addr().Is4() {
		in.m4[route.Key4(p)] = i
	} else {
		in.m6[route.Key6Of(p)] = i
	}
}

// del records that the fast path no longer holds p.
func (in *installed) del(p netip.Prefix) {
	if p.Addr().Is4() {
		delete(in.m4, route.Key4(p))
	} else {
		delete(in.m6, route.Key6Of(p))
	}
}

// each calls f with every prefix held.
func (in *installed) each(f func(p netip.Prefix)) {
	for k := range in.m4 {
		f(route.PrefixOfKey4(k))
	}
	for k := range in.m6 {
		f(k.Prefix())
	}
}
