package standard

import (
	"sync/atomic"

	"github.com/junction-dataplane/junction/elements"
	"github.com/junction-dataplane/junction/packet"
)

// MaxTee bounds Tee's outputs: each copy costs a buffer per packet.
const MaxTee = 16

// TeeConfig is Tee's config.
type TeeConfig struct {
	N int `toml:"n"`
}

// Validate checks the output count.
func (c *TeeConfig) Validate() error {
	if c.N < 1 || c.N > MaxTee {
		return elements.Errorf("n", "%d outputs: want 1..%d", c.N, MaxTee)
	}
	return nil
}

// Ports: one input, N outputs.
func (c *TeeConfig) Ports() (in, out int) { return 1, c.N }

var _ elements.PortCounter = (*TeeConfig)(nil)

func init() {
	elements.Register(elements.Type{
		Name:      "Tee",
		NewConfig: func() any { return &TeeConfig{N: 2} },
		New:       newTee,
		In:        1,
		Out:       -1,
		Doc:       teeManual,
	})
}

// Tee is one worker's Tee.
type Tee struct {
	outs   []*elements.Output
	copies []*packet.Batch // one per output 1..n-1
	pool   *packet.Pool
	// noBuffer is the "no buffer" drop reason's counter: a failed copy
	// has no packet to hand to Stats.Drop, so it is counted directly.
	noBuffer *atomic.Uint64
}

func newTee(cfg any, ctx *elements.Context) (elements.Element, error) {
	c := cfg.(*TeeConfig)
	// Register "no buffer" as a drop reason first; Counter then finds
	// that same slot, so these counts add to the element's drops.
	ctx.Stats.Reason("no buffer")
	t := &Tee{outs: ctx.Outputs[:c.N], pool: ctx.Pool, noBuffer: ctx.Stats.Counter("no buffer")}
	for i := 1; i < c.N; i++ {
		t.copies = append(t.copies, ctx.SideBatch())
	}
	return t, nil
}

// Push copies the batch for outputs 1..n-1, then pushes the originals to
// output 0 and the copies to their outputs.
func (t *Tee) Push(in int, b *packet.Batch) {
	for i, cb := range t.copies {
		for _, p := range b.Pkts {
			if cb.Full() {
				// A batch larger than the configured size: pass this
				// output's copies on in pieces rather than lose them.
				t.outs[i+1].Push(cb)
			}
			q := p.Clone(t.pool)
			if q == nil {
				t.noBuffer.Add(1)
				continue
			}
			cb.Add(q)
		}
	}
	t.outs[0].Push(b)
	for i, cb := range t.copies {
		t.outs[i+1].Push(cb)
	}
}
