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
// the hole), so an insert writes slot n without searching, and a lookup in
// an empty bucket (most of them at a tenth of the capacity) compares
// nothing; otherwise it compares the fingerprints four at a time in a
// 64-bit word, without a branch per slot (at a full table four slots are
// in use, and a loop over them mispredicts).
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
// their fingerprints, the others are zero (a node's fingerprint is never
// 0). The fingerprints of slots 0–7 are the 16-bit lanes of two words
// (slot i in bits 16(i%4) of fpw[i/4]), so that matches compares four a
// word with plain loads; slot 8's is fp8.
type ibucket struct {
	fpw  [2]uint64
	fp8  uint16
	node [slotsPerBucket]uint32
	ovf  uint32 // nodes whose probe passed this bucket full
	n    uint8  // slots in use
	// gen changes whenever a node is linked into this bucket or passes
	// it (link), so that a lookup that missed can be known to miss
	// still, without looking again, while gen has not changed: every
	// node with a given tuple is linked into its hash's bucket or
	// passes it (missHint).
	gen uint8
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
// slot: 15 bits of it mixed so that the bits the bucket number also uses
// do not make it the same for every node of a bucket in a large table,
// and the low bit set (0 is an empty slot's). The nodes of one bucket
// differ only in the hash bits above the bucket's, 13 of them at 1M flows
// (a lookup miss reads another flow's entry about once in a thousand),
// 9 at 16M (≈ 1 in 60); a false match costs a read, never a wrong answer.
func fingerprint(h uint32) uint16 { return uint16((h*0x9e3779b1)>>16) | 1 }

// setSlot writes node n with fingerprint fp into slot i.
func (b *ibucket) setSlot(i int, n uint32, fp uint16) {
	b.node[i] = n
	if i >= 8 {
		b.fp8 = fp
		return
	}
	w, sh := &b.fpw[i>>2&1], uint(i&3)*16
	*w = *w&^(0xffff<<sh) | uint64(fp)<<sh
}

// slotFP is slot i's fingerprint.
func (b *ibucket) slotFP(i int) uint16 {
	if i >= 8 {
		return b.fp8
	}
	return uint16(b.fpw[i>>2&1] >> (uint(i&3) * 16))
}

const (
	lanes16 = 0x0001000100010001
	low15   = 0x7fff7fff7fff7fff
	// gather moves bit 16i of a word to bit 48+i (i < 4): the products
	// of its four terms with the four lanes fall on distinct bits, so
	// nothing carries into 48-51.
	gather = 1<<48 | 1<<33 | 1<<18 | 1<<3
)

// matches returns a bit per used slot of b whose fingerprint is fp (not
// 0). It compares all nine slots, four a word and the ninth alone,
// without a branch: an unused slot's fingerprint is 0 and never matches.
// Small enough to be inlined into the lookups, unlink and warm (a call
// per bucket searched cost more than the comparisons).
func (b *ibucket) matches(fp uint16) uint32 {
	pat := uint64(fp) * lanes16
	x0 := b.fpw[0] ^ pat
	x1 := b.fpw[1] ^ pat
	// A lane's high bit is set in ^((x&low15 + low15) | x) exactly
	// when the lane is zero (the additions stay within their lanes).
	// Both words at once: bit 16i (slot i) or 16i+4 (slot 4+i) of z is
	// set exactly when the slot's lane is zero; gather moves them to
	// bits 48–55 (the products of its terms with those bits fall on
	// distinct bits). Slot 8: bit 31 of
	// uint32(fp8^fp)-1 is set exactly when fp8 == fp.
	z := (^((x0&low15+low15)|x0)&^low15)>>15 | (^((x1&low15+low15)|x1)&^low15)>>11
	return uint32(z*gather>>48) | (uint32(b.fp8^fp)-1)>>31<<8
}

// lookupIn finds the entry holding tuple k in either direction; h is
// hash(k).
func (t *Table) lookupIn(k *Tuple, h uint32) (idx uint32, dir uint8, ok bool) {
	fp := fingerprint(h)
	bi := h & t.mask
	for range len(t.buckets) {
		b := &t.buckets[bi]
		if b.n != 0 {
			for m := b.matches(fp); m != 0; m &= m - 1 {
				n := b.node[bits.TrailingZeros32(m)]
				if c := &t.conns[n>>1]; c.T[n&1] == *k {
					return n >> 1, uint8(n & 1), true
				}
			}
		}
		if b.ovf == 0 {
			break
		}
		bi = (bi + 1) & t.mask
	}
	return 0, 0, false
}

// link adds direction dir of entry idx to the index; h is the hash of
// its tuple, kept in the entry for unlink.
func (t *Table) link(idx uint32, dir uint8, h uint32) {
	t.conns[idx].hs[dir] = h
	bi := h & t.mask
	for range len(t.buckets) {
		b := &t.buckets[bi]
		b.gen++
		if i := int(b.n); i < slotsPerBucket {
			b.setSlot(i, idx<<1|uint32(dir), fingerprint(h))
			b.n++
			return
		}
		b.ovf++
		bi = (bi + 1) & t.mask
	}
	panic("conntrack: index full") // cannot happen: 4.5 slots a flow
}

// unlink removes direction dir of entry idx from the index (its tuple
// and hash still hold the values it was linked with).
func (t *Table) unlink(idx uint32, dir uint8) {
	node := idx<<1 | uint32(dir)
	h := t.conns[idx].hs[dir]
	fp := fingerprint(h)
	start := h & t.mask
	bi := start
	for range len(t.buckets) {
		b := &t.buckets[bi]
		for m := b.matches(fp); m != 0; m &= m - 1 {
			i := bits.TrailingZeros32(m)
			if b.node[i] != node {
				continue
			}
			last := int(b.n) - 1
			b.setSlot(i, b.node[last], b.slotFP(last))
			b.setSlot(last, 0, 0)
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

// A found value (warmNew's answer for a key: node id + 1, or 0) of
// missHint or more is a miss: missHint | the gen of the key's bucket when
// it missed. Node ids + 1 stay below it (at most 1<<31 + 2: MaxCapacity
// entries, two directions each).
const missHint = ^uint32(0xff)

// stillMissing reports whether a key with hash h that missed when its
// bucket's gen was gen (hint, a missHint value) is still absent: nothing
// was linked into or past that bucket since. A node with the key's tuple
// has the key's hash, so it would have been linked into that bucket or
// past it. gen is a byte: Conntrack asks within one chunk of a batch,
// which links at most two nodes a packet (fewer than 256 in all).
func (t *Table) stillMissing(h, hint uint32) bool {
	return t.buckets[h&t.mask].gen == uint8(hint)
}

// bucketAddr is the address of the bucket of hash h (for prefetching).
func (t *Table) bucketAddr(h uint32) uintptr {
	return uintptr(unsafe.Pointer(&t.buckets[0])) + uintptr(h&t.mask)*unsafe.Sizeof(ibucket{})
}
