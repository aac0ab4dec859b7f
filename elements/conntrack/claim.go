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
