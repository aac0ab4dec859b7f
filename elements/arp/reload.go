package arp

import "github.com/junction-dataplane/junction/elements"

// A reload that keeps ARPQuerier (same name) keeps its neighbours. With
// the same configuration the neighbour table itself is kept, shared by the
// old and the new graph's instances while the workers switch. With another
// configuration for the same device (a new static neighbour, another
// timeout) a new table is made from it and every neighbour the running one
// learnt (resolved and not static) is copied in, with the time it was last
// confirmed, so that it ages as it would have; a neighbour the new
// configuration makes static keeps the configured MAC. With another device
// nothing is carried: the neighbours were those of another link. Packets
// the old instance held for an unresolved next hop are freed when it
// is retired, on its worker (counted as "unresolved": Retire).

// keepNeighbours wraps mk, which makes the neighbour table from the config.
func keepNeighbours(ctx *elements.Context, c *QuerierConfig, mk func() (any, error)) func() (any, error) {
	pv := ctx.Previous()
	old, ok := pv.Shared.(*table)
	if !ok {
		return mk
	}
	if pv.SameConfig {
		return func() (any, error) { return old, nil }
	}
	if prev, ok := pv.Element.(*Querier); !ok || prev.device != c.Device {
		return mk
	}
	return func() (any, error) {
		v, err := mk()
		if err != nil {
			return nil, err
		}
		t := v.(*table)
		// The old table is read by its workers concurrently: every field
		// is atomic, and a slot recycled under us is read once wrong at
		// worst as a neighbour to re-resolve.
		for i := range old.slots {
			s := &old.slots[i]
			ip, m := s.key.Load(), s.mac.Load()
			if ip == 0 || m&macValid == 0 || m&macStatic != 0 {
				continue
			}
			t.learn(ip, m&macMask, s.seen.Load(), true)
			if ns, _ := t.find(ip); ns != nil {
				ns.used.Store(s.used.Load()) // an active next hop stays one
			}
		}
		return t, nil
	}
}

var _ elements.Retirer = (*Querier)(nil)

// Retire implements elements.Retirer: the packets the old instance held
// for unresolved next hops are dropped on the worker whose pools they
// belong to, as "unresolved" (the new instance resolves the next hop again
// for the packets that follow; the element has no counter left for a
// reason of its own).
func (q *Querier) Retire() uint64 { return q.dropHeld(q.unresolved) }
