package conntrack

import "runtime"

// unlinkNewest is unlink for a node that was most likely the last one
// linked into its own bucket: a new flow's reply tuple, which Conntrack
// linked a moment earlier in the same batch and NAT replaces (ClaimReply).
// Slots are filled in order, so such a node is its home bucket's last used
// slot: clearing that slot is all unlink would do, without comparing
// fingerprints (and a node in its home bucket passed no other bucket: no
// overflow count to fix). Any other node is left to unlink.
func (t *Table) unlinkNewest(idx uint32, dir uint8) {
	b := &t.buckets[t.conns[idx].hs[dir]&t.mask]
	if n := int(b.n); n != 0 && b.node[n-1] == idx<<1|uint32(dir) {
		b.setSlot(n-1, 0, 0)
		b.n = uint8(n - 1)
		return
	}
	t.unlink(idx, dir)
}

// WarmClaim prefetches the bucket that ClaimReply of a key with hash h
// reads and then writes. NAT calls it a few new flows ahead of the one it
// claims for, so that the misses overlap with the claims before them
// instead of a batch's worth of prefetches queueing at once (the core
// holds only about ten misses in flight; a prefetch beyond that waits).
// The bucket of the flow's present reply, which the claim's unlink
// writes, is not prefetched: Conntrack linked that reply a moment before,
// in the same batch.
func (t *Table) WarmClaim(h uint32) {
	if len(t.buckets) == 0 {
		return
	}
	pf := append(t.pf[:0], t.bucketAddr(h))
	prefetchAll(pf)
	runtime.KeepAlive(t)
}

// Prefetch asks the CPU to bring in the cache line at each address (no
// wait, no fault): SNAT warms its mapping table's lines for a batch's new
// flows with it, as the batch passes here warm the flow table's.
func Prefetch(addrs []uintptr) {
	if len(addrs) > 0 {
		prefetchAll(addrs)
	}
}
