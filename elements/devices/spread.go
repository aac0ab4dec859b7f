package devices

import (
	"fmt"
	"sync/atomic"

	"github.com/junction-dataplane/junction/drivers"
	"github.com/junction-dataplane/junction/elements"
	"github.com/junction-dataplane/junction/elements/flowsteer"
	"github.com/junction-dataplane/junction/elements/internal/pktring"
	"github.com/junction-dataplane/junction/internal/wakeup"
	"github.com/junction-dataplane/junction/packet"
)

const spreadDoc = `Flow affinity (software spreading, the handoff of VPP's workers). Per-worker ` +
	`state (Conntrack, FastTrack, NAT bindings) is only right if every packet of a flow, in both ` +
	`directions, is processed by one worker. In a graph with such state (or with fewer queues ` +
	`than workers), unless the device promises that its queues already do that (see the spread ` +
	`key), the workers that own a queue hash every packet with the ` +
	`symmetric flow hash (packet.FlowHash, with DNAT replies hashed as their original direction: ` +
	`flowsteer.Table.Hash) and keep the packets of their own flows; an ICMP or ICMPv6 error hashes as ` +
	`the packet it quotes (a DNAT backend among the quoted endpoints mapped back to its public one, a ` +
	`pinned reply tuple followed), so that it reaches the worker tracking the flow it is about, ` +
	`whoever sent it (RFC 5508 REQ-4 and REQ-5: a NAT reverts and forwards the errors about its flows); the others go to the worker the ` +
	`hash names, over one lock-free single-producer single-consumer ring per (sender, receiver) ` +
	`pair. When the queue a packet arrived on already belongs to its owner, nothing is copied: ` +
	`the only cost is the hash. Packet pools ` +
	`are single-threaded, so a packet never changes owner: each receiving worker lends empty ` +
	`buffers of its own pool to each sender over a second ring; the sender copies the frame ` +
	`(64-1514 bytes, a few ns at 64) and its annotations into a lent buffer, frees its own ` +
	`packet at once (its device frame goes straight back to the driver) and queues the copy. ` +
	`The receiver pushes the packets handed to it before its own queues' and frees them, ` +
	`later, into its own pool. Order: a ring keeps the order its sender gave, and a receiver ` +
	`takes what is published before it reads its own queues, so the packets of a flow leave in ` +
	`the order they were received; only a flow that the sending host moves from one queue to ` +
	`another can be reordered, at the move (two RX queues carry no order between them: what the old ` +
	`queue still holds may be passed by what the new one delivers, on veth up to a window's worth of ` +
	`TCP segments), unless the device reports its queues' positions (Queue moves, below). ` +
	`Nothing on the way locks or allocates. Backpressure: a sender reads its own queues only ` +
	`when every worker it feeds has room for a whole batch (ring slots and lent buffers); ` +
	`otherwise it skips them for that poll (counted as "handoff waits"), so an overloaded ` +
	`receiver slows its senders to its own rate and what cannot be taken waits in the device's ` +
	`ring (and, should that overflow, is counted by the driver as a kernel drop). The drop ` +
	`reason "spread full" remains for a packet that still finds no room (it should stay 0). ` +
	`The FlowHash annotation of every spread packet is set. After a reload that changed the number ` +
	`of workers, the reply tuple of a masqueraded flow whose port hashes home only under the old ` +
	`count is pinned to the flow's owner (flowsteer.Pins): such packets go there whatever their hash ` +
	`says (one atomic load per batch when nothing is pinned).`

// spreadRing is the number of slots of each handoff ring and of each ring of
// lent buffers (per sender-receiver pair): sixteen batches' worth. A TCP
// sender on a veth delivers bursts of a window's worth of segments to one
// queue (a GSO send is split into up to 44 frames), and the receiver may
// be in the middle of a slow batch of its own; with four batches' worth,
// spread = "on" dropped TCP segments as "spread full" on veth.
const spreadRing = 1024

