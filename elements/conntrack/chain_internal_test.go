package conntrack

import (
	"math/rand/v2"
	"testing"
)

// checkChains verifies the hash index: each node is in the chain of its
// tuple's bucket, no chain loops, and the chains hold exactly the live
// entries' two directions.
func checkChains(t *testing.T, tb *Table) {
	t.Helper()
	nodes := 0
	for b, n := range tb.buckets {
		for n != 0 {
			c := &tb.conns[n>>1]
			if c.Flags&flagLive == 0 {
				t.Fatalf("bucket %d: node %d of a free entry", b, n)
			}
			if h := tb.hash(&c.T[n&1]); h != uint32(b) {
				t.Fatalf("bucket %d: node %d hashes to %d", b, n, h)
			}
			n = c.next[n&1]
			if nodes++; nodes > 2*tb.Capacity() {
				t.Fatalf("a chain loops")
			}
		}
	}
	if nodes != 2*tb.Len() {
		t.Fatalf("%d nodes in the chains for %d live flows", nodes, tb.Len())
	}
}

// TestChainLinks: random creations (with eviction), deletions and reply
// changes keep the chains consistent; the table is small and the tuples
// few, so chains are long and every position is unlinked.
func TestChainLinks(t *testing.T) {
	tb := NewTable(64, DefaultTimeouts(), func() int64 { return 1 })
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
			if !tb.InUse(&r) {
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
