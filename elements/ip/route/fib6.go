package route

import (
	"math/bits"
	"net/netip"
	"slices"
)

// The IPv6 writer: copy-on-write nodes of the multibit trie (fib.go),
// inserting and removing prefixes, finding the rule for an address.

// mut6 returns a writable copy of n (n itself if already writable).
func (w *writerState) mut6(n *node6) *node6 {
	if n.gen == w.gen {
		return n
	}
	c := *n
	c.kids = slices.Clone(n.kids)
	c.gen = w.gen
	return &c
}

// child6 returns n's writable child at slot b, creating it if create is
// set (n must be writable). It returns nil if there is none.
func (w *writerState) child6(n *node6, b byte, create bool) *node6 {
	word, m := b>>6, uint64(1)<<(b&63)
	idx := int(n.rank[word]) + bits.OnesCount64(n.bits[word]&(m-1))
	if n.bits[word]&m != 0 {
		k := w.mut6(n.kids[idx])
		n.kids[idx] = k
		return k
	}
	if !create {
		return nil
	}
	k := &node6{gen: w.gen}
	w.nodes6++
	n.kids = slices.Insert(n.kids, idx, k)
	n.bits[word] |= m
	for i := word + 1; i < 4; i++ {
		n.rank[i]++
	}
	return k
}

func (w *writerState) removeChild6(n *node6, b byte) {
	word, m := b>>6, uint64(1)<<(b&63)
	idx := int(n.rank[word]) + bits.OnesCount64(n.bits[word]&(m-1))
	n.kids = slices.Delete(n.kids, idx, idx+1)
	n.bits[word] &^= m
	for i := word + 1; i < 4; i++ {
		n.rank[i]--
	}
	w.nodes6--
}

// span6 gives the node depth of a prefix of length bits > 0 and the slots
// it covers there.
func span6(a *[16]byte, bits int) (lvl int, lo, n int) {
	lvl = (bits - 1) / 8
	n = 1 << (8*(lvl+1) - bits)
	lo = int(a[lvl]) &^ (n - 1)
	return
}

func (w *writerState) insert6(p netip.Prefix, v uint16) uint16 {
	old, had := w.rules6[p]
	w.rules6[p] = v
	bits := p.Bits()
	if !had {
		w.n6++
		w.len6[bits]++
	}
	if bits == 0 {
		w.def6 = v
		return old
	}
	a := p.Addr().As16()
	lvl, lo, cnt := span6(&a, bits)
	w.root6 = w.mut6(w.root6)
	n := w.root6
	for i := range lvl {
		n = w.child6(n, a[i], true)
	}
	d := uint8(bits)
	for s := lo; s < lo+cnt; s++ {
		if n.depth[s] <= d {
			n.depth[s] = d
			n.val[s] = v
		}
	}
	return old
}

func (w *writerState) delete6(p netip.Prefix) uint16 {
	v, ok := w.rules6[p]
	if !ok {
		return 0
	}
	delete(w.rules6, p)
	w.n6--
	bits := p.Bits()
	w.len6[bits]--
	if bits == 0 {
		w.def6 = 0
		return v
	}
	a := p.Addr().As16()
	lvl, lo, cnt := span6(&a, bits)
	var rv uint16
	var rd uint8
	for l := bits - 1; l > 8*lvl; l-- {
		if w.len6[l] == 0 {
			continue
		}
		if x, ok := w.rules6[netip.PrefixFrom(p.Addr(), l).Masked()]; ok {
			rv, rd = x, uint8(l)
			break
		}
	}
	var path [16]*node6
	w.root6 = w.mut6(w.root6)
	n := w.root6
	for i := range lvl {
		path[i] = n
		n = w.child6(n, a[i], false)
	}
	d := uint8(bits)
	for s := lo; s < lo+cnt; s++ {
		if n.depth[s] == d {
			n.depth[s] = rd
			n.val[s] = rv
		}
	}
	// Prune nodes left with neither values nor children.
	for i := lvl; i > 0; i-- {
		if len(n.kids) > 0 || n.depth != [256]uint8{} {
			break
		}
		w.removeChild6(path[i-1], a[i-1])
		n = path[i-1]
	}
	return v
}

func (w *writerState) lookupRule6(dst netip.Addr) (netip.Prefix, uint16, bool) {
	for l := 128; l >= 0; l-- {
		p := netip.PrefixFrom(dst, l).Masked()
		if v, ok := w.rules6[p]; ok {
			return p, v, true
		}
	}
	return netip.Prefix{}, 0, false
}
