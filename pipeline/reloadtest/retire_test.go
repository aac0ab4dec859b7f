package reloadtest

import (
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/junction-dataplane/junction/elements"
	"github.com/junction-dataplane/junction/packet"
	"github.com/junction-dataplane/junction/pipeline"
)

// retireCount counts, on its own Stats, that it was retired: as
// ARPQuerier counts the packets it held as "unresolved" when a reload
// retires it.
type retireCount struct {
	out     *elements.Output
	retired *atomic.Uint64
}

func (e *retireCount) Push(_ int, b *packet.Batch) { e.out.Push(b) }

func (e *retireCount) Retire() uint64 {
	e.retired.Add(1)
	return 0
}

func init() {
	elements.Register(elements.Type{
		Name: "TestRetireCount", In: 1, Out: 1,
		New: func(_ any, ctx *elements.Context) (elements.Element, error) {
			return &retireCount{out: ctx.Outputs[0], retired: ctx.Stats.Counter("retired")}, nil
		},
	})
}

// genGraphW is a graph of workers workers on one gen device g of two
// queues to 198.19.0.1; rest follows the device's first keys (more keys,
// then the elements and links).
func genGraphW(t *testing.T, workers int, rest string) *pipeline.Graph {
	t.Helper()
	g, err := pipeline.Parse("genw.toml", []byte(fmt.Sprintf(`[forwarder]
workers = %d

[devices.g]
driver = "gen"
queues = 2
dst    = "198.19.0.1"
%s
`, workers, rest)))
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// TestWorkersChangeCountsRetire: what a removed worker's instances count
// when the reload retires them is in the snapshot afterwards (added to
// worker 0's counters with the rest of the removed worker's), not left on
// a worker no snapshot reads.
func TestWorkersChangeCountsRetire(t *testing.T) {
	graph := func(workers int) *pipeline.Graph {
		return genGraphW(t, workers, `flows = 64

[elements.rc]
type = "TestRetireCount"

[graph]
links = ["FromDevice(g, on) -> rc -> Discard"]`)
	}
	r, err := pipeline.Build(graph(3), pipeline.Options{NoPin: true})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	retired := func() (n uint64) {
		for _, e := range r.Snapshot().Elements {
			if e.Element != "rc" {
				continue
			}
			for _, c := range e.Counters {
				if c.Name == "retired" {
					n += c.Value
				}
			}
		}
		return n
	}
	// 3 → 1: every old instance is retired, the removed workers' at the
	// barrier and worker 0's when it adopts the new graph.
	driveAll(t, r, func() (*pipeline.ReloadReport, error) { return r.ReloadGraph(graph(1), false) })
	if got := retired(); got != 3 {
		t.Errorf("after 3 → 1 workers the snapshot counts %d retirements, want 3", got)
	}
	driveAll(t, r, func() (*pipeline.ReloadReport, error) { return r.ReloadGraph(graph(2), false) })
	if got := retired(); got != 4 {
		t.Errorf("after 1 → 2 workers the snapshot counts %d retirements, want 4", got)
	}
}
