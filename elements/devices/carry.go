package devices

import (
	"fmt"
	"slices"

	"github.com/junction-dataplane/junction/elements"
)

// A reload that keeps FromDevice (same name) on a device that stays open
// keeps its handoff rings: the new instance takes the running one's
// spreader whole (rings, lent buffers, the eventfd it sleeps on), so that
// what other workers handed this one before the swap is pushed by the new
// graph, in order, and nothing in flight is lost. A worker that has
// swapped and one that has not yet share the rings, as both sides of a ring
// are the same objects in either generation.

var _ elements.StateTaker = (*FromDevice)(nil)

// canTakeSpreader reports whether the FromDevice being built replaces a
// running one on the same device object and queues that spreads: its
// spreader (shared rings of the same shape) can be taken over.
func canTakeSpreader(ctx *elements.Context, f *FromDevice) bool {
	old, ok := ctx.Previous().Element.(*FromDevice)
	return ok && old.dev == f.dev && old.sp != nil && old.sp.h.workers == max(ctx.Workers, 1) &&
		slices.Equal(old.queues, f.queues)
}

// TakeState implements elements.StateTaker: the queues' drained state and,
// when the constructor chose to, the spreader.
func (f *FromDevice) TakeState(old elements.Element) error {
	if old == nil {
		return nil // new in the reload
	}
	o, ok := old.(*FromDevice)
	if !ok {
		return fmt.Errorf("FromDevice: state of a %T", old)
	}
	if o.dev == f.dev && slices.Equal(o.queues, f.queues) {
		copy(f.drained, o.drained)
		f.live, f.next = o.live, o.next
	}
	if f.takeSp {
		f.takeSp = false
		if o.sp == nil {
			return fmt.Errorf("FromDevice: the running instance has no handoff rings to take")
		}
		f.sp, o.sp = o.sp, nil
	}
	return nil
}

var _ elements.Stranded = (*FromDevice)(nil)

// Stranded implements elements.Stranded: the packets other workers handed
// this instance that it never took, and those it held for a queue move (a
// FromDevice replaced rather than kept: its rings are not carried over).
// Called once no worker runs the old graph; Close then frees them.
func (f *FromDevice) Stranded() uint64 {
	if f.sp == nil {
		return 0
	}
	var n uint64
	for _, s := range f.sp.in {
		r := f.sp.h.data[s][f.sp.me]
		n += uint64(r.Len())
	}
	if o := f.sp.ord; o != nil {
		// Packets held for a queue move (order.go), freed by Close too.
		for i := 0; i < o.active; i++ {
			n += uint64(len(o.moves[i].held))
		}
	}
	return n
}

var _ elements.HandoffDrainer = (*FromDevice)(nil)

// DrainHandoffs implements elements.HandoffDrainer: what other workers
// handed this one, pushed without reading its own queues.
func (f *FromDevice) DrainHandoffs() int {
	if f.sp == nil {
		return 0
	}
	return f.sp.receive(f.batch, f.out)
}
