package route

import (
	"errors"
	"fmt"
	"math/bits"
	"net/netip"
	"slices"

	"github.com/junction-dataplane/junction/packet"
)

// The forwarding structures. A published version (fib) is immutable: every
// worker loads it once per batch through an atomic pointer and reads it
// without locks. The single writer (writerState, guarded by Table.wmu)
// builds the next version by copy-on-write: it copies only the pages it
// touches, shares every other page with the versions before it, and then
// publishes the new version with one atomic store. A reader therefore sees
// either the whole old version or the whole new one, never a mix, and the
// garbage collector frees pages once no version refers to them.
//
// IPv4 is DIR-24-8 (Gupta, Lin & McKeown 1998; DPDK's rte_lpm): a table of
// 2^24 16-bit entries indexed by the top 24 bits of the destination, and
// 256-entry "groups" for the /24s that hold a longer prefix. An entry is
// either a next-hop value (0 = no route, v = next-hop set v-1) or, with
// grpBit set, a group number. A lookup is one load, or two for the rare
// destinations under a /25../32 — whatever the number of routes or of
// destinations seen. Entries are 16 bits so that the whole table is 32 MiB
// (plus 512 bytes per group, 16 MiB at the most), half of rte_lpm's.
//
// The 2^24 entries are cut into 4096 pages of 4096 entries (8 KiB, a /12
// each); groups live 16 to a page after them. A version is the array of
// page pointers (48 KiB, always in cache): the extra indirection is what
// makes copy-on-write cheap, and a page that holds nothing is the shared
// zero page, so that a small table costs kilobytes, not 32 MiB. A large
// table's pages are carved from one slab on 2 MiB huge pages (slab.go).
//
// The writer keeps, beside the pages, the prefix length that owns each
// entry (as rte_lpm does) so that an insert or delete rewrites exactly the
// entries of the prefix it changes: O(2^(24-len)) for len <= 24, O(256)
// below. A delete finds the covering prefix that takes its entries over.
//
// IPv6 is a multibit trie of stride 8 with controlled prefix expansion
// inside each node (a prefix of length L lives in the node at depth
// (L-1)/8, expanded over 2^(8*depth+8-L) slots); children are kept sparse
// behind a 256-bit bitmap and a popcount rank. A lookup walks at most 16
// nodes and keeps the last value seen. Updates copy the path they touch.

const (
	pageBits   = 12
	pageSize   = 1 << pageBits // entries per page
	tbl24Pages = 1 << (24 - pageBits)
	maxGroups  = 1 << 15
	groupPages = maxGroups * 256 / pageSize
	numPages   = tbl24Pages + groupPages
	grpBit     = 1 << 15
	// MaxNextHopSets bounds the distinct next-hop sets (a set is the list
	// of paths of a route; routes with equal paths share one).
	MaxNextHopSets = grpBit - 1
)

type page4 [pageSize]uint16

// zeroPage stands for every page that holds no route. It is never written:
// the writer copies a page before its first write in a version.
var zeroPage = new(page4)

// nhSet is one route's list of equal-cost paths.
type nhSet struct {
	hops []Hop
}

// fib is one published, immutable version of the table.
type fib struct {
	pages [numPages]*page4
	root6 *node6
	def6  uint16 // ::/0
	nh    []nhSet
	gen   uint64 // the writer's copy-on-write epoch (restarts when the table is rebuilt)
	ver   uint64 // Table.Version: strictly increasing over every publish, rebuilds included
}

// lookup4 returns the next-hop value for dst (0: no route).
func (f *fib) lookup4(dst uint32) uint16 {
	e := f.pages[dst>>(32-24+pageBits)][(dst>>8)&(pageSize-1)]
	if e&grpBit != 0 {
		g := uint32(e &^ grpBit)
		e = f.pages[tbl24Pages+(g>>4)&(groupPages-1)][(g&15)<<8|dst&0xff]
	}
	return e
}

