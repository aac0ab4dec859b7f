package conntrack

import (
	"math/bits"
	"unsafe"
)

// The IPv4 table's hash index is bucketized: a bucket is one 64-byte cache
// line holding up to slotsPerBucket nodes (a node is a direction of an
// entry: index<<1 | dir), each with a 16-bit fingerprint of its tuple's
// hash. A lookup reads the key's bucket and only the entries whose
// fingerprint matches (for a flow that exists, its own; for a new flow,
// almost never another one); a delete finds its node by id in the bucket
// without reading any other flow's entry; an insert writes one slot of a
// bucket the lookup before it already read. With chains through the
// entries each of those walked past other flows' entries, one cold line
// each.
//
// A bucket's used slots are its first n (a delete moves the last one into
// the hole), so an insert writes slot n and a lookup compares n
// fingerprints: at a tenth of the capacity that is usually none, at a full
// table four.
//
// A full bucket overflows into the next one (linear probing by buckets);
// each bucket counts the nodes that passed it on the way to a later bucket
// (ovf), so a lookup goes on to the next bucket only while that count is
// not zero, and a delete decrements the counts its node passed. The index
// has a bucket per two flows (nine slots for four nodes), so that at a
// full table a bucket holds four nodes on average and overflows rarely (a
// Poisson tail: ≈ 1% of the buckets), 32 bytes a flow.

const slotsPerBucket = 9

// ibucket is one cache line of the index: slots 0 to n-1 hold nodes and
// their fingerprints.
type ibucket struct {
	fp   [slotsPerBucket]uint16
	node [slotsPerBucket]uint32
	ovf  uint32 // nodes whose probe passed this bucket full
	n    uint8  // slots in use
}

var _ [64 - unsafe.Sizeof(ibucket{})]struct{} // one cache line
var _ [unsafe.Sizeof(ibucket{}) - 64]struct{}

// indexBuckets is the number of buckets for capacity flows: a power of two
// ≥ capacity/2 (at least one).
func indexBuckets(capacity int) int {
	half := (capacity + 1) / 2
	if half <= 1 {
		return 1
	}
	return 1 << bits.Len(uint(half-1))
}

// fingerprint is the part of a tuple's hash (hash's result) stored in its
// slot: 16 bits of it mixed so that the bits the bucket number also uses
// do not make it the same for every node of a bucket in a large table.
func fingerprint(h uint32) uint16 { return uint16((h * 0x9e3779b1) >> 16) }

// lookupIn finds the entry holding tuple k in either direction; h is
// hash(k).
func (t *Table) lookupIn(k *Tuple, h uint32) (idx uint32, dir uint8, ok bool) {
	fp := fingerprint(h)
	bi := h & t.mask
	for range len(t.buckets) {
		b := &t.buckets[bi]
		for i := range min(int(b.n), slotsPerBucket) {
			if b.fp[i] != fp {
				continue
			}
			n := b.node[i]
			if c := &t.conns[n>>1]; c.T[n&1] == *k {
				return n >> 1, uint8(n & 1), true
			}
		}
		if b.ovf == 0 {
			break
		}
		bi = (bi + 1) & t.mask
	}
	return 0, 0, false
}

// link adds direction dir of entry idx to the index.
func (t *Table) link(idx uint32, dir uint8) {
	c := &t.conns[idx]
	h := t.hash(&c.T[dir])
	bi := h & t.mask
	for range len(t.buckets) {
		b := &t.buckets[bi]
		if i := int(b.n); i < slotsPerBucket {
			b.node[i], b.fp[i] = idx<<1|uint32(dir), fingerprint(h)
			b.n++
			return
		}
		b.ovf++
		bi = (bi + 1) & t.mask
	}
	panic("conntrack: index full") // cannot happen: 4.5 slots a flow
}

// unlink removes direction dir of entry idx from the index (its tuple
// still holds the value it was linked with).
func (t *Table) unlink(idx uint32, dir uint8) {
	node := idx<<1 | uint32(dir)
	start := t.hash(&t.conns[idx].T[dir]) & t.mask
	bi := start
	for range len(t.buckets) {
		b := &t.buckets[bi]
		for i := range min(int(b.n), slotsPerBucket) {
			if b.node[i] != node {
				continue
			}
			last := int(b.n) - 1
			b.node[i], b.fp[i] = b.node[last], b.fp[last]
			b.node[last], b.fp[last] = 0, 0
			b.n--
			// The buckets it passed on its way here no longer
			// have it beyond them.
			for p := start; p != bi; p = (p + 1) & t.mask {
				t.buckets[p].ovf--
			}
			return
		}
		if b.ovf == 0 {
			return // not linked
		}
		bi = (bi + 1) & t.mask
	}
}

// bucketAddr is the address of the bucket of hash h (for prefetching).
func (t *Table) bucketAddr(h uint32) uintptr {
	return uintptr(unsafe.Pointer(&t.buckets[0])) + uintptr(h&t.mask)*unsafe.Sizeof(ibucket{})
}
