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
		Doc:       setDSCPManual,
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
