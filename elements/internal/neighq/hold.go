package neighq

import (
	"github.com/junction-dataplane/junction/elements"
	"github.com/junction-dataplane/junction/packet"
)

// MaxHops is the number of distinct unresolved next hops one worker holds
// packets for at once.
const MaxHops = 64

// Key names a next hop: an IPv6 address, or an IPv4 one as its
// IPv4-mapped form (Key4).
type Key = [16]byte

// Key4 is the key of the IPv4 next hop ip.
func Key4(ip uint32) Key {
	return Key{10: 0xff, 11: 0xff, 12: byte(ip >> 24), 13: byte(ip >> 16), 14: byte(ip >> 8), 15: byte(ip)}
}

// hop is one unresolved next hop's queue on one worker.
type hop struct {
	key   Key
	inUse bool
	n     int
	since int64 // when it was opened: the first packet was held
	pkts  []*packet.Packet
}

// Queues are one worker's queues of packets waiting for their next hop to
// resolve, MaxHops of them, each of a fixed length (the hold key). A
// querier keeps what its protocol needs of each hop (its table entry) in an
// array of its own indexed like the queues.
type Queues struct {
	hops   [MaxHops]hop
	active int // queues in use
}

// Init gives every queue room for hold packets.
func (qs *Queues) Init(hold int) {
	slab := make([]*packet.Packet, MaxHops*hold)
	for i := range qs.hops {
		qs.hops[i].pkts = slab[i*hold : (i+1)*hold : (i+1)*hold]
	}
}

// Active is the number of queues in use: while it is 0 there is nothing to
// release.
func (qs *Queues) Active() int { return qs.active }

// InUse reports whether queue i is open.
func (qs *Queues) InUse(i int) bool { return qs.hops[i].inUse }

// Key is queue i's next hop.
func (qs *Queues) Key(i int) *Key { return &qs.hops[i].key }

// Since is when queue i was opened.
func (qs *Queues) Since(i int) int64 { return qs.hops[i].since }

// Lookup returns the queue of key; else, with fresh, a free one to Open;
// else -1: MaxHops other next hops are waiting.
func (qs *Queues) Lookup(key *Key) (i int, fresh bool) {
	if qs.active == 0 {
		return 0, true
	}
	free := -1
	for i := range qs.hops {
		h := &qs.hops[i]
		if h.inUse {
			if h.key == *key {
				return i, false
			}
		} else if free < 0 {
			free = i
		}
	}
	return free, free >= 0
}

// Open starts queue i (free, from Lookup) for key at now.
func (qs *Queues) Open(i int, key *Key, now int64) {
	h := &qs.hops[i]
	h.key, h.inUse, h.n, h.since = *key, true, 0, now
	qs.active++
}

// Add appends p to queue i and reports false, keeping nothing, when the
// queue is full.
func (qs *Queues) Add(i int, p *packet.Packet) bool {
	h := &qs.hops[i]
	if h.n == len(h.pkts) {
		return false
	}
	h.pkts[h.n] = p
	h.n++
	return true
}

// Hold queues p for key, opening a queue at now when key has none (fresh:
// the caller records the next hop's table entry at i). When there is no
// free queue, or key's is full, p is dropped as tooMany or queueFull and
// ok is false.
func (qs *Queues) Hold(key *Key, now int64, p *packet.Packet, st *elements.Stats, tooMany, queueFull elements.Reason) (i int, fresh, ok bool) {
	i, fresh = qs.Lookup(key)
	if i < 0 {
		st.Drop(p, tooMany)
		return i, false, false
	}
	if fresh {
		qs.Open(i, key, now)
	}
	if !qs.Add(i, p) {
		st.Drop(p, queueFull)
		return i, fresh, false
	}
	return i, fresh, true
}

// Release sends queue i's packets to mac through o (framed with hdr; those
// without room for it are dropped as noHeadroom), closes it and returns
// how many were sent.
func (qs *Queues) Release(i int, hdr *Header, mac uint64, o *Out, st *elements.Stats, noHeadroom elements.Reason) uint64 {
	h := &qs.hops[i]
	var sent uint64
	for j := 0; j < h.n; j++ {
		p := h.pkts[j]
		h.pkts[j] = nil
		if !hdr.Frame(p) {
			st.Drop(p, noHeadroom)
			continue
		}
		PutMAC(p.Data[0:6], mac)
		o.Emit(p)
		sent++
	}
	qs.close(h)
	return sent
}

// Drop frees queue i's packets under reason r, closes it and returns how
// many there were.
func (qs *Queues) Drop(i int, st *elements.Stats, r elements.Reason) uint64 {
	h := &qs.hops[i]
	n := uint64(h.n)
	for j := 0; j < h.n; j++ {
		st.Drop(h.pkts[j], r)
		h.pkts[j] = nil
	}
	qs.close(h)
	return n
}

// DropAll frees every held packet under reason r and returns how many.
func (qs *Queues) DropAll(st *elements.Stats, r elements.Reason) uint64 {
	var n uint64
	for i := range qs.hops {
		if qs.hops[i].inUse {
			n += qs.Drop(i, st, r)
		}
	}
	return n
}

func (qs *Queues) close(h *hop) {
	h.inUse, h.n = false, 0
	qs.active--
}