// lookup4Batch looks up every dst. The first pass does only the
// independent first-level loads so that the CPU keeps many cache misses in
// flight at once (memory-level parallelism stands in for the prefetch
// instructions Go does not expose); the second resolves the few groups.
func (f *fib) lookup4Batch(dst []uint32, out []uint16) {
	out = out[:len(dst)]
	grp := false
	for i, d := range dst {
		e := f.pages[d>>(32-24+pageBits)][(d>>8)&(pageSize-1)]
		out[i] = e
		grp = grp || e&grpBit != 0
	}
	if !grp {
		return
	}
	for i, e := range out {
		if e&grpBit != 0 {
			g := uint32(e &^ grpBit)
			out[i] = f.pages[tbl24Pages+(g>>4)&(groupPages-1)][(g&15)<<8|dst[i]&0xff]
		}
	}
}

// node6 is one level of the IPv6 trie. val and kids are read by the data
// path; depth (the prefix length owning each slot) only by the writer. A
// node is mutable only while gen equals the writer's current generation,
// i.e. before the version holding it is published.
type node6 struct {
	val   [256]uint16
	bits  [4]uint64 // which slots have a child
	rank  [4]uint16 // children before each bitmap word
	kids  []*node6
	depth [256]uint8
	gen   uint64
}

func (n *node6) kid(b byte) *node6 {
	w := n.bits[b>>6]
	m := uint64(1) << (b & 63)
	if w&m == 0 {
		return nil
	}
	return n.kids[int(n.rank[b>>6])+bits.OnesCount64(w&(m-1))]
}

// lookup6 returns the next-hop value for dst (0: no route).
func (f *fib) lookup6(dst *[16]byte) uint16 {
	best := f.def6
	n := f.root6
	for i := 0; i < 16; i++ {
		b := dst[i]
		if v := n.val[b]; v != 0 {
			best = v
		}
		w := n.bits[b>>6]
		m := uint64(1) << (b & 63)
		if w&m == 0 {
			break
		}
		n = n.kids[int(n.rank[b>>6])+bits.OnesCount64(w&(m-1))]
	}
	return best
}

// groupCtl is the writer's bookkeeping for one IPv4 group.
type groupCtl struct {
	slot      uint32 // the /24 it refines
	base      uint16 // value of the longest prefix <= /24 covering it
	baseDepth uint8
	long      int32 // prefixes longer than /24 inside
	depth     [256]uint8
}

// errTableFull is returned when a change would need more groups or
// next-hop sets than the structure has; the change is not applied.
var errTableFull = errors.New("route table full")

// writerState is the control plane: the routes, the bookkeeping, and the
// next version under construction. Only one goroutine uses it at a time.
type writerState struct {
	pages  [numPages]*page4
	fresh  [numPages]bool // page copied in this version: writable
	depth  [tbl24Pages]*[pageSize]uint8
	udepth [tbl24Pages]uint8 // the depth of every slot of a page whose depth is nil
	uni    map[uint16]*page4 // shared pages filled with one value
	groups []groupCtl
	gfree  []uint16
	rules4 [33]map[uint32]uint16
	n4     int

	// slab is where new pages come from first (slab.go); heapNew counts
	// pages taken from the heap since the last repack check, and publish
	// looks again when it reaches repackAt.
	slab              *pageSlab
	heapNew, repackAt int

	root6  *node6
	def6   uint16
	rules6 map[netip.Prefix]uint16
	n6     int
	nodes6 int
	gen    uint64

	nh       []nhSet
	nhRefs   []int32
	layout   pageLayout // the table's (Table.layout)
	nhIndex  map[string]uint16
	nhIndex1 map[Hop]uint16 // single-path sets, also in nhIndex
	nhFree   []uint16
	nhPub    int  // entries of nh visible to published versions
	nhCopied bool // nh was cloned since the last publish
}

