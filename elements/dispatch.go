package elements

import "github.com/junction-dataplane/junction/packet"

// SideBatch returns an empty batch for packets an element sets aside from
// the batch it is processing (the bad ones, the expired ones, one output's
// share): it holds at least a whole batch of this graph, so that sorting
// one incoming batch into side batches never fills one. Every element
// makes its side batches with it.
func (c *Context) SideBatch() *packet.Batch {
	return packet.NewBatch(max(c.Batch, packet.DefaultBatch))
}

// Dispatch sends packets to the outputs their Port names: one side batch
// per output, filled packet by packet and pushed once per incoming batch
// (VPP's enqueue-to-next). Elements that choose an output per packet
// (Classifier, IPLookup, FastTrack) end their Push with it:
//
//	if same {
//		e.outs[first].Push(b) // every packet to one output: no copy
//		return
//	}
//	e.dispatch.Split(b)
type Dispatch struct {
	outs []*Output
	side []*packet.Batch
	// Packets whose port has no output (Port >= len(outs)) are dropped,
	// counted under noOut.
	st    *Stats
	noOut Reason
}

// NewDispatch returns a dispatcher over ctx's outputs. A packet whose Port
// names no output is dropped and counted by ctx.Stats under noOut.
func NewDispatch(ctx *Context, noOut Reason) *Dispatch {
	d := &Dispatch{outs: ctx.Outputs, side: make([]*packet.Batch, len(ctx.Outputs)), st: ctx.Stats, noOut: noOut}
	for i := range d.side {
		d.side[i] = ctx.SideBatch()
	}
	return d
}

// Add queues p for output port, which must be an output's. A full side
// batch (a batch larger than the graph's) is pushed on first.
func (d *Dispatch) Add(port int, p *packet.Packet) {
	sb := d.side[port]
	if sb.Full() {
		d.outs[port].Push(sb)
	}
	sb.Add(p)
}

// Queues are the side batches by port, for a caller that fills them itself
// and then calls Flush: each holds a whole batch of the graph, so a caller
// that sorts one incoming batch between Flushes needs no check, and a loop
// that must not call anything (Add is not inlined) adds to them directly.
func (d *Dispatch) Queues() []*packet.Batch { return d.side }

// Pending is the number of packets queued for port.
func (d *Dispatch) Pending(port int) int { return len(d.side[port].Pkts) }

// Flush pushes every output's queued packets on, in port order.
func (d *Dispatch) Flush() {
	for i, sb := range d.side {
		if len(sb.Pkts) > 0 {
			d.outs[i].Push(sb)
		}
	}
}

// Split sends every packet of b to the output its Port names (dropping
// those whose port has none) and empties b. A caller that knows every
// packet goes to one output pushes b there instead: that moves no packet.
func (d *Dispatch) Split(b *packet.Batch) {
	n := len(d.side)
	for _, p := range b.Pkts {
		port := int(p.Port)
		if port >= n {
			d.st.Drop(p, d.noOut)
			continue
		}
		sb := d.side[port] // Add, written out: it is not inlined
		if sb.Full() {
			d.outs[port].Push(sb)
		}
		sb.Add(p)
	}
	b.Reset()
	d.Flush()
}
