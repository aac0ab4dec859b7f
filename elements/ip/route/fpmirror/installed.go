package fpmirror

import "net/netip"

// installed is what the mirror has put into the fast path: each prefix's
// route. A full table is over a million prefixes, so it is kept compact
// and free of pointers: a map keyed by netip.Prefix (whose Addr holds a
// pointer) to a route holding a Device interface took about 70 bytes an
// entry and a scan by every garbage collection; here an entry is a
// pointer-free key and the index of its route among the few distinct ones
// (next hops and ports).
type installed struct {
	m4    map[uint64]uint32    // IPv4 prefix (key4) -> index in dests
	m6    map[prefixKey]uint32 // IPv6 prefix -> index in dests
	dests []offloadRoute
	index map[offloadRoute]uint32
	// last is the route set last and its index: a table's changes mostly
	// share a next hop, and index's key hashes an interface.
	last  offloadRoute
	lastI uint32
}

// key4 is an IPv4 prefix as one word, the map's fast path for 8-byte
// keys (a full table's IPv4 prefixes are a million look-ups a load).
func key4(p netip.Prefix) uint64 {
	a := p.Addr().As4()
	return uint64(a[0])<<40 | uint64(a[1])<<32 | uint64(a[2])<<24 | uint64(a[3])<<16 | uint64(p.Bits())
}

func prefix4(k uint64) netip.Prefix {
	return netip.PrefixFrom(netip.AddrFrom4([4]byte{byte(k >> 40), byte(k >> 32), byte(k >> 24), byte(k >> 16)}), int(k&0xff))
}

// prefixKey is an IPv6 prefix as a pointer-free map key.
type prefixKey struct {
	a    [16]byte
	bits uint8
}

func key6(p netip.Prefix) prefixKey {
	return prefixKey{a: p.Addr().As16(), bits: uint8(p.Bits())}
}

func newInstalled() *installed {
	return &installed{m4: map[uint64]uint32{}, m6: map[prefixKey]uint32{}, index: map[offloadRoute]uint32{}}
}

func (in *installed) len() int { return len(in.m4) + len(in.m6) }

// get returns p's route, if the fast path holds one.
func (in *installed) get(p netip.Prefix) (offloadRoute, bool) {
	var i uint32
	var ok bool
	if p.Addr().Is4() {
		i, ok = in.m4[key4(p)]
	} else {
		i, ok = in.m6[key6(p)]
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
		in.m4[key4(p)] = i
	} else {
		in.m6[key6(p)] = i
	}
}

// del records that the fast path no longer holds p.
func (in *installed) del(p netip.Prefix) {
	if p.Addr().Is4() {
		delete(in.m4, key4(p))
	} else {
		delete(in.m6, key6(p))
	}
}

// each calls f with every prefix held.
func (in *installed) each(f func(p netip.Prefix)) {
	for k := range in.m4 {
		f(prefix4(k))
	}
	for k := range in.m6 {
		f(netip.PrefixFrom(netip.AddrFrom16(k.a), int(k.bits)))
	}
}