func newWriterState() *writerState {
	w := &writerState{rules6: map[netip.Prefix]uint16{}, nhIndex: map[string]uint16{}, nhIndex1: map[Hop]uint16{}, gen: 1,
		uni: map[uint16]*page4{0: zeroPage}, repackAt: slabMinPages}
	for i := range w.pages {
		w.pages[i] = zeroPage
	}
	for i := range w.rules4 {
		w.rules4[i] = map[uint32]uint16{}
	}
	w.root6 = &node6{gen: w.gen}
	w.nodes6 = 1
	return w
}

// publish freezes the version under construction and starts the next.
func (w *writerState) publish() *fib {
	w.maybeRepack()
	f := &fib{pages: w.pages, root6: w.root6, def6: w.def6, nh: w.nh[:len(w.nh):len(w.nh)], gen: w.gen}
	clear(w.fresh[:])
	w.gen++
	w.nhPub = len(w.nh)
	w.nhCopied = false
	return f
}

// ---- next-hop sets ----

func nhKey(hops []Hop) string {
	b := make([]byte, 0, len(hops)*19)
	for _, h := range hops {
		a := h.Via.As16()
		b = append(b, a[:]...)
		if h.Via.IsValid() {
			b = append(b, 1)
		} else {
			b = append(b, 0)
		}
		b = append(b, byte(h.Out>>8), byte(h.Out))
	}
	return string(b)
}

// nhRef returns the value (index+1) of the set hops, adding it if new, and
// counts one more route using it.
func (w *writerState) nhRef(hops []Hop) (uint16, error) {
	if len(hops) == 1 {
		// The common case, without building a key string.
		if v, ok := w.nhIndex1[hops[0]]; ok {
			w.nhRefs[v-1]++
			return v, nil
		}
	}
	k := nhKey(hops)
	if v, ok := w.nhIndex[k]; ok {
		w.nhRefs[v-1]++
		return v, nil
	}
	set := nhSet{hops: slices.Clone(hops)}
	var i int
	if n := len(w.nhFree); n > 0 {
		i = int(w.nhFree[n-1])
		w.nhFree = w.nhFree[:n-1]
		if i < w.nhPub && !w.nhCopied {
			// A published version may still read slot i: give the
			// next version its own copy of the array.
			w.nh = slices.Clone(w.nh)
			w.nhCopied = true
		}
		w.nh[i] = set
		w.nhRefs[i] = 1
	} else {
		if len(w.nh) >= MaxNextHopSets {
			return 0, fmt.Errorf("%w: more than %d distinct next-hop sets", errTableFull, MaxNextHopSets)
		}
		i = len(w.nh)
		w.nh = append(w.nh, set)
		w.nhRefs = append(w.nhRefs, 1)
	}
	w.nhIndex[k] = uint16(i + 1)
	if len(hops) == 1 {
		w.nhIndex1[hops[0]] = uint16(i + 1)
	}
	return uint16(i + 1), nil
}

func (w *writerState) nhUnref(v uint16) {
	i := int(v - 1)
	w.nhRefs[i]--
	if w.nhRefs[i] == 0 {
		delete(w.nhIndex, nhKey(w.nh[i].hops))
		if len(w.nh[i].hops) == 1 {
			delete(w.nhIndex1, w.nh[i].hops[0])
		}
		w.nhFree = append(w.nhFree, uint16(i))
	}
}

// ---- IPv4 ----

func (w *writerState) pageW(i uint32) *page4 {
	if !w.fresh[i] {
		p := w.newPage()
		if old := w.pages[i]; old != zeroPage {
			*p = *old
		}
		w.pages[i] = p
		w.fresh[i] = true
	}
	return w.pages[i]
}

func (w *writerState) slot(s uint32) uint16 { return w.pages[s>>pageBits][s&(pageSize-1)] }

func (w *writerState) setSlot(s uint32, v uint16) {
	w.pageW(s >> pageBits)[s&(pageSize-1)] = v
}

func (w *writerState) setGroup(g uint16, j uint32, v uint16) {
	w.pageW(tbl24Pages + uint32(g)>>4)[uint32(g&15)<<8|j] = v
}

