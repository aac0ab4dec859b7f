package ndp

import (
	"fmt"
	"net/netip"
	"strings"
	"time"

	"github.com/junction-dataplane/junction/elements"
)

var _ elements.NeighborLister = (*Querier)(nil)

// Neighbors lists the neighbour cache for the control socket (forwarder
// show neighbors), as ARPQuerier lists its table: the RFC 4861 state in
// lower case (incomplete, reachable, stale, delay, probe), "permanent" for
// a static entry and "failed" for one whose resolution failed and that
// waits to be recycled; the age is the time since the entry entered its
// state (for reachable, since the last confirmation). It reads the slots
// without locking, as the workers do.
func (q *Querier) Neighbors() []elements.Neighbor {
	now := q.now()
	var out []elements.Neighbor
	for i := range q.t.slots {
		n := q.t.slots[i].Load()
		if n == nil {
			continue
		}
		st, since, m := n.State(), n.since.Load(), n.mac.Load()
		nb := elements.Neighbor{Addr: netip.AddrFrom16(n.addr), Device: q.device}
		switch {
		case n.static:
			nb.State = "permanent"
		case st == Free:
			nb.State = "failed"
		default:
			nb.State = strings.ToLower(st.String())
			if since != 0 && now > since {
				nb.Age = time.Duration(now - since)
			}
		}
		if st >= Reachable && st <= Probe || n.static {
			nb.MAC = fmt.Sprintf("%02x:%02x:%02x:%02x:%02x:%02x", byte(m>>40), byte(m>>32), byte(m>>24), byte(m>>16), byte(m>>8), byte(m))
		}
		out = append(out, nb)
	}
	return out
}
