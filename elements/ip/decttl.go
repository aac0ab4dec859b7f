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
		Doc: elements.Doc{
			Synopsis: "DecTTL",
			Summary:  "decrements the IPv4 TTL with an incremental checksum update; expired packets go to output 1",
			Ports: "input 0: IPv4 packets (header at the L3 offset; normally after CheckIPHeader).\n" +
				"output 0: packets whose TTL was > 1, with TTL decremented and the header checksum patched.\n" +
				"output 1 (optional): packets with TTL <= 1, unchanged (connect ICMPError(src, timeexceeded) here). " +
				"Unconnected, they are dropped and counted as \"unconnected output 1\".",
			Stats: "\"ttl expired\": packets with TTL <= 1 (a counter, whether sent to output 1 or dropped); " +
				"drops: \"too short\" (no 20-byte header at L3), \"not ipv4\" (version is not 4), " +
				"\"unconnected output 1\".",
			Example: `"CheckIPHeader -> ttl :: DecTTL -> rt", "ttl[1] -> ICMPError(192.0.2.1, timeexceeded) -> rt"`,
			SeeAlso: "CheckIPHeader, ICMPError",
			Text: "The checksum is updated per RFC 1624 eqn. 3 (HC' = ~(~HC + ~m + m'), where m is the " +
				"16-bit word TTL|protocol): it equals a full recomputation, including the 0x0000/0xffff " +
				"cases where RFC 1141's form goes wrong. DecTTL checks only what it touches (20 bytes, " +
				"version 4); put CheckIPHeader in front of it for the rest.",
		},
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
