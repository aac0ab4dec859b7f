package nat

import (
	"sync/atomic"

	"github.com/junction-dataplane/junction/elements"
	"github.com/junction-dataplane/junction/elements/conntrack"
	"github.com/junction-dataplane/junction/packet"
)

// translator is the Push that DNAT and SNAT share: packets without a flow
// pass untouched, ICMP errors of a flow get their quoted headers
// translated, the first packet of a new flow in its original direction is
// bound (bind: the element's choice of backend or port; a failure drops
// it under fail), and every packet of a bound flow is rewritten (the
// destination for DNAT, the source for SNAT).
type translator struct {
	manip  int   // manipDst (DNAT) or manipSrc (SNAT)
	done   uint8 // the flow flag of a decided flow: FlagDNATDone or FlagSNATDone
	active bool  // there are rules to bind new flows with
	// bind decides a new flow (an indirect call, but only on a flow's
	// first packet), the packet at pos in the batch (where prepare left
	// what it computed for it): ok false drops the packet; made counts a
	// translation.
	bind       func(t *conntrack.Table, c *conntrack.Conn, idx uint32, pos int) (ok, made bool)
	out        *elements.Output
	st         *elements.Stats
	fail       elements.Reason
	translated *atomic.Uint64
}

func (x *translator) push(b *packet.Batch) {
	n := 0
	var made uint64
	for i, p := range b.Pkts {
		t, c := conntrack.FlowOf(p)
		if c == nil {
			b.Pkts[n] = p
			n++
			continue
		}
		h := p.Data[p.L3:]
		dir := p.Ct.Dir
		if p.Ct.State == packet.CtRelated {
			applyICMPError(h, c, dir, x.manip)
			b.Pkts[n] = p
			n++
			continue
		}
		if dir == 0 && c.Flags&(x.done|conntrack.FlagSeenReply) == 0 && x.active {
			ok, m := x.bind(t, c, p.Ct.Flow, i)
			if !ok {
				x.st.Drop(p, x.fail)
				continue
			}
			if m {
				made++
			}
		}
		if x.manip == manipDst {
			ApplyDst(h, c, dir)
		} else {
			ApplySrc(h, c, dir)
		}
		b.Pkts[n] = p
		n++
	}
	b.Truncate(n)
	if made != 0 {
		x.translated.Add(made)
	}
	x.out.Push(b)
}
