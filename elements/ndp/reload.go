package ndp

import "github.com/junction-dataplane/junction/elements"

// A reload that keeps NDPQuerier (same name) with the same configuration
// keeps its neighbour table: the new instances share the running one's
// (safe for concurrent readers: its entries are atomic pointers, its
// writers lock), so the neighbours stay resolved across the switch. With
// another configuration (a new static neighbour, another timeout) a new
// table is made and the neighbours are resolved again as packets need
// them. Packets the old instance held for an unresolved next hop are
// freed when it is retired, on its worker, counted as "unresolved"
// (Retire): never by Close, which runs on the reloading goroutine while
// the worker already uses the same pools for the new graph.

// keepNeighbours wraps mk, which makes the neighbour table from the config.
func keepNeighbours(ctx *elements.Context, mk func() (any, error)) func() (any, error) {
	pv := ctx.Previous()
	if old, ok := pv.Shared.(*table); ok && pv.SameConfig {
		return func() (any, error) { return old, nil }
	}
	return mk
}

var _ elements.Retirer = (*Querier)(nil)

// Retire implements elements.Retirer: the held packets are dropped on the
// worker whose pools they belong to.
func (q *Querier) Retire() uint64 { return q.dropHeld() }