// depthPage returns the depths of the page holding slot s, materialising
// a uniform page's.
func (w *writerState) depthPage(s uint32) *[pageSize]uint8 {
	d := w.depth[s>>pageBits]
	if d == nil {
		d = new([pageSize]uint8)
		if u := w.udepth[s>>pageBits]; u != 0 {
			for i := range d {
				d[i] = u
			}
		}
		w.depth[s>>pageBits] = d
	}
	return d
}

// uniform returns the shared page whose every entry is v. Such pages are
// never written (pageW copies them first).
func (w *writerState) uniform(v uint16) *page4 {
	p := w.uni[v]
	if p == nil {
		p = new(page4)
		for i := range p {
			p[i] = v
		}
		w.uni[v] = p
	}
	return p
}

// setRange24 gives the /24 slots [s0, s0+n) owned by depth at most d (insert:
// cond = le) or exactly d (delete: cond = eq) the value v and depth nd. A
// page entirely in the range whose slots all have one depth is swapped
// for a shared uniform page in O(1): a /8 costs 16 pointer writes, a
// default route one per page, not 16M entry writes.
func (w *writerState) setRange24(s0, n uint32, d uint8, exact bool, v uint16, nd uint8) {
	for s := s0; s < s0+n; {
		pg := s >> pageBits
		lo := s & (pageSize - 1)
		cnt := min(pageSize-lo, s0+n-s)
		if cnt == pageSize && w.depth[pg] == nil {
			u := w.udepth[pg]
			if (exact && u == d) || (!exact && u <= d) {
				w.udepth[pg] = nd
				w.pages[pg] = w.uniform(v)
				w.fresh[pg] = false
			}
			s += cnt
			continue
		}
		dp := w.depthPage(s)
		var data *page4
		for i := lo; i < lo+cnt; i++ {
			cur := dp[i]
			if exact && cur != d || !exact && cur > d {
				continue
			}
			dp[i] = nd
			if data == nil {
				data = w.pageW(pg)
			}
			e := data[i]
			if e&grpBit == 0 {
				data[i] = v
				continue
			}
			g := e &^ grpBit
			gc := &w.groups[g]
			gc.base, gc.baseDepth = v, nd
			for j := range uint32(256) {
				if c := gc.depth[j]; exact && c == d || !exact && c <= d {
					gc.depth[j] = nd
					w.setGroup(g, j, v)
				}
			}
		}
		s += cnt
	}
}

func mask4(bits int) uint32 {
	if bits == 0 {
		return 0
	}
	return ^uint32(0) << (32 - bits)
}

// needsGroup reports whether inserting addr/bits would take a new group.
func (w *writerState) needsGroup(addr uint32, bits int) bool {
	return bits > 24 && w.slot(addr>>8)&grpBit == 0
}

func (w *writerState) allocGroup() (uint16, error) {
	if n := len(w.gfree); n > 0 {
		g := w.gfree[n-1]
		w.gfree = w.gfree[:n-1]
		return g, nil
	}
	if len(w.groups) >= maxGroups {
		return 0, fmt.Errorf("%w: more than %d /24s hold a longer prefix", errTableFull, maxGroups)
	}
	w.groups = append(w.groups, groupCtl{})
	return uint16(len(w.groups) - 1), nil
}

// insert4 sets addr/bits (addr masked) to value v, replacing any value the
// prefix had. The caller has taken a reference on v.
func (w *writerState) insert4(addr uint32, bits int, v uint16) (old uint16, err error) {
	d := uint8(bits + 1)
	if bits <= 24 {
		w.setRange24(addr>>8, 1<<(24-bits), d, false, v, d)
	} else {
		s := addr >> 8
		e := w.slot(s)
		var g uint16
		if e&grpBit == 0 {
			if g, err = w.allocGroup(); err != nil {
				return 0, err
			}
			gc := &w.groups[g]
			bd := w.depthPage(s)[s&(pageSize-1)]
			*gc = groupCtl{slot: s, base: e, baseDepth: bd}
			for j := range uint32(256) {
				gc.depth[j] = bd
				w.setGroup(g, j, e)
			}
			w.setSlot(s, grpBit|g)
		} else {
			g = e &^ grpBit
		}
		gc := &w.groups[g]
		if _, ok := w.rules4[bits][addr]; !ok {
			gc.long++
		}
		lo := addr & 0xff
		for j := lo; j < lo+1<<(32-bits); j++ {
			if gc.depth[j] <= d {
				gc.depth[j] = d
				w.setGroup(g, j, v)
			}
		}
	}
	old, had := w.rules4[bits][addr]
	w.rules4[bits][addr] = v
	if !had {
		w.n4++
	}
	return old, nil
}

