package conntrack

import "testing"

// TestClaimNewReply: a new flow's reply node is the last used slot of its
// home bucket (what unlinkNewest relies on), ClaimReply of a free tuple
// takes exactly that slot out of it and links the new tuple (WarmClaim,
// a prefetch, changes nothing).
func TestClaimNewReply(t *testing.T) {
	tb := NewTable(1024, DefaultTimeouts(), func() int64 { return 1 })
	for i := range 500 {
		k := Tuple{Src: 0x0a000001 + uint32(i%7), Dst: 0xc6336401, Sport: uint16(2000 + i), Dport: 53, Proto: 17}
		idx, ok := tb.Create(&k, 1)
		if !ok {
			t.Fatalf("flow %d not created", i)
		}
		c := &tb.conns[idx]
		b := &tb.buckets[c.hs[1]&tb.mask]
		// A reply whose home bucket was full overflowed into a later
		// bucket (the seed is random: a few runs in a hundred have
		// one); unlinkNewest leaves such a node to unlink.
		home := b.n != 0 && b.node[b.n-1] == idx<<1|1
		if !home && b.n != slotsPerBucket {
			t.Fatalf("flow %d: its reply is not its bucket's last slot", i)
		}
		n := b.n
		r := c.T[1]
		r.Dst, r.Dport = 0xcb007101, uint16(1024+i)
		tb.WarmClaim(tb.hash(&r))
		if !tb.ClaimReply(idx, &r, tb.hash(&r)) {
			t.Fatalf("flow %d: free tuple %+v refused", i, r)
		}
		if nb := &tb.buckets[c.hs[1]&tb.mask]; home && b != nb {
			want := n - 1
			for _, x := range b.node[:b.n] {
				if x == idx<<1|1 {
					want++ // the new reply overflowed into it
				}
			}
			if b.n != want {
				t.Fatalf("flow %d: old reply's bucket has %d slots, want %d", i, b.n, want)
			}
		}
		if got, dir, ok := tb.Lookup(&r); !ok || got != idx || dir != 1 {
			t.Fatalf("flow %d: new reply found as %d/%d/%v", i, got, dir, ok)
		}
		old := k.Inverse()
		if _, _, ok := tb.Lookup(&old); ok {
			t.Fatalf("flow %d: old reply still found", i)
		}
		if i%50 == 0 {
			checkChains(t, tb)
		}
	}
	checkChains(t, tb)
}