// hub is what the FromDevice instances of all workers share (via
// elements.Context.Shared): the rings between them and who is done.
type hub struct {
	workers int
	senders []bool            // workers that own at least one RX queue
	data    [][]*pktring.Ring // data[s][r]: packets from sender s to receiver r
	lend    [][]*pktring.Ring // lend[s][r]: empty buffers of r's pool lent to s
	done    []atomic.Bool     // sender s has drained its queues and published all

	// Wake-ups of sleeping receivers (internal/wakeup): a worker about to
	// sleep arms its Bell, then checks its incoming rings; a sender
	// publishes, then rings the receiver's Bell. nil for a worker nobody
	// feeds.
	bells []*wakeup.Bell

	// Queue moves (order.go): progress[q] is how far queue q's reader
	// has read it (published after what it read is pushed or handed
	// over); reader[q] is that worker (-1: none).
	progress []paddedU32
	reader   []int
}

// spreader is one worker's side of the hub.
type spreader struct {
	h     *hub
	steer *flowsteer.Table // the graph's: replies from DNAT backends hash as their original direction
	me    int
	n     uint64 // workers, for the hash → worker mapping
	pool  *packet.Pool
	in    []int // senders that feed me
	// out[r] / lent[r]: my rings towards r (nil for me and when I send
	// nothing).
	out, lent []*pktring.Ring
	touched   []bool

	st                  *elements.Stats
	handedOff, handedIn *atomic.Uint64
	waits               *atomic.Uint64 // polls that left the own queues unread (congested)
	full                elements.Reason
	offCount, inCount   uint64 // counted locally, added once per batch

	// Queue moves (order.go); nil when the device cannot say how far
	// its queues are read, or has one queue.
	ord      *order
	outp     *elements.Output // the FromDevice's output (set by each Poll: a reload swaps it)
	released int              // held packets pushed by this Poll
}

func newSpreader(ctx *elements.Context, name string, dev drivers.Device, workers, batch int) (*spreader, error) {
	v, err := ctx.Shared(func() (any, error) {
		h := &hub{workers: workers, senders: make([]bool, workers), done: make([]atomic.Bool, workers),
			bells: make([]*wakeup.Bell, workers)}
		nsend := 0
		h.progress = make([]paddedU32, dev.RxQueues())
		h.reader = make([]int, dev.RxQueues())
		for q := range h.reader {
			h.reader[q] = -1
		}
		for w := 0; w < workers; w++ {
			qs := ctx.Devices.Queues(name, w)
			h.senders[w] = len(qs) > 0
			if h.senders[w] {
				nsend++
			}
			for _, q := range qs {
				if q >= 0 && q < len(h.reader) {
					h.reader[q] = w
				}
			}
		}
		h.data = make([][]*pktring.Ring, workers)
		h.lend = make([][]*pktring.Ring, workers)
		for s := 0; s < workers; s++ {
			h.data[s] = make([]*pktring.Ring, workers)
			h.lend[s] = make([]*pktring.Ring, workers)
			if !h.senders[s] {
				continue
			}
			for r := 0; r < workers; r++ {
				if r != s {
					h.data[s][r] = pktring.New(spreadRing)
					h.lend[s][r] = pktring.New(spreadRing)
				}
			}
		}
		return h, nil
	})
	if err != nil {
		return nil, err
	}
	h, ok := v.(*hub)
	if !ok || h.workers != workers {
		return nil, fmt.Errorf("FromDevice(%s): spreading state of another shape", name)
	}
	me := ctx.Worker
	sp := &spreader{h: h, steer: flowsteer.Of(ctx), me: me, n: uint64(workers), out: h.data[me], lent: h.lend[me],
		touched: make([]bool, workers), st: ctx.Stats,
		handedOff: ctx.Stats.Counter("handed off"), handedIn: ctx.Stats.Counter("handed in"),
		waits: ctx.Stats.Counter("handoff waits"),
		full:  ctx.Stats.Reason("spread full")}
	for s := 0; s < workers; s++ {
		if s != me && h.senders[s] {
			sp.in = append(sp.in, s)
		}
	}
	// My pool backs the buffers lent to every sender: what sits in the
	// lend ring and in the data ring of each pair, plus what the graph
	// holds of them (a few batches; ARP queues).
	sp.pool = packet.NewPool(len(sp.in)*2*spreadRing + 4*batch)
	if len(sp.in) > 0 {
		// Built before any worker runs (the goroutines' start orders
		// this store before every sender's read).
		b, err := wakeup.New()
		if err != nil {
			return nil, fmt.Errorf("FromDevice(%s): %v", name, err)
		}
		h.bells[me] = b
	}
	for _, s := range sp.in {
		sp.refill(s)
	}
	if pos, ok := dev.(drivers.RxPositioner); ok && dev.RxQueues() > 1 && len(h.progress) == dev.RxQueues() {
		sp.ord = newOrder(pos, ctx.Stats, batch)
	}
	return sp, nil
}

