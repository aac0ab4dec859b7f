package ip

import (
	"encoding/binary"
	"sync/atomic"

	"github.com/junction-dataplane/junction/elements"
	"github.com/junction-dataplane/junction/packet"
)

// CheckMTUConfig is CheckMTU's configuration.
type CheckMTUConfig struct {
	MTU int `toml:"mtu"`
}

// Validate checks the MTU.
func (c *CheckMTUConfig) Validate() error {
	if c.MTU < 68 || c.MTU > 65535 {
		return elements.Errorf("mtu", "must be 68..65535 (the egress link's MTU; IPv6 needs 1280 or more), got %d", c.MTU)
	}
	return nil
}

func init() {
	elements.Register(elements.Type{
		Name:      "CheckMTU",
		NewConfig: func() any { return &CheckMTUConfig{} },
		New: func(cfg any, ctx *elements.Context) (elements.Element, error) {
			c := cfg.(*CheckMTUConfig)
			return &CheckMTU{mtu: c.MTU, out0: ctx.Outputs[0], out1: ctx.Outputs[1],
				big: ctx.SideBatch(), tooBig: ctx.Stats.Counter("too big"),
				st: ctx.Stats, noDF: ctx.Stats.Reason("too big, not DF")}, nil
		},
		In: 1, Out: 2,
		Optional: []int{1},
		Doc:      checkMTUManual,
	})
}

// CheckMTU is one worker's instance.
type CheckMTU struct {
	mtu        int
	out0, out1 *elements.Output
	big        *packet.Batch
	tooBig     *atomic.Uint64
	st         *elements.Stats
	noDF       elements.Reason
}

// Push splits b by length.
func (e *CheckMTU) Push(_ int, b *packet.Batch) {
	n0 := len(b.Pkts)
	n := 0
	for _, p := range b.Pkts {
		if len(p.Data)-int(p.L3) > e.mtu {
			// IPv4 without DF would be fragmented by a router that
			// fragments; this one does not, so the loss is counted.
			if h := p.Data[p.L3:]; h[0]>>4 == 4 && (len(h) < 8 || binary.BigEndian.Uint16(h[6:])&packet.IPv4FlagDF == 0) {
				e.st.Drop(p, e.noDF)
				continue
			}
			e.big.Add(p)
			continue
		}
		b.Pkts[n] = p
		n++
	}
	if n == n0 {
		e.out0.Push(b)
		return
	}
	b.Truncate(n)
	e.out0.Push(b)
	if len(e.big.Pkts) != 0 {
		e.tooBig.Add(uint64(len(e.big.Pkts)))
		e.out1.Push(e.big)
	}
}
