package packet

// DefaultBatch is the default number of packets per batch (as VPP's frame,
// DPDK's burst).
const DefaultBatch = 64

// MaxBatch is the largest batch size a graph may configure.
const MaxBatch = 256

// Batch is a fixed-capacity vector of packets. Elements receive a batch,
// process every packet in it, and pass batches on. A Batch is preallocated and
// reused: Reset empties it without freeing its packets.
type Batch struct {
	Pkts []*Packet // len is the number of packets, cap the capacity
}

// NewBatch returns an empty batch able to hold n packets.
func NewBatch(n int) *Batch {
	return &Batch{Pkts: make([]*Packet, 0, n)}
}

// Len is the number of packets in the batch.
func (b *Batch) Len() int { return len(b.Pkts) }

// Cap is the batch's capacity.
func (b *Batch) Cap() int { return cap(b.Pkts) }

// Full reports whether no more packets fit.
func (b *Batch) Full() bool { return len(b.Pkts) == cap(b.Pkts) }

// Add appends p; the caller makes sure the batch is not full (a full batch
// panics: a batch never grows). Not append: its growth path is a call,
// and a call in a packet loop makes the compiler spill that loop's
// registers.
func (b *Batch) Add(p *Packet) {
	n := len(b.Pkts)
	b.Pkts = b.Pkts[:n+1]
	b.Pkts[n] = p
}

// Reset empties the batch (the packets are not freed).
func (b *Batch) Reset() {
	clear(b.Pkts) // drop references so a held slot never aliases a freed packet
	b.Pkts = b.Pkts[:0]
}

// Truncate keeps the first n packets, the ones an element compacted to the
// front while it dropped or diverted the rest, and clears the slots behind
// them so that no stale pointer to a packet now owned elsewhere remains.
func (b *Batch) Truncate(n int) {
	clear(b.Pkts[n:])
	b.Pkts = b.Pkts[:n]
}

// FreeAll frees every packet and empties the batch. A run of packets from
// one pool goes back with one slice append instead of one per packet (the
// packets of a batch almost always share their pool); a packet freed twice
// panics, as Free does.
func (b *Batch) FreeAll() {
	pkts := b.Pkts
	for i := 0; i < len(pkts); {
		pool := pkts[i].pool
		j := i
		for ; j < len(pkts) && pkts[j].pool == pool && pkts[j].held; j++ {
			pkts[j].held = false
		}
		pool.free = append(pool.free, pkts[i:j]...)
		pool.puts += uint64(j - i)
		if j < len(pkts) && !pkts[j].held {
			panic("packet: double free") // after returning the run before it
		}
		i = j
	}
	b.Reset()
}

// Bytes is the sum of the frame lengths.
func (b *Batch) Bytes() int {
	n := 0
	for _, p := range b.Pkts {
		n += len(p.Data)
	}
	return n
}