// target is the worker that owns the flow of hash h: multiply-shift maps
// the 32-bit hash evenly onto [0, n) without a division.
func (sp *spreader) target(h uint32) int { return int(uint64(h) * sp.n >> 32) }

// congested reports whether some worker this one hands packets to could
// not take a whole batch now: too little room in the ring towards it, or
// too few buffers lent by it. The caller then leaves its own queues
// unread for this poll (backpressure), so that an overloaded receiver
// slows its senders down to its own rate instead of making them drop what
// they have already received: the packets wait in the device's ring, and
// should that overflow, the device counts the loss where the kernel or the
// NIC would (the driver's kernel drop counters). A receiver always takes
// what is handed to it before its own queues, so it never waits for a
// sender, and two workers cannot hold each other up.
func (sp *spreader) congested(need int) bool {
	for t, out := range sp.out {
		if out == nil {
			continue
		}
		if out.Room() < need || sp.lent[t].Ready() < need {
			sp.waits.Add(1)
			return true
		}
	}
	return false
}

// handOff keeps in b the packets of this worker's flows and passes the
// others to their workers. Each handed packet is copied into a buffer its
// receiver lent; the original is freed here, into the pool it came from.
func (sp *spreader) handOff(b *packet.Batch) {
	k := 0
	// Flow directions a reload pinned to a worker (flowsteer.Pins): none,
	// usually; one atomic load per batch.
	pins := sp.steer.Pins()
	for _, p := range b.Pkts {
		// The steering hash is packet.FlowHash, except that a reply from a
		// DNAT backend hashes as if it came from the public address it
		// serves, so that both directions of a DNAT'd flow land on one worker.
		fh := sp.steer.Hash(p.Data, int(p.L3))
		p.FlowHash = fh
		t := sp.target(fh)
		if pins != nil {
			if o, ok := pins.Owner(p.Data, int(p.L3)); ok && o < len(sp.out) {
				t = o
			}
		}
		if t == sp.me {
			b.Pkts[k] = p
			k++
			continue
		}
		out := sp.out[t]
		if out == nil { // cannot happen: every owner of a queue has rings
			b.Pkts[k] = p
			k++
			continue
		}
		// Room first, then a buffer: a popped buffer always finds its
		// slot, so none is ever stranded.
		if !out.HasRoom() {
			sp.st.Drop(p, sp.full)
			continue
		}
		q := sp.lent[t].Pop()
		if q == nil {
			sp.st.Drop(p, sp.full)
			continue
		}
		copyPacket(q, p)
		out.Push(q)
		p.Free()
		sp.touched[t] = true
		sp.offCount++
	}
	b.Truncate(k)
	for t, tt := range sp.touched {
		if tt {
			sp.touched[t] = false
			sp.out[t].Publish()
			sp.lent[t].Release()
			// After the publish: a receiver that armed its Bell
			// before this saw nothing, and waits for the ring.
			if b := sp.h.bells[t]; b != nil {
				b.Ring()
			}
		}
	}
	if sp.offCount > 0 {
		sp.handedOff.Add(sp.offCount)
		sp.offCount = 0
	}
}

