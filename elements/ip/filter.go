package ip

import (
	"sync/atomic"

	"github.com/junction-dataplane/junction/elements"
	"github.com/junction-dataplane/junction/packet"
)

// A filter's verdict on one packet: keep (it stays in the batch, in
// order, for output 0), divert to output 1 counted under counter v
// (0 <= v < dropBase), or drop under reason v-dropBase.
const (
	keep     = -1
	dropBase = 64
)

// filter is the shared half of the elements that look at each packet and
// keep, divert or drop it (CheckIPHeader, CheckIP6Header, DecTTL,
// DecHopLimit): each element's Push writes one verdict per packet, and
// filter.push moves the packets accordingly and pushes both outputs. The
// first pass then holds all the per-family logic, with no call per packet
// but its own.
type filter struct {
	out0, out1 *elements.Output
	side       *packet.Batch // diverted packets, for output 1
	st         *elements.Stats
	counts     []*atomic.Uint64 // by divert verdict
	drops      []elements.Reason
	verdict    []int8 // the current batch's
}

func newFilter(ctx *elements.Context, counters []string, drops ...string) filter {
	f := filter{out0: ctx.Outputs[0], out1: ctx.Outputs[1], side: ctx.SideBatch(), st: ctx.Stats,
		verdict: make([]int8, max(ctx.Batch, packet.DefaultBatch))}
	for _, n := range counters {
		f.counts = append(f.counts, ctx.Stats.Counter(n))
	}
	for _, n := range drops {
		f.drops = append(f.drops, ctx.Stats.Reason(n))
	}
	return f
}

// verdicts returns room for one verdict per packet of b.
func (f *filter) verdicts(b *packet.Batch) []int8 {
	if len(b.Pkts) > len(f.verdict) {
		f.verdict = make([]int8, len(b.Pkts)) // only for batches larger than the graph's
	}
	return f.verdict[:len(b.Pkts)]
}

// push acts on the verdicts v of b's packets. When every one is keep
// (the home run) b goes on untouched.
func (f *filter) push(b *packet.Batch, v []int8) {
	all := true
	for _, r := range v {
		all = all && r == keep
	}
	if all {
		f.out0.Push(b)
		return
	}
	side := f.side
	n := 0
	for i, p := range b.Pkts {
		switch r := int(v[i]); {
		case r == keep:
			b.Pkts[n] = p
			n++
		case r < dropBase:
			f.counts[r].Add(1)
			if side.Full() { // only for batches larger than the graph's
				f.out1.Push(side)
			}
			side.Add(p)
		default:
			f.st.Drop(p, f.drops[r-dropBase])
		}
	}
	b.Truncate(n)
	f.out0.Push(b)
	f.out1.Push(side)
}
