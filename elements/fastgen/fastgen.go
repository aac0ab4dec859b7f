// Package fastgen numbers the forwarding configuration that fast-path
// entries were learned under: one counter per graph, which the elements
// that change forwarding (IPLookup's route tables, ARPQuerier and
// NDPQuerier when a neighbour moves) bump and the elements that cache
// decisions (FastTrack, Conntrack's flow cache, the in-kernel offload)
// compare against. It is a package of its own so that the elements that
// bump it need not import the ones that read it.
package fastgen

import (
	"sync/atomic"

	"github.com/junction-dataplane/junction/elements"
)

// Generation is one graph's counter: any change to its routes, NAT rules
// or neighbours bumps it, and a fast-path entry learned under another
// generation is ignored (and learned again by the slow path).
type Generation struct{ n atomic.Uint32 }

// Current returns the current generation.
func (g *Generation) Current() uint32 { return g.n.Load() }

// Invalidate makes every fast-path entry learned so far stale.
func (g *Generation) Invalidate() { g.n.Add(1) }

type key struct{}

// Of returns the generation of ctx's graph.
func Of(ctx *elements.Context) *Generation {
	return elements.GraphValue(ctx, key{}, func() *Generation { return &Generation{} })
}