// copyPacket copies p's frame (at the same headroom) and annotations into q.
func copyPacket(q, p *packet.Packet) {
	h := p.Headroom()
	buf := q.Buffer()
	q.Data = buf[h : h+len(p.Data)]
	copy(q.Data, p.Data)
	q.InDevice, q.InQueue, q.L3, q.Port = p.InDevice, p.InQueue, p.L3, p.Port
	q.NextHop, q.FlowHash, q.Scratch = p.NextHop, p.FlowHash, p.Scratch
	// A flow annotation names the sender's per-worker flow table: never
	// carry it to another worker (and never leave a stale one in a lent
	// buffer).
	q.Ct = packet.Ct{}
}

// receive pushes what other workers handed to this one, at most one batch
// per sender, and tops up the buffers lent to them. It returns the packets
// pushed.
func (sp *spreader) receive(b *packet.Batch, out *elements.Output) int {
	total := 0
	if sp.ord != nil && sp.ord.active > 0 {
		sp.settle()
	}
	for _, s := range sp.in {
		r := sp.h.data[s][sp.me]
		for !b.Full() {
			p := r.Pop()
			if p == nil {
				break
			}
			b.Add(p)
		}
		r.Release()
		sp.refill(s)
		if sp.ord != nil && len(b.Pkts) > 0 {
			sp.filter(b)
		}
		if n := len(b.Pkts); n > 0 {
			total += n
			sp.inCount += uint64(n)
			out.Push(b)
			b.Reset()
		}
	}
	if sp.inCount > 0 {
		sp.handedIn.Add(sp.inCount)
		sp.inCount = 0
	}
	if sp.ord != nil && sp.ord.active > 0 {
		sp.settle()
	}
	return total
}

// refill lends sender s buffers of this worker's pool up to the ring's size
// (when it has fallen below half: one shared-line access per half ring).
func (sp *spreader) refill(s int) {
	l := sp.h.lend[s][sp.me]
	room := l.Room()
	if room < spreadRing/2 {
		return
	}
	for ; room > 0; room-- {
		p := sp.pool.Get()
		if p == nil {
			break
		}
		l.Push(p)
	}
	l.Publish()
}

// prepareSleep arms this worker's Bell, then checks that nothing was
// handed to it before (or while) it armed it; the caller then waits for
// the Bell's eventfd, which the next sender to publish rings.
func (sp *spreader) prepareSleep(fds []int) ([]int, elements.SleepMode) {
	b := sp.h.bells[sp.me]
	if b == nil {
		return fds, elements.SleepOnFDs // nobody feeds this worker
	}
	b.Arm()
	for _, s := range sp.in {
		if sp.h.data[s][sp.me].Ready() > 0 {
			return fds, elements.SleepNot
		}
	}
	return append(fds, b.FD()), elements.SleepOnFDs
}

// woke disarms the Bell and consumes its rings.
func (sp *spreader) woke() {
	if b := sp.h.bells[sp.me]; b != nil {
		b.Woke()
	}
}

// finish marks this worker's queues as drained: everything it will ever
// hand off is published.
func (sp *spreader) finish() { sp.h.done[sp.me].Store(true) }

// drained reports whether no sender can hand this worker anything more.
func (sp *spreader) drained() bool {
	if sp.holding() {
		return false
	}
	for _, s := range sp.in {
		// done first: a sender publishes its last packets before done.
		if !sp.h.done[s].Load() || !sp.h.data[s][sp.me].Empty() {
			return false
		}
	}
	return true
}

// close frees what is left in this worker's incoming rings and takes back
// the buffers it lent (all workers have stopped: no concurrency left).
func (sp *spreader) close() {
	sp.freeHeld()
	if b := sp.h.bells[sp.me]; b != nil {
		b.Close()
		sp.h.bells[sp.me] = nil
	}
	for _, s := range sp.in {
		for _, r := range []*pktring.Ring{sp.h.data[s][sp.me], sp.h.lend[s][sp.me]} {
			// Consume everything published, whoever was the consumer.
			r.Adopt()
			for p := r.Pop(); p != nil; p = r.Pop() {
				p.Free()
			}
			r.Release()
		}
	}
}
