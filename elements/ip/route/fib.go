package route

import (
	"errors"
	"math/bits"
	"net/netip"
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
	// groupShift: a page holds 1<<groupShift groups of 256 entries.
	groupShift = pageBits - 8
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
		e = f.pages[tbl24Pages+(g>>groupShift)&(groupPages-1)][(g&(1<<groupShift-1))<<8|dst&0xff]
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
			out[i] = f.pages[tbl24Pages+(g>>groupShift)&(groupPages-1)][(g&(1<<groupShift-1))<<8|dst[i]&0xff]
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
	// len6 counts the IPv6 rules of each length, so that a deletion's
	// search for the rule it uncovers skips the lengths that have none
	// (a full table has two or three lengths of 129).
	len6   [129]int32
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
