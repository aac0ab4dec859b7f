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
	m     map[prefixKey]uint32 // prefix -> index in dests
	dests []offloadRoute
	index map[offloadRoute]uint32
}

// prefixKey is a prefix as a pointer-free map key.
type prefixKey struct {
	a    [16]byte
	bits uint8
	v4   bool
}

func keyOf(p netip.Prefix) prefixKey {
	a := p.Addr()
	return prefixKey{a: a.As16(), bits: uint8(p.Bits()), v4: a.Is4()}
}

func (k prefixKey) prefix() netip.Prefix {
	if k.v4 {
		return netip.PrefixFrom(netip.AddrFrom4([4]byte(k.a[12:])), int(k.bits))
	}
	return netip.PrefixFrom(netip.AddrFrom16(k.a), int(k.bits))
}

func newInstalled() *installed {
	return &installed{m: map[prefixKey]uint32{}, index: map[offloadRoute]uint32{}}
}

func (in *installed) len() int { return len(in.m) }

// get returns p's route, if the fast path holds one.
func (in *installed) get(p netip.Prefix) (offloadRoute, bool) {
	i, ok := in.m[keyOf(p)]
	if !ok {
		return offloadRoute{}, false
	}
	return in.dests[i], true
}

// set records that the fast path holds w for p.
func (in *installed) set(p netip.Prefix, w offloadRoute) {
	i, ok := in.index[w]
	if !ok {
		i = uint32(len(in.dests))
		in.dests = append(in.dests, w)
		in.index[w] = i
	}
	in.m[keyOf(p)] = i
}

// del records that the fast path no longer holds p.
func (in *installed) del(p netip.Prefix) { delete(in.m, keyOf(p)) }

// each calls f with every prefix held.
func (in *installed) each(f func(p netip.Prefix)) {
	for k := range in.m {
		f(k.prefix())
	}
}
