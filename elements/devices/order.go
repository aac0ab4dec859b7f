package devices

import (
	"sync/atomic"
	"time"

	"github.com/junction-dataplane/junction/drivers"
	"github.com/junction-dataplane/junction/elements"
	"github.com/junction-dataplane/junction/packet"
)

const orderDoc = `Queue moves. A sending host may move a flow from one RX queue to another ` +
	`(a veth delivers on the queue numbered like the sender's TX queue, which XPS or a ` +
	`retransmission timeout changes; a NIC's indirection table may be rewritten). Two RX ` +
	`queues carry no order between them, so the packets the new queue delivers could pass ` +
	`those the old queue still holds. With a device that reports its queues' positions ` +
	`(afxdp), the flow's owner does what Linux's RFS does before it moves a flow to another ` +
	`CPU: it remembers, per flow (by flow hash, in a direct-mapped table of ` +
	`4096 entries), the queue its packets last came from; when a packet comes from another ` +
	`queue, it notes how far the old queue has been filled and holds the flow's packets from ` +
	`the new queue (up to 4096, an AF_XDP ring's worth) until the old queue's reader has read past that point and ` +
	`everything it handed over has been pushed; then it pushes the held packets and the flow ` +
	`belongs to the new queue. Nothing waits while a flow stays on its queue: the cost is one ` +
	`table read per packet. Counters "queue moves" (flows held until their old queue had ` +
	`passed their last packet) and "queue move timeouts" (held longer than 100 ms or 4096 ` +
	`packets: pushed without waiting further; should stay 0. The wait is the old queue's ` +
	`reader's latency: microseconds on an idle machine, milliseconds when the worker threads wait ` +
	`for a CPU). A frame the old queue's ` +
	`driver had not yet put on its ring when the move was seen (on veth: still in the ` +
	`receiving queue's own ring, before its XDP program ran) can still be passed.`

const (
	orderBuckets = 4096 // flows remembered per worker (power of two)
	orderMoves   = 4    // flows held at once per worker
	orderHold    = 4096 // packets held per flow
	// orderTimeout bounds a hold. On a loaded machine the old queue's
	// reader may not run for milliseconds, and shorter bounds let moves
	// go early (benchmarks/e2e-tcp.md, "A flow moved between RX queues").
	// 100 ms stays below TCP's minimum
	// retransmission timeout (200 ms), so a hold alone never makes the
	// sender retransmit.
	orderTimeout = 100 * time.Millisecond
)

// flowPath is what a worker remembers of one of its flows: the queue its
// packets last arrived on (plus one; 0: empty entry) and whether a move
// of it is being held.
type flowPath struct {
	hash   uint32
	queue1 uint16
	moving bool
}

// move is a flow held after it changed queue.
type move struct {
	hash     uint32
	from, to uint16
	mark     uint32 // the old queue's arrived position when the move was seen
	reader   int    // the worker that reads the old queue
	ringMark uint64 // then: the ring from reader to this worker, its published tail
	marked   bool   // ringMark is set: the old queue's reader has passed mark
	start    time.Time
	held     []*packet.Packet
}

// order keeps one worker's flows in order across queue moves (orderDoc).
// Only the owning worker touches it.
type order struct {
	pos      drivers.RxPositioner
	paths    []flowPath
	moves    [orderMoves]move
	active   int
	rel      *packet.Batch
	moved    *atomic.Uint64
	timeouts *atomic.Uint64
}

func newOrder(pos drivers.RxPositioner, st *elements.Stats, batch int) *order {
	o := &order{pos: pos, paths: make([]flowPath, orderBuckets), rel: packet.NewBatch(batch),
		moved: st.Counter("queue moves"), timeouts: st.Counter("queue move timeouts")}
	for i := range o.moves {
		o.moves[i].held = make([]*packet.Packet, 0, orderHold)
	}
	return o
}

// passed reports whether position a is at or beyond mark (modulo 2^32).
func passed(a, mark uint32) bool { return int32(a-mark) >= 0 }

