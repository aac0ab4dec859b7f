package fasttrack

import "github.com/junction-dataplane/junction/elements"

// FastTrack's flows are Conntrack's: each flow's learned rewrite (Conn.Fast)
// and the flow cache live in the worker's flow table, which a reload that
// keeps Conntrack keeps. What a new graph may make wrong is the rewrite
// itself (another route, another next hop, another output port), so every
// reload invalidates the learned rewrites at once (one more
// conntrack.Generation of the router's graphs; each flow's next packet
// takes the graph and is learned again, after its "after" packets) rather
// than trusting a rewrite
// the new graph might not make. A kept FastTrack with offload takes over
// the running one's record of the flows it handed to the devices' fast path
// (which the generation change then withdraws and hands over again as the
// new graph learns them), instead of closing them one by one behind the
// new graph's back.

var _ elements.StateTaker = (*FastTrack)(nil)

// TakeState implements elements.StateTaker (old is nil for a FastTrack
// new in the reload).
func (e *FastTrack) TakeState(old elements.Element) error {
	if o, ok := old.(*FastTrack); ok && o.t != nil {
		if o.useCache && !o.deferCache {
			// The old instance's policy reference goes now, on the
			// worker, not in its Close, which runs while the new
			// graph uses the table.
			o.t.RemoveFastPolicy()
			o.deferCache = true
		}
		if o.off != nil && e.off != nil && o.off.fp == e.off.fp {
			e.off, o.off = o.off, nil
		}
	}
	if e.deferCache {
		e.deferCache = false
		e.t.EnableCache()
		e.t.AddFastPolicy(e.policy)
	}
	e.gen.Invalidate()
	return nil
}
