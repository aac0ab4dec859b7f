package standard

import (
	"sync/atomic"
	"unicode"

	"github.com/junction-dataplane/junction/elements"
	"github.com/junction-dataplane/junction/packet"
)

func init() {
	elements.Register(elements.Type{
		Name: "Counter",
		New:  newCounter,
		In:   1,
		Out:  1,
		Doc:  counterManual,
	})
	elements.Register(elements.Type{
		Name:      "Discard",
		NewConfig: func() any { return &DiscardConfig{Reason: DefaultDiscardReason} },
		New:       newDiscard,
		In:        1,
		Out:       0,
		Doc:       discardManual,
	})
}

// DefaultDiscardReason is what a bare Discard counts its packets under.
const DefaultDiscardReason = "discarded"

// maxReasonLen bounds a Discard's reason.
const maxReasonLen = 64

// DiscardConfig is Discard's config.
type DiscardConfig struct {
	Reason string `toml:"reason"`
}

// Validate checks the reason: a short printable name.
func (c *DiscardConfig) Validate() error {
	if c.Reason == "" || len(c.Reason) > maxReasonLen {
		return elements.Errorf("reason", "%q: want 1..%d characters", c.Reason, maxReasonLen)
	}
	for _, r := range c.Reason {
		if !unicode.IsPrint(r) || r == '"' || r == '\\' {
			return elements.Errorf("reason", "%q: only printable characters, no quote or backslash", c.Reason)
		}
	}
	return nil
}

// Counter counts what passes through it.
type Counter struct {
	out            *elements.Output
	packets, bytes *atomic.Uint64
}

func newCounter(_ any, ctx *elements.Context) (elements.Element, error) {
	return &Counter{out: ctx.Outputs[0], packets: ctx.Stats.Counter("packets"),
		bytes: ctx.Stats.Counter("bytes")}, nil
}

// Push counts the batch and passes it on whole.
func (c *Counter) Push(in int, b *packet.Batch) {
	c.packets.Add(uint64(len(b.Pkts)))
	c.bytes.Add(uint64(b.Bytes()))
	c.out.Push(b)
}

// Discard consumes everything, counted under its reason.
type Discard struct {
	st     *elements.Stats
	reason elements.Reason
}

func newDiscard(cfg any, ctx *elements.Context) (elements.Element, error) {
	r := DefaultDiscardReason
	if c, ok := cfg.(*DiscardConfig); ok && c != nil {
		r = c.Reason
	}
	return &Discard{st: ctx.Stats, reason: ctx.Stats.Consumption(r)}, nil
}

// Push frees the whole batch, consumed.
func (d *Discard) Push(in int, b *packet.Batch) { d.st.ConsumeBatch(b, d.reason) }
