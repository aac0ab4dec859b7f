package conntrack

import (
	"github.com/junction-dataplane/junction/elements"
	"github.com/junction-dataplane/junction/elements/flowsteer"
	"github.com/junction-dataplane/junction/packet"
)

// A reload that changes the number of workers changes which worker owns
// each flow: the owner is the one the symmetric flow hash of the flow's
// original direction is steered to among the workers (flowsteer.Owner,
// with DNAT replies hashed as their original direction), the worker
// FromDevice hands the flow's packets to. So every flow of every
// worker's table (IPv4 and IPv6), with its NAT binding (the reply tuple),
// state, counters, expiry and TCP window state, is moved to its new
// owner's table while the workers are parked (elements.WorkerRebalancer).
// The learned fast-path rewrites and flow cache entries are not moved:
// a reload invalidates them anyway (FastTrack's generation), and the next
// packets learn them again on the new owner.
//
// A masqueraded flow (SNAT) got a port whose reply tuple hashes to its
// owner among the old count of workers; under the new count its reply may
// hash to another worker than its original direction, and the reply tuple
// cannot change (the other end knows the port). Such a TCP or UDP flow is
// kept with the owner of its original direction, and its reply tuple is
// pinned to that worker (flowsteer.Pins, rebuilt from the live flows at
// every change of the count): FromDevice hands its replies there, and SNAT
// gives the tuple to no other flow.
//
// A flow is dropped, counted on the table of its new owner (or worker
// 0's), when:
//   - it is not TCP or UDP (an ICMP echo through SNAT), its two directions
//     hashed to one worker before and reach two now ("reload: workers
//     changed: directions split"): the steering pins TCP and UDP only
//     (with a masquerading SNAT an echo is steered by its identifier
//     both ways, so one whose identifier SNAT kept never splits). One that was split already stays with
//     its original direction's owner, as before.
//   - the new owner's table has no free entry ("reload: workers changed:
//     no room"): moving never evicts a live flow of the new owner.
//
// The owner is the steering's: it is right wherever FromDevice spreads,
// which a graph with per-flow state does unless a device promises flow
// affinity (drivers.Info.FlowAffine: gen with split_flows, whose flows
// each stay on one queue, polled by worker queue mod workers). There the
// flow's queue decides its worker, which the table does not record: a
// flow moved by its hash to another worker than its queue's meets, at its
// next packet, a worker that does not have it, and starts over there (the
// moved entry expires). Only the synthetic gen driver promises affinity.

type rebalanceKey struct{}

// rebalancer is the graph's WorkerRebalancer for the flow tables.
type rebalancer struct {
	state *elements.GraphState
	steer *flowsteer.Table
}

var _ elements.WorkerRebalancer = (*rebalancer)(nil)

// registerRebalancer makes sure ctx's graph has the flow tables'
// rebalancer.
func registerRebalancer(ctx *elements.Context) {
	steer := flowsteer.Of(ctx) // not inside GraphValue's maker: it holds the state's lock
	elements.GraphValue(ctx, rebalanceKey{}, func() *rebalancer {
		return &rebalancer{state: ctx.State, steer: steer}
	})
}

// rebalance counts, per table, what the last rebalance did to it;
// Conntrack folds them into its counters (publish).
type rebalanceCounts struct {
	movedIn, split, full uint64
}

func (rb *rebalancer) owner4(k *Tuple, n int) int {
	return rb.steer.OwnerTuple(k.Src, k.Dst, k.Sport, k.Dport, k.Proto, n)
}

func (rb *rebalancer) owner6(k *Tuple6, n int) int {
	return rb.steer.OwnerTuple6(k.Src, k.Dst, k.Sport, k.Dport, k.Proto, n)
}

