package conntrack

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

// WarmClaim is WarmClaims for one key whose hash h the caller has: it
// prefetches the bucket ClaimReply of that key reads and writes, and the
// bucket flow's present reply is linked in (flow 0: none). NAT calls it a
// few new flows ahead of the one it claims for, so that the misses
// overlap with the claims before them instead of queueing a batch's worth
// of prefetches at once (the core holds only about ten misses in flight;
// a prefetch beyond that waits).
func (t *Table) WarmClaim(h uint32, flow uint32) {
	if len(t.buckets) == 0 {
		return
	}
	pf := append(t.pf[:0], t.bucketAddr(h))
	if flow != 0 && int(flow) < len(t.conns) {
		pf = append(pf, t.bucketAddr(t.conns[flow].hs[1]))
	}
	prefetchAll(pf)
}
