package nat

import "github.com/junction-dataplane/junction/elements/conntrack"

// pinned reports whether a reload pinned the reply tuple to a worker
// (flowsteer.Pins): the tuple belongs to a flow that a change of the
// number of workers left with a reply that hashes elsewhere, and must not
// be given to a new flow. One atomic load when there are no pins.
func (e *SNAT) pinned(reply *conntrack.Tuple) bool {
	ps := e.steer.Pins()
	if ps == nil {
		return false
	}
	_, ok := ps.Lookup(reply.Src, reply.Dst, reply.Sport, reply.Dport, reply.Proto)
	return ok
}
