package devices

import (
	"sync/atomic"

	"github.com/junction-dataplane/junction/packet"
)

// ring is a bounded single-producer single-consumer queue of packets, the
// handoff between two workers. The producer writes slots and then
// publishes its position with one atomic store per batch; the consumer
// reads the published position, takes the slots and publishes its own. Each
// side keeps a private copy of the other's position and reloads it only when
// the ring looks full (producer) or empty (consumer), so the shared cache
// lines move once per batch, not once per packet. The atomics order the
// plain slot accesses (Go's memory model: a load that observes a store
// happens after it).
type ring struct {
	_    [64]byte
	tail atomic.Uint64 // published by the producer
	_    [56]byte
	head atomic.Uint64 // published by the consumer
	_    [56]byte

	// producer-private
	pTail, pHead uint64
	_            [48]byte
	// consumer-private
	cHead, cTail uint64
	_            [48]byte

	slots []*packet.Packet
	mask  uint64
}

// newRing makes a ring of n slots (a power of two).
func newRing(n int) *ring {
	return &ring{slots: make([]*packet.Packet, n), mask: uint64(n - 1)}
}

// push adds p (unpublished) and reports false when the ring is full.
func (r *ring) push(p *packet.Packet) bool {
	if r.pTail-r.pHead > r.mask {
		r.pHead = r.head.Load()
		if r.pTail-r.pHead > r.mask {
			return false
		}
	}
	r.slots[r.pTail&r.mask] = p
	r.pTail++
	return true
}

// hasRoom reports whether a push would succeed now.
func (r *ring) hasRoom() bool {
	if r.pTail-r.pHead > r.mask {
		r.pHead = r.head.Load()
	}
	return r.pTail-r.pHead <= r.mask
}

// room is how many pushes would succeed now.
func (r *ring) room() int {
	r.pHead = r.head.Load()
	return int(r.mask + 1 - (r.pTail - r.pHead))
}

// publish makes the pushed packets visible to the consumer.
func (r *ring) publish() {
	if r.tail.Load() != r.pTail {
		r.tail.Store(r.pTail)
	}
}

// pop takes one packet, or nil when the ring is (as far as the last
// refresh knows) empty. The consumer calls release after a run of pops.
func (r *ring) pop() *packet.Packet {
	if r.cHead == r.cTail {
		r.cTail = r.tail.Load()
		if r.cHead == r.cTail {
			return nil
		}
	}
	i := r.cHead & r.mask
	p := r.slots[i]
	r.slots[i] = nil
	r.cHead++
	return p
}

// ready is how many pops would succeed now (consumer side).
func (r *ring) ready() int {
	if r.cTail-r.cHead < r.mask+1 {
		r.cTail = r.tail.Load()
	}
	return int(r.cTail - r.cHead)
}

// release publishes the consumer's position (the slots popped are free).
func (r *ring) release() {
	if r.head.Load() != r.cHead {
		r.head.Store(r.cHead)
	}
}

// empty reports (to any goroutine) whether nothing published is left.
func (r *ring) empty() bool { return r.head.Load() == r.tail.Load() }
