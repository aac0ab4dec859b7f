package qos

import (
	"sync/atomic"

	"github.com/junction-dataplane/junction/elements"
	"github.com/junction-dataplane/junction/packet"
)

func init() {
	elements.Register(elements.Type{
		Name:      "SetDSCP",
		NewConfig: func() any { return &SetDSCPConfig{} },
		New:       newSetDSCP,
		In:        1,
		Out:       1,
		Doc: elements.Doc{
			Synopsis: "SetDSCP(DSCP)",
			Summary:  "re-marks the DSCP of IPv4 (checksum patched) and IPv6 packets, keeping their ECN bits",
			Ports:    "input 0: packets (IPv4 or IPv6 at the L3 offset).\noutput 0: the same packets, IP ones re-marked; others unchanged.",
			Keys: []elements.Key{
				{Name: "dscp", Type: "dscp", Required: true, Doc: "the code point: 0..63 or a name (ef, va, cs0..cs7, af11..af43, be)"},
			},
			Stats:   "counters \"remarked\": IP packets re-marked; \"not ip\": packets passed unchanged (not IPv4 or IPv6, or too short).",
			Example: `"cls[0] -> SetDSCP(ef) -> up" (a Classifier rule picks the VoIP traffic; a Shaper with priority = ["ef"] sends it first)`,
			SeeAlso: "Shaper, Policer",
			Text:    "The IPv4 header checksum is updated incrementally (RFC 1624), so a header with a wrong checksum stays wrong. It classifies traffic for a Shaper's priority bands by what a Classifier can match (ports, hosts), or marks a class's packets for the next hop.",
		},
	})
}

// SetDSCPConfig is SetDSCP's config.
type SetDSCPConfig struct {
	DSCP DSCP `toml:"dscp"`
}

// SetDSCP is one worker's instance.
type SetDSCP struct {
	dscp            uint8
	out             *elements.Output
	remarked, notIP *atomic.Uint64
}

func newSetDSCP(cfg any, ctx *elements.Context) (elements.Element, error) {
	c := cfg.(*SetDSCPConfig)
	return &SetDSCP{dscp: uint8(c.DSCP), out: ctx.Outputs[0],
		remarked: ctx.Stats.Counter("remarked"), notIP: ctx.Stats.Counter("not ip")}, nil
}

// Push re-marks every IP packet of b in place and passes b on.
func (e *SetDSCP) Push(_ int, b *packet.Batch) {
	var n uint64
	for _, p := range b.Pkts {
		if setDSCP(p, e.dscp) {
			n++
		}
	}
	e.remarked.Add(n)
	if o := uint64(len(b.Pkts)) - n; o != 0 {
		e.notIP.Add(o)
	}
	e.out.Push(b)
}