// delete4 removes addr/bits and returns its value (0: there was none).
func (w *writerState) delete4(addr uint32, bits int) uint16 {
	v, ok := w.rules4[bits][addr]
	if !ok {
		return 0
	}
	delete(w.rules4[bits], addr)
	w.n4--
	d := uint8(bits + 1)
	var rv uint16
	var rd uint8
	for l := bits - 1; l >= 0; l-- {
		if x, ok := w.rules4[l][addr&mask4(l)]; ok {
			rv, rd = x, uint8(l+1)
			break
		}
	}
	if bits <= 24 {
		w.setRange24(addr>>8, 1<<(24-bits), d, true, rv, rd)
		return v
	}
	s := addr >> 8
	g := w.slot(s) &^ grpBit
	gc := &w.groups[g]
	lo := addr & 0xff
	for j := lo; j < lo+1<<(32-bits); j++ {
		if gc.depth[j] == d {
			gc.depth[j] = rd
			w.setGroup(g, j, rv)
		}
	}
	gc.long--
	if gc.long == 0 {
		// Only the /24-or-shorter owner is left: fold the group back.
		w.setSlot(s, gc.base)
		w.gfree = append(w.gfree, g)
	}
	return v
}

// lookupRule4 returns the longest prefix holding dst (introspection).
func (w *writerState) lookupRule4(dst uint32) (netip.Prefix, uint16, bool) {
	for l := 32; l >= 0; l-- {
		a := dst & mask4(l)
		if v, ok := w.rules4[l][a]; ok {
			return netip.PrefixFrom(packet.AddrFromU32(a), l), v, true
		}
	}
	return netip.Prefix{}, 0, false
}

// ---- IPv6 ----

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
	if !had {
		w.n6++
	}
	bits := p.Bits()
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
	if bits == 0 {
		w.def6 = 0
		return v
	}
	a := p.Addr().As16()
	lvl, lo, cnt := span6(&a, bits)
	var rv uint16
	var rd uint8
	for l := bits - 1; l > 8*lvl; l-- {
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

// ---- memory ----

// MemStats describes a table version's size.
type MemStats struct {
	Routes4, Routes6 int
	NextHopSets      int
	Groups           int // IPv4 /24s holding a longer prefix
	Nodes6           int
	Bytes4           int // IPv4 forwarding structure (what lookups read)
	Bytes6           int // IPv6 forwarding structure
	ControlBytes     int // writer bookkeeping (depths, groups), estimated
}

func (w *writerState) memStats() MemStats {
	m := MemStats{Routes4: w.n4, Routes6: w.n6, NextHopSets: len(w.nhIndex),
		Groups: len(w.groups) - len(w.gfree), Nodes6: w.nodes6}
	distinct := map[*page4]struct{}{}
	for _, p := range w.pages {
		if p != zeroPage {
			distinct[p] = struct{}{}
		}
	}
	pages := len(distinct)
	m.Bytes4 = pages*pageSize*2 + numPages*8 + len(w.nh)*(24+32)
	m.Bytes6 = w.nodes6 * (256*2 + 32 + 8 + 24)
	for _, d := range w.depth {
		if d != nil {
			m.ControlBytes += pageSize
		}
	}
	m.ControlBytes += len(w.groups)*int(16+256) + w.nodes6*256
	// Go maps: about 2x the key and value sizes, plus per-entry overhead.
	m.ControlBytes += w.n4*16 + w.n6*64
	return m
}
