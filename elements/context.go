package elements

import (
	"fmt"
	"io"

	"github.com/junction-dataplane/junction/drivers"
	"github.com/junction-dataplane/junction/packet"
)

// Context is what the pipeline gives a constructor: where the instance sits
// (worker, name), its outputs and stats, the worker's packet pool, the
// devices, and a place for state shared by all workers' instances.
type Context struct {
	Name    string // the element's name in the graph
	Worker  int    // this instance's worker index
	Workers int    // number of workers
	Batch   int    // batch capacity

	Outputs []*Output
	Stats   *Stats
	// Pool is the worker's pool for packets an element creates (ARP
	// requests, Tee copies, ICMP errors that do not fit in place).
	Pool *packet.Pool

	// Devices resolves a device name; Queues says which RX queues of a
	// device this worker serves.
	Devices DeviceSet
	// FlowState reports that some element of the graph keeps per-flow
	// state per worker (Type.FlowState).
	FlowState bool
	// State holds what the elements of this graph share, graph-wide and
	// per worker (GraphShared, WorkerShared); the pipeline sets it. Nil
	// makes the context a graph of its own.
	State *GraphState
	// Log is where the element's messages for the operator go (the
	// router's log, forwarder run's stderr); nil discards them. Write
	// with Logf, never on the hot path.
	Log io.Writer

	shared *SharedSlot
	// prev and reloading: what a reload replaces (carry.go).
	prev      Previous
	reloading bool
}

// DeviceSet gives elements access to the graph's devices.
type DeviceSet interface {
	Device(name string) (dev drivers.Device, index int, ok bool)
	Queues(name string, worker int) []int
}

// DeviceLister is a DeviceSet that can list its devices' names (the
// pipeline's does; elements that want every device, such as
// CheckIPHeader's directed broadcasts, use it when it is there).
type DeviceLister interface {
	DeviceNames() []string
}

// SharedSlot holds the one value shared by every worker's instance of one
// graph element (e.g. a route table behind an atomic pointer).
type SharedSlot struct {
	v any
}

// NewContext is used by the pipeline (and tests) to make a context.
func NewContext(name string, worker, workers, batch int, outs []*Output, st *Stats, pool *packet.Pool, devs DeviceSet, shared *SharedSlot) *Context {
	return &Context{Name: name, Worker: worker, Workers: workers, Batch: batch, Outputs: outs,
		Stats: st, Pool: pool, Devices: devs, shared: shared}
}

// Logf writes one message for the operator to Log, prefixed with the
// element's name and worker.
func (c *Context) Logf(format string, args ...any) {
	if c.Log == nil {
		return
	}
	fmt.Fprintf(c.Log, "%s (worker %d): %s\n", c.Name, c.Worker, fmt.Sprintf(format, args...))
}

// Shared returns the value shared by all workers' instances of this element,
// creating it with mk on first use. Instances are built one after another at
// start, so mk runs once and needs no lock; the value itself must be safe
// for concurrent readers (read-mostly state behind an atomic pointer).
func (c *Context) Shared(mk func() (any, error)) (any, error) {
	if c.shared == nil {
		c.shared = &SharedSlot{}
	}
	if c.shared.v == nil {
		v, err := mk()
		if err != nil {
			return nil, err
		}
		c.shared.v = v
	}
	return c.shared.v, nil
}
