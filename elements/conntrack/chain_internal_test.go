package conntrack

import (
	"math/rand/v2"
	"testing"
)

// checkChains verifies the hash index: each node sits in its tuple's
// bucket or, that one full, in a later one with every bucket passed
// counting it in ovf; fingerprints match; no node is there twice; and the
// index holds exactly the live entries' two directions.
func checkChains(t *testing.T, tb *Table) {
	t.Helper()
	nodes := 0
	ovf := make([]uint32, len(tb.buckets))
	seen := map[uint32]bool{}
	for b := range tb.buckets {
		bk := &tb.buckets[b]
		for i, n := range bk.node {
			if n == 0 {
				if i < int(bk.n) || bk.slotFP(i) != 0 {
					t.Fatalf("bucket %d: slot %d (%d in use) is empty with fingerprint %#x", b, i, bk.n, bk.slotFP(i))
				}
				continue
			}
			c := &tb.conns[n>>1]
			if c.Flags&flagLive == 0 {
				t.Fatalf("bucket %d: node %d of a free entry", b, n)
			}
			if seen[n] {
				t.Fatalf("node %d twice in the index", n)
			}
			seen[n] = true
			h := tb.hash(&c.T[n&1])
			if c.hs[n&1] != h {
				t.Fatalf("node %d: hash %#x kept, %#x of its tuple", n, c.hs[n&1], h)
			}
			if bk.slotFP(i) != fingerprint(h) {
				t.Fatalf("bucket %d: node %d has fingerprint %#x, want %#x", b, n, bk.slotFP(i), fingerprint(h))
			}
			if i >= int(bk.n) {
				t.Fatalf("bucket %d: node %d in slot %d beyond the %d in use", b, n, i, bk.n)
			}
			for p := h & tb.mask; p != uint32(b); p = (p + 1) & tb.mask {
				ovf[p]++
			}
			nodes++
		}
	}
	for b := range tb.buckets {
		if tb.buckets[b].ovf != ovf[b] {
			t.Fatalf("bucket %d: ovf %d, %d nodes passed it", b, tb.buckets[b].ovf, ovf[b])
		}
	}
	if nodes != 2*tb.Len() {
		t.Fatalf("%d nodes in the index for %d live flows", nodes, tb.Len())
	}
}

// TestChainLinks: random creations (with eviction), deletions and reply
// changes (SetReply after InUse, or ClaimReply) keep the index consistent and every live flow findable by both
// tuples; the tuples are few, so lookups hit and miss alike.
func TestChainLinks(t *testing.T) {
	t.Run("buckets", func(t *testing.T) { testIndexLinks(t, NewTable(64, DefaultTimeouts(), func() int64 { return 1 })) })
	t.Run("overflowing", func(t *testing.T) {
		// 16 nodes in two buckets of nine slots: buckets overflow
		// all the time, and lookups and deletes cross them.
		tb := NewTable(8, DefaultTimeouts(), func() int64 { return 1 })
		tb.buckets, tb.mask = tb.buckets[:2], 1
		testIndexLinks(t, tb)
	})
}

func testIndexLinks(t *testing.T, tb *Table) {
	rng := rand.New(rand.NewPCG(3, 4))
	tuple := func() Tuple {
		return Tuple{Src: 1 + rng.Uint32N(4), Dst: 10, Sport: uint16(rng.IntN(64)), Dport: 53, Proto: 17}
	}
	for i := range 20000 {
		switch op := rng.IntN(10); {
		case op < 6:
			k := tuple()
			if _, _, ok := tb.Lookup(&k); !ok {
				tb.Create(&k, 1)
			}
		case op < 8 && tb.Len() > 0:
			if idx := 1 + rng.Uint32N(uint32(tb.Capacity())); tb.conns[idx].Flags&flagLive != 0 {
				tb.Delete(idx)
			}
		default:
			idx := 1 + rng.Uint32N(uint32(tb.Capacity()))
			if tb.conns[idx].Flags&flagLive == 0 {
				continue
			}
			r := tb.conns[idx].T[1]
			r.Dport = uint16(1000 + rng.IntN(64))
			used := tb.InUse(&r)
			if rng.IntN(2) == 0 {
				// ClaimReply: the check and the change at once.
				old := tb.conns[idx].T[1]
				if got := tb.ClaimReply(idx, &r, tb.hash(&r)); got == used {
					t.Fatalf("ClaimReply of %+v (in use: %v) returned %v", r, used, got)
				}
				if want := map[bool]Tuple{true: old, false: r}[used]; tb.conns[idx].T[1] != want {
					t.Fatalf("reply %+v after ClaimReply of %+v (in use: %v)", tb.conns[idx].T[1], r, used)
				}
			} else if !used {
				tb.SetReply(idx, &r)
			}
		}
		if i%7 == 0 {
			checkChains(t, tb)
		}
	}
	checkChains(t, tb)
	// Every live flow is found by both of its tuples.
	for idx := uint32(1); idx <= uint32(tb.Capacity()); idx++ {
		c := &tb.conns[idx]
		if c.Flags&flagLive == 0 {
			continue
		}
		for d := range uint8(2) {
			if got, dir, ok := tb.Lookup(&c.T[d]); !ok || got != idx || dir != d {
				t.Fatalf("flow %d direction %d: found %d/%d/%v", idx, d, got, dir, ok)
			}
		}
	}
}

// TestHashInverse: hashInverse is the hash of the inverse tuple.
func TestHashInverse(t *testing.T) {
	tb := NewTable(1024, DefaultTimeouts(), nil)
	rng := rand.New(rand.NewPCG(5, 6))
	for range 1000 {
		k := Tuple{Src: rng.Uint32(), Dst: rng.Uint32(), Sport: uint16(rng.Uint32()), Dport: uint16(rng.Uint32()), Proto: uint8(rng.Uint32())}
		inv := k.Inverse()
		if tb.hashInverse(&k) != tb.hash(&inv) {
			t.Fatalf("%+v: hashInverse %d, hash of the inverse %d", k, tb.hashInverse(&k), tb.hash(&inv))
		}
	}
}

// TestBucketMatches: the word-wise fingerprint compare finds exactly the
// used slots a slot-by-slot compare finds, for every count of used slots.
func TestBucketMatches(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for range 20000 {
		var b ibucket
		var fps [slotsPerBucket]uint16
		n := rng.IntN(slotsPerBucket + 1)
		b.n = uint8(n)
		for i := range n {
			// Few distinct values, so that lanes repeat and
			// neighbours differ by one bit or one borrow.
			fps[i] = []uint16{1, 3, 0x8001, 0x8003, 0xffff, 0x7fff, uint16(rng.Uint32()) | 1}[rng.IntN(7)]
			b.setSlot(i, uint32(i+2), fps[i])
		}
		fp := fps[rng.IntN(slotsPerBucket)] | 1
		if rng.IntN(4) == 0 {
			fp = uint16(rng.Uint32()) | 1
		}
		var want uint32
		for i, f := range fps[:n] {
			if f == fp {
				want |= 1 << i
			}
		}
		if got := b.matches(fp); got != want {
			t.Fatalf("fingerprints %#x, looking for %#x: %09b, want %09b", fps, fp, got, want)
		}
	}
}