// RebalanceWorkers implements elements.WorkerRebalancer.
func (rb *rebalancer) RebalanceWorkers(from, to int) elements.RebalanceResult {
	res := elements.RebalanceResult{What: "flows", Dropped: map[string]uint64{}}
	n := max(from, to)
	tables := make([]*Table, n)
	for w := range n {
		if v, ok := rb.state.WorkerLookup(w, tableKey{}); ok {
			if t := v.(*tableSlot).t; t != nil && len(t.conns) > 1 {
				tables[w] = t
			}
		}
	}
	// dest is the table that counts what happened to a flow owned by
	// worker own: its own, else worker 0's.
	dest := func(own int) *Table {
		if own < to && tables[own] != nil {
			return tables[own]
		}
		return tables[0]
	}
	drop := func(own int, split bool) {
		d := dest(own)
		if split {
			res.Dropped["directions split"]++
			if d != nil {
				d.rebal.split++
			}
		} else {
			res.Dropped["no room"]++
			if d != nil {
				d.rebal.full++
			}
		}
	}
	// Decide first, then move: a flow moved into a table not looked at
	// yet must not be looked at again.
	var moves []move
	for w := 0; w < from; w++ {
		src := tables[w]
		if src == nil {
			continue
		}
		// The live flows are on the two lists (O(flows), not
		// O(capacity)); nxt is read before a delete relinks it.
		for l := range src.lists {
			for i, next := src.lists[l].head, uint32(0); i != 0; i = next {
				next = src.conns[i].nxt
				rb.decide4(src, w, i, from, to, &res, &moves, drop)
			}
		}
		if s6 := src.t6; s6 != nil {
			for l := range s6.lists {
				for i := s6.lists[l].head; i != 0; i = s6.conns[i].nxt {
					if own := rb.owner6(&s6.conns[i].T[0], to); own == w {
						res.Kept++
					} else {
						moves = append(moves, move{w, own, i, true})
					}
				}
			}
		}
	}
	for _, m := range moves {
		src, dst := tables[m.w], tables[m.own]
		now := src.now()
		if !m.v6 {
			if dst == nil || dst.free == 0 || !src.moveTo(dst, m.idx, now) {
				drop(m.own, false)
				src.Delete(m.idx)
				continue
			}
			dst.rebal.movedIn++
			res.Moved++
			continue
		}
		s6 := src.t6
		var d6 *Table6
		if dst != nil {
			d6 = dst.t6
		}
		if d6 == nil || d6.free == 0 {
			drop(m.own, false)
			s6.delete(m.idx)
			continue
		}
		c := &s6.conns[m.idx]
		j, _ := d6.create(&c.T[0], now)
		nc := &d6.conns[j]
		nc.Expires, nc.Packets, nc.Bytes, nc.State = c.Expires, c.Packets, c.Bytes, c.State
		nc.Flags = c.Flags | flagLive
		if c.Flags&FlagAssured != 0 {
			nc.Flags &^= FlagAssured
			d6.setAssured(j)
		}
		d6.Created--
		s6.delete(m.idx)
		dst.rebal.movedIn++
		res.Moved++
	}
	rb.repin(tables[:to], to, &res)
	return res
}

// pinnable reports whether the steering can pin a flow direction of
// protocol proto (flowsteer.Pins: IPv4 TCP and UDP tuples).
func pinnable(proto uint8) bool { return proto == packet.ProtoTCP || proto == packet.ProtoUDP }

// repin rebuilds the steering's pins from the flows in tables (those of
// the new workers, after the moves): every TCP or UDP flow whose reply
// tuple hashes to another worker than its original direction (a
// masqueraded flow whose port was chosen for another count of workers) has
// its reply pinned to its owner.
func (rb *rebalancer) repin(tables []*Table, to int, res *elements.RebalanceResult) {
	var pins []flowsteer.Pin
	for w, t := range tables {
		if t == nil {
			continue
		}
		for l := range t.lists {
			for i := t.lists[l].head; i != 0; i = t.conns[i].nxt {
				c := &t.conns[i]
				if !pinnable(c.T[1].Proto) || rb.owner4(&c.T[1], to) == w {
					continue
				}
				k := c.T[1]
				pins = append(pins, flowsteer.Pin{Src: k.Src, Dst: k.Dst, Sport: k.Sport, Dport: k.Dport, Proto: k.Proto, Worker: w})
			}
		}
	}
	rb.steer.SetPins(pins)
	res.Pinned = uint64(len(pins))
}

// move is a flow to move: from worker w's table (IPv6: its Table6) to
// worker own's.
type move struct {
	w, own int
	idx    uint32
	v6     bool
}

// decide4 decides what becomes of IPv4 flow i of worker w's table: kept,
// dropped now (its directions split), or moved (appended to moves).
func (rb *rebalancer) decide4(src *Table, w int, i uint32, from, to int, res *elements.RebalanceResult, moves *[]move, drop func(int, bool)) {
	c := &src.conns[i]
	own := rb.owner4(&c.T[0], to)
	switch {
	case !pinnable(c.T[1].Proto) && own != rb.owner4(&c.T[1], to) &&
		(from <= 1 || rb.owner4(&c.T[0], from) == rb.owner4(&c.T[1], from)):
		drop(own, true)
		src.Delete(i)
	case own == w:
		res.Kept++
	default:
		*moves = append(*moves, move{w, own, i, false})
	}
}

// moveTo moves flow idx into dst (which has a free entry), with its reply
// tuple, state, counters, expiry and TCP window state, and deletes it here.
func (t *Table) moveTo(dst *Table, idx uint32, now int64) bool {
	t.Sync(idx) // the flow cache's hits
	c := t.conns[idx]
	j, ok := dst.recreate(&c, now)
	if !ok {
		return false
	}
	if dst.tw.w != nil {
		if t.tw.w != nil {
			dst.tw.w[j] = t.tw.w[idx]
		} else {
			dst.tw.w[j] = tcpWin{liberal: true}
		}
	}
	t.Delete(idx)
	return true
}
