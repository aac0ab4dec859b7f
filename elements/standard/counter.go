package standard

import (
	"strconv"
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
		Doc: elements.Doc{
			Synopsis: "Counter",
			Summary:  "counts packets and bytes and passes them on",
			Ports:    "input 0: any packets; output 0: the same batch, unchanged.",
			Stats:    `counters "packets" and "bytes" (frame bytes, Ethernet header included).`,
			Example:  `"FromDevice(lan) -> Counter -> Discard"`,
			SeeAlso:  "Print",
		},
	})
	elements.Register(elements.Type{
		Name:      "Discard",
		NewConfig: func() any { return &DiscardConfig{Reason: DefaultDiscardReason} },
		New:       newDiscard,
		In:        1,
		Out:       0,
		Doc: elements.Doc{
			Synopsis: "Discard  or  Discard(REASON)",
			Summary:  "frees every packet it receives, counted as consumed (by design, not a drop)",
			Ports:    "input 0: any packets; no outputs.",
			Keys: []elements.Key{
				{Name: "reason", Type: "string", Default: strconv.Quote(DefaultDiscardReason),
					Doc: "the name its packets are counted under (forwarder show errors -all, the exit " +
						"table's counters, the stats endpoint's junction_element_consumed_total{reason}): " +
						"say why this branch ends here, e.g. Discard(firewall), Discard(not ip). " +
						"1.." + strconv.Itoa(maxReasonLen) + " printable characters"},
			},
			Stats: `consumption reason REASON ("discarded" by default): every packet. What a Discard ` +
				`takes is consumed, not dropped: the graph ends that branch on purpose, so it is left ` +
				`out of the drops (forwarder show errors, the exit table's drops column and total, ` +
				`junction_drops_total) and counted in the consumed column and total ` +
				`(junction_consumed_total). To count a branch's packets as losses, end it in an ` +
				`element that drops them for a reason instead.`,
			Example: `"cls[2] -> Discard"` + "\n" + `"fw[1] -> Discard(firewall)"`,
			SeeAlso: "Counter, forwarder show errors",
		},
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
