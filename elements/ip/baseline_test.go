package ip

import (
	"testing"

	"github.com/junction-dataplane/junction/elements"
	"github.com/junction-dataplane/junction/packet"
)

// nullElement passes batches through untouched: BenchmarkHarnessBaseline
// measures what the harness itself costs per packet (pool get, frame copy,
// sink free), to subtract from the element benchmarks.
type nullElement struct{ out *elements.Output }

func (e *nullElement) Push(_ int, b *packet.Batch) { e.out.Push(b) }

func init() {
	elements.Register(elements.Type{Name: "ipTestNull", In: 1, Out: 1,
		New: func(_ any, ctx *elements.Context) (elements.Element, error) {
			return &nullElement{out: ctx.Outputs[0]}, nil
		}})
}

func BenchmarkHarnessBaseline(b *testing.B) {
	h := newBenchHarness(b, "ipTestNull", nil)
	h.Bench(b, mkFrame(b, frameOpts{payload: 18}))
}
