package nat

import (
	"fmt"
	"reflect"

	"github.com/junction-dataplane/junction/elements"
	"github.com/junction-dataplane/junction/elements/conntrack"
)

// A reload that keeps DNAT (same name) keeps the bindings: they live in the
// worker's flow table (each flow's reply tuple), which Conntrack carries
// over. When the rules changed, every translated flow is checked against
// the new rules, as a new flow would be: a flow that no rule sends to the
// backend it is bound to any more (its rule removed, or its backends
// changed) is removed from the table and counted ("reload: rule removed"),
// so that its next packet starts over as a new flow under the new rules
// instead of following a binding the configuration no longer has. Flows of
// rules that stayed keep their bindings, as Linux keeps a conntrack
// entry's NAT across an nft -f.

var _ elements.StateTaker = (*DNAT)(nil)

// TakeState implements elements.StateTaker.
func (e *DNAT) TakeState(old elements.Element) error {
	if old == nil {
		return nil // new in the reload
	}
	o, ok := old.(*DNAT)
	if !ok {
		return fmt.Errorf("DNAT: state of a %T", old)
	}
	if reflect.DeepEqual(o.rules, e.rules) {
		return nil
	}
	t := e.flows.Acquire()
	defer t.Release()
	var gone uint64
	t.ForEach(func(idx uint32, c *conntrack.Conn) {
		if c.Flags&conntrack.FlagDNAT == 0 {
			return
		}
		if reply, match := e.target(c); !match || reply != c.T[1] {
			t.Delete(idx)
			gone++
		}
	})
	if gone > 0 {
		e.ruleGone.Add(gone)
		// FastTrack's rewrites of the flows that stay are still right;
		// those removed went with their entries.
	}
	return nil
}

// A reload that keeps SNAT (same name) keeps its bindings the same way
// (and its endpoint mappings, when the addresses, ports, workers and
// inside networks are the same):
// they are the flows' reply tuples. A flow bound to an outside address the
// new configuration no longer has is removed and counted ("reload: address
// removed"): its replies would come to an address the gateway no longer
// answers for. Flows bound to addresses that stay keep their ports, even
// outside a new ports range (as Linux keeps a masqueraded flow's port).

var _ elements.StateTaker = (*SNAT)(nil)

// TakeState implements elements.StateTaker.
func (e *SNAT) TakeState(old elements.Element) error {
	if old == nil {
		return nil // new in the reload
	}
	o, ok := old.(*SNAT)
	if !ok {
		return fmt.Errorf("SNAT: state of a %T", old)
	}
	if o.ms != nil && e.ms != nil && o.ms.compatible(e.ms) {
		// The mappings stay (the new filtering and timeouts apply
		// to them): the same addresses, ports, workers and inside
		// networks, so the same ports belong to the same workers.
		o.ms.filtering, o.ms.timeout = e.ms.filtering, e.ms.timeout
		e.attach(o.ms)
	}
	if reflect.DeepEqual(o.to, e.to) {
		return nil
	}
	keep := make(map[uint32]bool, len(e.to))
	for _, a := range e.to {
		keep[a] = true
	}
	t := e.flows.Acquire()
	defer t.Release()
	var gone uint64
	t.ForEach(func(idx uint32, c *conntrack.Conn) {
		if c.Flags&conntrack.FlagSNAT != 0 && !keep[c.T[1].Dst] {
			t.Delete(idx)
			gone++
		}
	})
	if gone > 0 {
		e.addrGone.Add(gone)
	}
	return nil
}
