package standard

import (
	"sync/atomic"

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
		Name: "Discard",
		New:  newDiscard,
		In:   1,
		Out:  0,
		Doc: elements.Doc{
			Synopsis: "Discard",
			Summary:  "frees every packet it receives",
			Ports:    "input 0: any packets; no outputs.",
			Stats:    `drop reason "discarded": every packet.`,
			Example:  `"cls[2] -> Discard"`,
		},
	})
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

// Discard drops everything, counted.
type Discard struct {
	st        *elements.Stats
	discarded elements.Reason
}

func newDiscard(_ any, ctx *elements.Context) (elements.Element, error) {
	return &Discard{st: ctx.Stats, discarded: ctx.Stats.Reason("discarded")}, nil
}

// Push frees the whole batch.
func (d *Discard) Push(in int, b *packet.Batch) { d.st.DropBatch(b, d.discarded) }
