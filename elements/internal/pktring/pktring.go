// Package pktring is the bounded single-producer single-consumer queue of
// packets that hands packets from one worker to another: FromDevice's
// spreading and IPReassembler's hand-off of datagrams to the worker that
// owns their flow.
package pktring

import (
	"sync/atomic"

	"github.com/junction-dataplane/junction/packet"
)

// Ring is a bounded single-producer single-consumer queue of packets.
// The producer writes slots and then publishes its position with one
// atomic store per batch (Push ... Publish); the consumer reads the
// published position, takes the slots and publishes its own (Pop ...
// Release). Each side keeps a private copy of the other's position and
// reloads it only when the ring looks full (producer) or empty
// (consumer), so the shared cache lines move once per batch, not once per
// packet. The atomics order the plain slot accesses (Go's memory model: a
// load that observes a store happens after it). Put and Take publish at
// once, for a user that hands over a packet now and then.
type Ring struct {
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

// New makes a ring of n slots (a power of two).
func New(n int) *Ring {
	if n <= 0 || n&(n-1) != 0 {
		panic("pktring: the size must be a power of two")
	}
	return &Ring{slots: make([]*packet.Packet, n), mask: uint64(n - 1)}
}

// Push adds p (unpublished) and reports false when the ring is full.
func (r *Ring) Push(p *packet.Packet) bool {
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

// HasRoom reports whether a Push would succeed now.
func (r *Ring) HasRoom() bool {
	if r.pTail-r.pHead > r.mask {
		r.pHead = r.head.Load()
	}
	return r.pTail-r.pHead <= r.mask
}

// Room is how many Pushes would succeed now.
func (r *Ring) Room() int {
	r.pHead = r.head.Load()
	return int(r.mask + 1 - (r.pTail - r.pHead))
}

// Publish makes the pushed packets visible to the consumer.
func (r *Ring) Publish() {
	if r.tail.Load() != r.pTail {
		r.tail.Store(r.pTail)
	}
}

// Put is Push and Publish.
func (r *Ring) Put(p *packet.Packet) bool {
	if !r.Push(p) {
		return false
	}
	r.tail.Store(r.pTail)
	return true
}

// Pop takes one packet, or nil when the ring is (as far as the last
// refresh knows) empty. The consumer calls Release after a run of Pops.
func (r *Ring) Pop() *packet.Packet {
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

// Ready is how many Pops would succeed now (consumer side).
func (r *Ring) Ready() int {
	if r.cTail-r.cHead < r.mask+1 {
		r.cTail = r.tail.Load()
	}
	return int(r.cTail - r.cHead)
}

// Release publishes the consumer's position (the slots popped are free).
func (r *Ring) Release() {
	if r.head.Load() != r.cHead {
		r.head.Store(r.cHead)
	}
}

// Take is Pop and Release.
func (r *Ring) Take() *packet.Packet {
	p := r.Pop()
	if p != nil {
		r.head.Store(r.cHead)
	}
	return p
}

// Len is how many packets are published and not yet released (to any
// goroutine).
func (r *Ring) Len() int { return int(r.tail.Load() - r.head.Load()) }

// Empty reports (to any goroutine) whether nothing published is left.
func (r *Ring) Empty() bool { return r.head.Load() == r.tail.Load() }

// Tail is the producer's published position: how many packets it has
// published since the ring was made (to any goroutine).
func (r *Ring) Tail() uint64 { return r.tail.Load() }

// Popped is the consumer's own position: how many packets it has popped
// since the ring was made (consumer side).
func (r *Ring) Popped() uint64 { return r.cHead }

// Adopt makes the caller the consumer, from the published positions,
// whoever consumed before (with no producer or consumer running: e.g. to
// free what is left once all workers have stopped).
func (r *Ring) Adopt() { r.cHead, r.cTail = r.head.Load(), r.tail.Load() }
