package ip

import (
	"github.com/junction-dataplane/junction/elements"
	"github.com/junction-dataplane/junction/packet"
)

func init() {
	elements.Register(elements.Type{
		Name: "DecTTL",
		New:  newDecTTL,
		In:   1, Out: 2,
		Optional: []int{1},
		Doc:      decTTLManual,
	})
}

// DecTTL is one worker's instance.
type DecTTL struct {
	filter // verdict: keep (decremented), expired (output 1), or a drop
}

func newDecTTL(_ any, ctx *elements.Context) (elements.Element, error) {
	return &DecTTL{newFilter(ctx, []string{"ttl expired"}, "too short", "not ipv4")}, nil
}

// Push decrements the TTL of every live packet in place and compacts them;
// expired ones go to output 1, broken ones are dropped.
func (e *DecTTL) Push(_ int, b *packet.Batch) {
	v := e.verdicts(b)
	// The verdicts: expired (0, a counter), too short or not IPv4 (drops),
	// else the TTL is decremented (RFC 1624 checksum update). Written out
	// here: as a function it does not inline, and a call per packet costs.
	for i, p := range b.Pkts {
		h, ok := ipv4At(p)
		switch {
		case !ok:
			v[i] = dropBase
		case h[0]>>4 != 4:
			v[i] = dropBase + 1
		case h.TTL() <= 1:
			v[i] = 0
		default:
			h.DecTTL()
			v[i] = keep
		}
	}
	e.push(b, v)
}
