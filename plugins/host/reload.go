package host

import (
	"github.com/junction-dataplane/junction/elements"
)

// A reload that keeps a Plugin element (same name) with the same
// configuration keeps its instances, each with its plugin process, shared
// memory and supervisor, and whatever state the plugin holds: the
// constructor returns the running instance itself, and TakeState, on the
// worker between two rounds, points it at the new graph's outputs. The
// pipeline does not close an instance the new graph still runs. A Plugin
// whose configuration changed (another binary, another config for it) gets
// new processes, started and opened before the swap (a plugin that fails
// to start fails the reload, and nothing changes); the old processes stop
// when the old graph closes. A reload that changes the number of workers
// keeps the instances of the workers that stay, starts processes for the
// new ones and stops those of the removed ones; what a plugin keeps per
// flow is its own and does not follow a flow to its new owner (the
// pipeline moves only the state it knows: elements.WorkerRebalancer).

var _ elements.StateTaker = (*Instance)(nil)

// keepInstance returns the running instance a reload may keep, having
// given it the new outputs to switch to, or nil.
func keepInstance(ctx *elements.Context) *Instance {
	pv := ctx.Previous()
	x, ok := pv.Element.(*Instance)
	if !ok || !pv.SameConfig || len(ctx.Outputs) < x.nout {
		return nil
	}
	x.nextOuts = ctx.Outputs
	return x
}

// TakeState implements elements.StateTaker: a kept instance (old is
// itself) switches to the new graph's outputs; a new one has its own
// process already.
func (x *Instance) TakeState(old elements.Element) error {
	if o, ok := old.(*Instance); ok && o == x && x.nextOuts != nil {
		x.outs, x.nextOuts = x.nextOuts, nil
	}
	return nil
}
