package arp

import (
	"fmt"
	"time"

	"github.com/junction-dataplane/junction/elements"
	"github.com/junction-dataplane/junction/packet"
)

var (
	_ elements.NeighborLister = (*Querier)(nil)
	_ elements.PacketHolder   = (*Querier)(nil)
)

// HoldsPackets: packets to an unresolved next hop (input 0) wait in the
// querier until the neighbour answers or the wait gives up.
func (q *Querier) HoldsPackets(inPort int) bool { return inPort == 0 }

// Neighbors lists the neighbour table (shared by every worker's instance)
// for the control socket. Slots are atomic words: the read is the one
// lookups make (key, MAC, key again), so an entry recycled meanwhile is
// skipped, not shown with another address's MAC.
func (q *Querier) Neighbors() []elements.Neighbor {
	now := nanotime()
	var out []elements.Neighbor
	for i := range q.t.slots {
		s := &q.t.slots[i]
		k := s.key.Load()
		if k == 0 {
			continue
		}
		m := s.mac.Load()
		seen, probe := s.seen.Load(), s.probe.Load()
		if s.key.Load() != k {
			continue
		}
		n := elements.Neighbor{Addr: packet.AddrFromU32(k), Device: q.device}
		if seen != 0 {
			n.Age = time.Duration(now - seen)
		}
		switch {
		case m&macStatic != 0:
			n.State = "permanent"
			n.Age = 0
		case m&macValid != 0 && now-seen <= q.tmo:
			n.State = "reachable"
		case m&macValid != 0 && now-seen <= q.tmo+grace:
			n.State = "stale"
		case m&macValid != 0:
			n.State = "failed"
		case probe != 0 && now-probe <= giveUp:
			n.State = "incomplete"
		default:
			n.State = "failed"
		}
		if m&macValid != 0 {
			w := m & macMask
			n.MAC = fmt.Sprintf("%02x:%02x:%02x:%02x:%02x:%02x", byte(w>>40), byte(w>>32), byte(w>>24), byte(w>>16), byte(w>>8), byte(w))
		}
		out = append(out, n)
	}
	return out
}
