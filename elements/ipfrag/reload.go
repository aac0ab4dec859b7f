package ipfrag

import "github.com/junction-dataplane/junction/elements"

// Datagrams handed between workers need nothing at a reload: the rings
// are the graph state's (elements.GraphValue, keyed by the element's name
// and the number of workers), which a reload keeps, so the new instance
// receives what the old ones handed over.
var _ elements.StateTaker = (*Reassembler)(nil)

// TakeState carries the running instance's datagrams in reassembly over
// a reload (same name and type), oldest first, with their fragments,
// arrival times and out-of-order marks, so that a datagram whose fragments
// straddle the reload still completes. Their buffers stay those of the old
// instance's pool, to which they return when sent on or dropped: only
// this worker uses that pool from now on (the old instance has run its
// last batch, and its Close finds its table empty). Those the new
// capacity or max_fragments cannot hold are freed and counted as "reload:
// no room".
func (e *Reassembler) TakeState(old elements.Element) error {
	o, ok := old.(*Reassembler)
	if !ok || o.v6 != e.v6 {
		return nil
	}
	for o.t.oldest >= 0 {
		i := o.t.oldest
		s := o.t.slots[i]
		ext := o.t.extents[int(i)*o.t.maxFrags:][:s.nfrag] // remove leaves the extents
		pkt, n := o.t.remove(i)
		if len(e.t.free) == 0 || n > e.t.maxFrags {
			pkt.Free()
			e.drops[rReload].Add(uint64(n))
			continue
		}
		j := e.t.add(&s.k, pkt, s.born)
		d := &e.t.slots[j]
		s.prev, s.next, s.hnext = d.prev, d.next, d.hnext
		*d = s
		copy(e.t.extents[int(j)*e.t.maxFrags:], ext)
	}
	e.inReassembly.Store(uint64(e.t.live))
	return nil
}