// filter keeps in b the packets that may be pushed now and holds the
// others: the packets of a flow that moved to a new queue, until its old
// queue has been read past the flow's last packet there. The packets'
// FlowHash must be set (handOff sets it on every packet).
func (sp *spreader) filter(b *packet.Batch) {
	o := sp.ord
	k := 0
	for _, p := range b.Pkts {
		h := p.FlowHash
		e := &o.paths[h&(orderBuckets-1)]
		q1 := p.InQueue + 1
		if e.hash == h && e.queue1 == q1 && !e.moving {
			b.Pkts[k] = p // the common case: the flow stays on its queue
			k++
			continue
		}
		if e.hash != h || e.queue1 == 0 {
			*e = flowPath{hash: h, queue1: q1} // a new flow (or another one in the bucket)
			b.Pkts[k] = p
			k++
			continue
		}
		if e.moving {
			m := o.find(h)
			if m == nil || p.InQueue == m.from {
				// From the old queue: older than what is held.
				b.Pkts[k] = p
				k++
				continue
			}
			if len(m.held) == cap(m.held) {
				sp.release(m, true) // pushes what is held before p
				b.Pkts[k] = p
				k++
				continue
			}
			m.held = append(m.held, p)
			continue
		}
		// The flow moved from queue e.queue1-1 to p.InQueue.
		from := e.queue1 - 1
		arrived, _ := o.pos.RxPosition(int(from))
		if int(from) >= len(sp.h.progress) || o.active == orderMoves || sp.h.reader[from] < 0 ||
			passed(sp.h.progress[from].v.Load(), arrived) && sp.h.reader[from] == sp.me {
			// Nothing of the flow can be left behind (or nothing can
			// be held): it belongs to the new queue now.
			e.queue1 = q1
			b.Pkts[k] = p
			k++
			continue
		}
		m := &o.moves[o.active]
		o.active++
		m.hash, m.from, m.to, m.mark = h, from, p.InQueue, arrived
		m.reader, m.marked, m.start = sp.h.reader[from], false, time.Now()
		m.held = append(m.held[:0], p)
		e.moving = true
		o.moved.Add(1)
	}
	b.Truncate(k)
}

func (o *order) find(h uint32) *move {
	for i := 0; i < o.active; i++ {
		if o.moves[i].hash == h {
			return &o.moves[i]
		}
	}
	return nil
}

// settle releases the held flows whose old queue has been passed (or that
// waited too long). Called before and after the handed-in packets are
// pushed, so that what the old queue's reader handed over goes first.
func (sp *spreader) settle() {
	o := sp.ord
	for i := 0; i < o.active; {
		m := &o.moves[i]
		if !m.marked && passed(sp.h.progress[m.from].v.Load(), m.mark) {
			if m.reader == sp.me {
				// My own queue: what I read of it is pushed already.
				sp.release(m, false)
				continue
			}
			// Everything the reader handed over before it published
			// its progress is in the ring by now: wait until it is
			// taken.
			m.ringMark = sp.h.data[m.reader][sp.me].Tail()
			m.marked = true
		}
		if m.marked && sp.h.data[m.reader][sp.me].Popped() >= m.ringMark {
			sp.release(m, false)
			continue
		}
		if time.Since(m.start) > orderTimeout {
			sp.release(m, true)
			continue
		}
		i++
	}
}

// release pushes what m holds, ends the move (the flow belongs to its new
// queue) and removes it from the active ones (the last takes its place).
func (sp *spreader) release(m *move, timeout bool) {
	o := sp.ord
	if timeout {
		o.timeouts.Add(1)
	}
	e := &o.paths[m.hash&(orderBuckets-1)]
	if e.hash == m.hash {
		e.queue1, e.moving = m.to+1, false
	}
	for _, p := range m.held {
		o.rel.Add(p)
		if o.rel.Full() {
			sp.push(o.rel)
		}
	}
	clear(m.held)
	m.held = m.held[:0]
	if o.rel.Len() > 0 {
		sp.push(o.rel)
	}
	last := &o.moves[o.active-1]
	if m != last {
		*m, *last = *last, *m // swap: each keeps its own held array
	}
	o.active--
}

func (sp *spreader) push(b *packet.Batch) {
	sp.released += len(b.Pkts)
	sp.outp.Push(b)
	b.Reset()
}

// holding reports whether packets are held (the worker must not sleep).
func (sp *spreader) holding() bool { return sp.ord != nil && sp.ord.active > 0 }

// freeHeld frees what is still held (the pipeline has stopped).
func (sp *spreader) freeHeld() {
	if sp.ord == nil {
		return
	}
	for i := 0; i < sp.ord.active; i++ {
		for _, p := range sp.ord.moves[i].held {
			p.Free()
		}
		sp.ord.moves[i].held = sp.ord.moves[i].held[:0]
	}
	sp.ord.active = 0
}

// progressed publishes how far this worker has read queue q: every packet
// before that position has been pushed, held or handed over (and the
// handoff published).
func (sp *spreader) progressed(q int) {
	if sp.ord == nil || q >= len(sp.h.progress) {
		return
	}
	_, taken := sp.ord.pos.RxPosition(q)
	if pr := &sp.h.progress[q].v; pr.Load() != taken {
		pr.Store(taken)
	}
}

// paddedU32 keeps one queue's progress on its own cache line.
type paddedU32 struct {
	v atomic.Uint32
	_ [60]byte
}
