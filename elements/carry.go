package elements

// State carried over a reload (Click's hotswap). When a running graph is
// replaced by a new one (pipeline.Router.Reload), every element of the new
// graph whose name and type match one of the running graph's is "kept": the
// pipeline builds the new instance as usual, then, on each worker, at the
// batch boundary where that worker switches graphs, hands it the old
// instance of the same worker. An element type opts in to keep its state by
// implementing StateTaker; one that does not starts empty, as if the
// router had just started. Counters of kept elements continue (the new
// instance is given the old one's Stats); those of added or replaced ones
// start at zero.
//
// The contract, in the order the pipeline follows it:
//
//  1. Construction (Type.New) runs on the reloading goroutine while the
//     old graph is still running on every worker. It must not touch state
//     the old instance's worker is using (a per-worker table): it may read
//     Context.Previous to reuse what is shared and safe for concurrent
//     readers (a route table behind an atomic pointer, a neighbour table)
//     instead of building it again, and it must leave anything the old
//     instance owns alone. A constructor that fails aborts the reload, and
//     nothing has changed: the new instances built so far are closed, so
//     Close of a new instance must not release what it has not taken yet.
//  2. TakeState runs on the worker, between two rounds: the old instance
//     has finished its last batch and will never run again, the new one
//     has not started. It moves the old instance's per-worker state into
//     the new one (pointers, not copies: the swap of every worker is timed)
//     and fixes up what the new configuration makes wrong (a NAT binding
//     whose rule is gone, a table whose capacity shrank), counting what it
//     drops under a counter or drop reason named "reload: ..." that the
//     element registers in every construction (so that the stats endpoint
//     sees a stable set of names). It returns an error only when it could
//     not take the state; the new instance must then be usable empty.
//  3. After every worker has switched, the pipeline closes every old
//     instance (Closer), those whose state was taken included: TakeState
//     leaves the old instance so that its Close releases nothing the new
//     one took.
//
// TakeState is also called, with old == nil, on every instance of a type
// that implements it and is new in the reload (added, or replacing an
// element of another type), at the same point: so that an element that
// shares per-worker state with the running graph (the flow table) sets up
// what it needs of it only when the old graph no longer runs.
//
// A reload that changes the number of workers keeps this contract for the
// workers that stay. A new worker's instances have no old instance
// (Previous is zero; TakeState(nil) runs before the worker's first round,
// while every worker is parked); a removed worker's old instances are
// retired and closed, not handed to another worker. Per-worker state keyed
// by flow follows its flows through a WorkerRebalancer (rebalance.go), not
// TakeState.
type StateTaker interface {
	TakeState(old Element) error
}

// Retirer is an element whose instances hold packets of the worker's
// pools between batches (ARPQuerier's packets waiting for a neighbour).
// When a reload switches a worker to the new graph, Retire is called on
// that worker, between rounds, on every old instance the new graph does
// not run (after the TakeState calls): it frees what it holds, counting
// each packet under a drop reason (a packet is never half-processed by one
// graph and finished by the other), and returns how many it dropped, which
// the reload reports as lost. Close runs later, on the reloading
// goroutine, while the worker runs the new graph with the same pools: it
// must then find nothing to free.
type Retirer interface {
	Retire() (dropped uint64)
}

// Stranded is an element that can say, once the old graph runs on no
// worker, how many packets it still holds in flight between workers (a
// replaced FromDevice's handoff rings): the reload reports them as lost
// before Close frees them.
type Stranded interface {
	Stranded() uint64
}

// Previous describes, during a reload, the running graph's element that the
// one being built replaces on this worker: same name and same type. At
// start, and for an element that is added or whose type changed, it is the
// zero value.
type Previous struct {
	// Element is the running instance on the same worker (nil: none).
	Element Element
	// Shared is the value the running element's instances share
	// (Context.Shared), nil if they share none.
	Shared any
	// SameConfig reports that the element's decoded configuration is
	// unchanged (reflect.DeepEqual), so that shared state derived from it
	// alone (a route table from its routes key) may be reused as it is.
	SameConfig bool
}

// Previous returns what the element being built replaces (see Previous).
func (c *Context) Previous() Previous { return c.prev }

// SetPrevious is used by the pipeline during a reload (and by tests).
func (c *Context) SetPrevious(p Previous) { c.prev = p }

// Reloading reports that the element is being built for a reload of a
// running graph (even if it is new in it).
func (c *Context) Reloading() bool { return c.reloading }

// SetReloading is used by the pipeline during a reload (and by tests).
func (c *Context) SetReloading(v bool) { c.reloading = v }

// SharedValue returns the value a slot holds (nil if none), for the
// pipeline to hand over as Previous.Shared.
func (s *SharedSlot) SharedValue() any {
	if s == nil {
		return nil
	}
	return s.v
}

// Adopt makes c the clock of every Stats in st and sets each one's element
// index to its position in st: a reload's worker calls it between rounds
// when it switches to the pipeline c belongs to (kept elements' Stats
// carry over from the old pipeline, whose clock they had until then).
func (c *Clock) Adopt(st []*Stats) {
	for i, s := range st {
		s.clock = c
		s.Element = i
	}
}
