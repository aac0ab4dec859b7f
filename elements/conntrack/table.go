package conntrack

import (
	"math/bits"
	"math/rand/v2"
	"runtime"
	"unsafe"

	"github.com/junction-dataplane/junction/elements"
	"github.com/junction-dataplane/junction/elements/fastgen"
	"github.com/junction-dataplane/junction/packet"
)

// Tuple identifies one direction of a flow: addresses, ports and protocol.
// Addresses are IPv4 addresses as big-endian uint32 (IPv4.SrcU32). For ICMP
// echo both ports hold the echo identifier, so that the tuple of the reply
// is the inverse of the request's; other protocols without ports use 0.
type Tuple struct {
	Src, Dst     uint32
	Sport, Dport uint16
	Proto        uint8
	_            [3]byte
}

// Inverse is the tuple of the same flow seen from the other end.
func (t Tuple) Inverse() Tuple {
	return Tuple{Src: t.Dst, Dst: t.Src, Sport: t.Dport, Dport: t.Sport, Proto: t.Proto}
}

// Fast is what FastTrackLearn learned about one direction of a flow: how a
// packet of that direction leaves the slow path. FastTrack applies it when
// Gen still equals the current generation (see Generation).
type Fast struct {
	Eth    [12]byte // Ethernet destination and source written by the slow path
	Gen    uint32   // Generation() when learned
	Out    uint8    // the FastTrack output the packet goes to (FastTrackLearn's port)
	TTLDec uint8    // how much the slow path decremented the TTL
	Valid  bool
	// Offload is FastTrack's record of handing this direction to a
	// device's own fast path (0: not handed; FastTrack's own values
	// otherwise). Reset with the rest when the entry is reused.
	Offload uint8
}

// Conn flags.
const (
	FlagAssured   = 1 << iota // seen both ways (TCP: established after a reply): never evicted to admit a flow
	FlagSeenReply             // a packet in the reply direction was seen
	FlagSNAT                  // the source is translated in the original direction
	FlagDNAT                  // the destination is translated in the original direction
	FlagSNATDone              // SNAT has decided this flow (translated or not)
	FlagDNATDone              // DNAT has decided this flow
	flagCached                // the flow cache may hold a direction of this flow (flowcache.go)
	flagLive                  // in use (else on the free list)
)

// Conn is one tracked flow: both directions' tuples (T[0] as the original
// direction's packets arrive, T[1] as the reply's arrive, which NAT alters),
// eviction list links, timeout, counters and the fast-path rewrite of
// each direction. It fits in 128 bytes (Linux's nf_conn is ~300).
type Conn struct {
	// Cache line 0: what a lookup and the tracking of a packet read and
	// write (tables are 2 MiB aligned, entries 128 bytes: two lines each).
	T [2]Tuple
	// hs holds the hash (Table.hash) each direction's tuple was linked
	// into the index with, so that an unlink (a victim's, or NAT
	// replacing the reply) finds its buckets without hashing again.
	hs      [2]uint32
	Expires int64 // monotonic nanoseconds
	Packets [2]uint32
	State   uint8 // TCP state (tcp*); 0 for other protocols
	Flags   uint8
	Dev     [2]uint8 // input device of each direction (low 8 bits of InDevice)
	// Tag tells this flow from an earlier one that used the same entry: a
	// packet annotated with a flow that was evicted later in its batch
	// (and the entry reused) no longer matches (FlowOf).
	Tag uint32
	// Cache line 1: counters, the fast paths, the list links.
	Bytes [2]uint64
	Fast  [2]Fast
	prev  uint32 // list links (unassured, assured or free list)
	nxt   uint32
}

// Has reports whether all of flags f are set.
func (c *Conn) Has(f uint8) bool { return c.Flags&f == f }

// list is a doubly linked list of entries by index (0 = none).
type list struct{ head, tail uint32 }

// Table is one worker's flow table: a fixed array of Conn (index 0 is never
// used, so that 0 can mean "none"), a bucketized hash index holding both
// directions of each entry (index.go), a free list and two lists for eviction: the
// evictable entries (unassured flows, closing TCP connections) in the order
// they became evictable, and the assured ones. Only the owning
// worker touches it, so it has no locks.
type Table struct {
	// hdr is what packets tracked here point to (packet.Ct.Table): the
	// first field, so that FlowOf turns it back into the table.
	hdr     packet.CtTable
	conns   []Conn
	buckets []ibucket
	mask    uint32
	// cacheSlots is the flow cache's size (a power of two ≥ the
	// number of nodes: one slot a node).
	cacheSlots int
	seed0      uint64
	seed1      uint64
	free       uint32
	lists      [2]list // 0: evictable (unassured or closing TCP), 1: assured
	live       int

	timeouts Timeouts
	now      func() int64
	gc       uint32 // next index the incremental garbage collector looks at

	// Event counts, read and cleared by the Conntrack element once per
	// batch (and by tests).
	Evicted, Expired, Created uint64
	relatedN                  uint64
	// evictProbes counts the entries eviction looked at (tests bound it:
	// admitting a flow into a full table is O(1)).
	evictProbes uint64

	tag uint32
	// born is a hint for eviction: born[tag & bornMask] is the entry
	// created with that tag (see evictAhead). Never trusted: an entry
	// read through it is checked (its tag) before its hashes are used,
	// and eviction itself always takes the head of the evictable list.
	born       []uint32
	bornMask   uint32
	refs       int        // Acquire references
	slot       *tableSlot // where Acquire keeps it (nil: made by NewTable)
	gen        *Generation
	configured bool // a Conntrack element set the capacity
	mem        [2]*mapping

	fc          flowCache      // FastTrack's compiled flow directions (flowcache.go)
	tw          tcpWindows     // TCP window state per entry (tcpwindow.go)
	pf          [128]uintptr   // addresses a batch pass prefetches with one call (prefetchAll)
	replyPF     [chunk]uintptr // warmNew: the bucket each new flow's reply goes to (0: none), for warmReplies
	cacheWanted bool

	t6 *Table6 // the worker's IPv6 flows (table6.go), set by Conntrack

	rebal rebalanceCounts // what a change of the worker count did (rebalance.go)
}

// NewTable returns a table for capacity flows with the given timeouts and
// clock (nil: the runtime's monotonic clock).
func NewTable(capacity int, to Timeouts, now func() int64) *Table {
	t := &Table{}
	t.configure(capacity, to, now)
	return t
}

func (t *Table) configure(capacity int, to Timeouts, now func() int64) {
	if now == nil {
		now = nanotime
	}
	capacity = max(capacity, 1)
	t.release()
	nb := indexBuckets(capacity)
	t.cacheSlots = 1 << bits.Len(uint(2*capacity-1))
	if p, m := allocRaw((capacity + 1) * int(unsafe.Sizeof(Conn{}))); p != nil {
		t.conns, t.mem[0] = unsafe.Slice((*Conn)(p), capacity+1), m
	} else {
		t.conns = make([]Conn, capacity+1)
	}
	if p, m := allocRaw(nb * int(unsafe.Sizeof(ibucket{}))); p != nil {
		t.buckets, t.mem[1] = unsafe.Slice((*ibucket)(p), nb), m
	} else {
		t.buckets = make([]ibucket, nb)
	}
	if t.mem != [2]*mapping{} {
		// A table nobody Releases (NewTable in tests) still returns
		// its mappings when it becomes garbage.
		runtime.AddCleanup(t, func(m [2]*mapping) { m[0].free(); m[1].free() }, t.mem)
	}
	t.mask = uint32(nb - 1)
	nl := 1 << bits.Len(uint(capacity-1))
	t.born = make([]uint32, nl)
	t.bornMask = uint32(nl - 1)
	if t.cacheWanted {
		t.allocCache()
	}
	t.seed0, t.seed1 = rand.Uint64()|1, rand.Uint64()
	t.timeouts, t.now = to, now
	t.lists = [2]list{}
	t.live, t.gc = 0, 1
	// Free list through nxt, in index order so that a new table fills
	// memory sequentially.
	t.free = 1
	for i := 1; i <= capacity; i++ {
		if i < capacity {
			t.conns[i].nxt = uint32(i + 1)
		}
	}
}

// release returns the table's memory if it was mapped outside the heap and
// empties the table (FlowOf then finds nothing in it).
func (t *Table) release() {
	t.conns, t.buckets, t.mask = nil, nil, 0
	t.born, t.bornMask = nil, 0
	t.releaseCache()
	t.tw.release()
	t.mem[0].free()
	t.mem[1].free()
	t.mem = [2]*mapping{}
}

// SetClock replaces the table's clock (monotonic nanoseconds); tests use it
// to move time by hand.
func (t *Table) SetClock(now func() int64) { t.now = now }

// Now reads the table's clock.
func (t *Table) Now() int64 { return t.now() }

// Timeouts returns the table's timeouts.
func (t *Table) Timeouts() *Timeouts { return &t.timeouts }

// Capacity is the number of flows the table holds.
func (t *Table) Capacity() int { return len(t.conns) - 1 }

// Len is the number of live flows (expired ones not yet collected count).
func (t *Table) Len() int { return t.live }

// Conn returns entry i (1 ≤ i ≤ Capacity).
func (t *Table) Conn(i uint32) *Conn { return &t.conns[i] }

// hash hashes a tuple with a per-table random seed, so that a sender
// cannot choose tuples that all collide: its low bits (& mask) are the
// bucket, fingerprint takes the slot's tag from it.
func (t *Table) hash(k *Tuple) uint32 {
	a := uint64(k.Src)<<32 | uint64(k.Dst)
	b := uint64(k.Sport)<<24 | uint64(k.Dport)<<8 | uint64(k.Proto)
	h, l := bits.Mul64(a^t.seed0, b^t.seed1)
	return uint32(h ^ l)
}

// hashInverse is hash(k.Inverse()), without building the tuple (warmNew
// computes it for every new flow).
func (t *Table) hashInverse(k *Tuple) uint32 {
	a := uint64(k.Dst)<<32 | uint64(k.Src)
	b := uint64(k.Dport)<<24 | uint64(k.Sport)<<8 | uint64(k.Proto)
	h, l := bits.Mul64(a^t.seed0, b^t.seed1)
	return uint32(h ^ l)
}

// Bucket returns the hash of tuple k, LookupIn's second argument (Warm
// computes it for a whole chunk).
func (t *Table) Bucket(k *Tuple) uint32 { return t.hash(k) }

// Lookup finds the entry holding tuple k in either direction. It does not
// look at expiry (Find does).
func (t *Table) Lookup(k *Tuple) (idx uint32, dir uint8, ok bool) {
	if len(t.buckets) == 0 {
		return 0, 0, false
	}
	return t.lookupIn(k, t.hash(k))
}

// Find is Lookup that treats an expired entry as absent (and removes it).
func (t *Table) Find(k *Tuple, now int64) (idx uint32, dir uint8, ok bool) {
	if len(t.buckets) == 0 {
		return 0, 0, false
	}
	return t.findIn(k, t.hash(k), now)
}

// findIn is Find in bucket h (the hash of k).
func (t *Table) findIn(k *Tuple, h uint32, now int64) (idx uint32, dir uint8, ok bool) {
	return t.findHinted(k, h, 0, now)
}

// findHinted is findIn with warmNew's answer for k (node id + 1, 0:
// none, or missHint with the gen of k's bucket), which is checked: the
// entry still holds k, or nothing was linked into k's bucket since.
func (t *Table) findHinted(k *Tuple, h, hint uint32, now int64) (idx uint32, dir uint8, ok bool) {
	switch {
	case hint >= missHint:
		if t.stillMissing(h, hint) {
			return 0, 0, false
		}
	case hint != 0:
		idx, dir = (hint-1)>>1, uint8((hint-1)&1)
		c := &t.conns[idx]
		ok = c.Flags&flagLive != 0 && c.T[dir] == *k
	}
	if !ok {
		idx, dir, ok = t.lookupIn(k, h)
	}
	if ok {
		// The slow path may change the flow: its cached directions
		// are folded in (exact expiry and counters) and dropped.
		t.uncache(idx)
	}
	if ok && now >= t.conns[idx].Expires {
		t.Delete(idx)
		t.Expired++
		return 0, 0, false
	}
	return idx, dir, ok
}

// Warm prepares the lookups of a batch's keys: it computes each key's
// hash into hs and prefetches, in two passes over the batch, the buckets
// and then the two cache lines of each entry whose fingerprint in its
// key's bucket matches (for a flow that exists, its own entry; for a new
// flow, almost never any). At 1M flows every one of those is a cache miss;
// done one packet at a time they are paid one after another (~100 ns
// each), done batch-wise they overlap. Use LookupIn with hs[i] afterwards
// (a lookup is still exact: Warm only moves memory, so flows created or
// deleted in between are seen).
func (t *Table) Warm(keys []Tuple, hs []uint32) { t.warm(keys, hs, 2, nil) }

// WarmTuples is Warm for lookups that only look for a tuple (NAT checking
// that a reply tuple is free): of an entry whose fingerprint matches it
// brings in the line with the tuples, not the counters' line, which such
// a lookup never reads (an entry that matches is one another flow owns:
// the lookup ends there).
func (t *Table) WarmTuples(keys []Tuple, hs []uint32) { t.warm(keys, hs, 1, nil) }

// warm is Warm, prefetching lines (1 or 2) of each matching entry. With
// found (Conntrack's), it also records each key its bucket shows to be
// absent (no fingerprint matches, nothing overflowed past it: most new
// flows) as warmNew would (missHint), so that warmNew does not search that
// bucket again; found[i] is 0 for the others.
func (t *Table) warm(keys []Tuple, hs []uint32, lines int, found []uint32) {
	if len(t.buckets) == 0 {
		return
	}
	hs = hs[:len(keys)]
	pf := t.pf[:0]
	for i := range keys {
		h := t.hash(&keys[i])
		hs[i] = h
		if len(pf) == cap(pf) {
			prefetchAll(pf)
			pf = pf[:0]
		}
		pf = append(pf, t.bucketAddr(h))
	}
	prefetchAll(pf)
	pf = pf[:0]
	cb := uintptr(unsafe.Pointer(&t.conns[0]))
	for i, h := range hs {
		b := &t.buckets[h&t.mask]
		m := uint32(0)
		if b.n != 0 {
			m = b.matches(fingerprint(h))
		}
		if found != nil {
			found[i] = 0
			if m == 0 && b.ovf == 0 {
				found[i] = missHint | uint32(b.gen)
			}
		}
		for ; m != 0; m &= m - 1 {
			a := cb + uintptr(b.node[bits.TrailingZeros32(m)]>>1)*unsafe.Sizeof(Conn{})
			if len(pf)+2 > cap(pf) {
				prefetchAll(pf)
				pf = pf[:0]
			}
			pf = append(pf, a)
			if lines > 1 {
				pf = append(pf, a+64)
			}
		}
		if b.ovf != 0 {
			// The key may be in the next bucket (rare: a
			// bucket overflows at ≈ 1% of a full table's).
			if len(pf) == cap(pf) {
				prefetchAll(pf)
				pf = pf[:0]
			}
			pf = append(pf, t.bucketAddr(h+1))
		}
	}
	prefetchAll(pf)
	runtime.KeepAlive(t)
}

// warmNew is Warm's third pass for Conntrack: with the buckets and their
// matching entries in cache (or on their way), it looks up every key
// warm did not already find absent and records the answers in found
// (node id + 1; missHint | the bucket's gen: not found), so that track
// does not look again while the bucket is unchanged (findHinted), and
// prepares what a new flow will touch: the
// bucket its reply tuple is linked into, and the entry Create will take
// (the free list's head, or when none is free, the unassured flow eviction
// takes, and its buckets). It only reads and prefetches: a lookup in track
// is still exact (an earlier packet of the chunk may create or delete a
// flow; track checks the hint).
func (t *Table) warmNew(keys []Tuple, hs []uint32, ok []int, found []uint32) {
	if len(t.buckets) == 0 {
		return
	}
	pf := t.pf[:0]
	cb := uintptr(unsafe.Pointer(&t.conns[0]))
	misses := 0
	for i := range keys {
		t.replyPF[i] = 0
		if ok[i] != resOK {
			found[i] = 0
			continue
		}
		if found[i] < missHint {
			// warm could not tell: look.
			if idx, dir, hit := t.lookupIn(&keys[i], hs[i]); hit {
				found[i] = idx<<1 | uint32(dir) + 1
				continue
			}
			found[i] = missHint | uint32(t.buckets[hs[i]&t.mask].gen)
		}
		misses++
		a := t.bucketAddr(t.hashInverse(&keys[i]))
		t.replyPF[i] = a
		if i < replyAhead {
			pf = append(pf, a)
		}
	}
	if misses > 0 {
		if t.free != 0 {
			pf = append(pf, cb+uintptr(t.free)*unsafe.Sizeof(Conn{}))
		} else if h := t.lists[0].head; h != 0 {
			pf = t.appendVictim(pf, h)
		}
	}
	prefetchAll(pf)
	runtime.KeepAlive(t)
}

// replyAhead is how many packets ahead of track the bucket a new flow's
// reply tuple is linked into is prefetched: warmNew prefetches the first
// replyAhead packets' and notes the others' in replyPF, and Push asks for
// them a group at a time (warmReplies) as it tracks. Issued all at once,
// a chunk's 64 prefetches wait for one another (the core keeps about ten
// misses in flight) before the first packet is tracked.
const replyAhead = 8

// warmReplies prefetches the reply buckets warmNew noted for packets i to
// j-1 of the chunk.
func (t *Table) warmReplies(i, j int) {
	pf := t.pf[:0]
	for _, a := range t.replyPF[i:j] {
		if a != 0 {
			pf = append(pf, a)
		}
	}
	if len(pf) > 0 {
		prefetchAll(pf)
	}
	runtime.KeepAlive(t)
}

// appendVictim adds to pf the memory evicting entry h will touch: its
// buckets (for the unlinks; reading them waits for h's line if it is not
// in cache yet) and both lines of the entry after it on its list
// (listRemove, and the next step of the pipeline).
func (t *Table) appendVictim(pf []uintptr, h uint32) []uintptr {
	if len(pf)+4 > cap(pf) {
		prefetchAll(pf)
		pf = pf[:0]
	}
	c := &t.conns[h]
	pf = append(pf, t.bucketAddr(c.hs[0]), t.bucketAddr(c.hs[1]))
	if c.nxt != 0 {
		// Both lines: the tuples (line 0) and the list links (line
		// 1), which the pipeline reads next and listRemove writes.
		a := uintptr(unsafe.Pointer(&t.conns[c.nxt]))
		pf = append(pf, a, a+64)
	}
	return pf
}

// LookupIn is Lookup for a key whose bucket Warm computed.
func (t *Table) LookupIn(k *Tuple, h uint32) (idx uint32, dir uint8, ok bool) {
	if len(t.buckets) == 0 {
		return 0, 0, false
	}
	return t.lookupIn(k, h)
}

func (t *Table) listAdd(which int, idx uint32) {
	l := &t.lists[which]
	c := &t.conns[idx]
	c.prev, c.nxt = l.tail, 0
	if l.tail != 0 {
		t.conns[l.tail].nxt = idx
	} else {
		l.head = idx
	}
	l.tail = idx
}

func (t *Table) listRemove(which int, idx uint32) {
	l := &t.lists[which]
	c := &t.conns[idx]
	if c.prev != 0 {
		t.conns[c.prev].nxt = c.nxt
	} else {
		l.head = c.nxt
	}
	if c.nxt != 0 {
		t.conns[c.nxt].prev = c.prev
	} else {
		l.tail = c.prev
	}
	c.prev, c.nxt = 0, 0
}

// listOf is the eviction list entry c is on: 0 (evictable) for a flow
// that is not assured or is a closing TCP connection, 1 otherwise. A flow
// moves to list 1 when it becomes assured (SetAssured) and between the two
// when its TCP state enters or leaves the closing states (setTCPState).
func listOf(c *Conn) int {
	if c.Flags&FlagAssured != 0 && !tcpClosing(c) {
		return 1
	}
	return 0
}

// tcpClosing reports whether c is a TCP connection in FIN_WAIT,
// CLOSE_WAIT, LAST_ACK, TIME_WAIT or CLOSE: one that a full table may
// evict to admit a new flow although it is assured, as Linux's early_drop
// may (tcp_can_early_drop). Otherwise a table full of closed connections,
// each waiting out its TIME_WAIT, would refuse every new flow.
func tcpClosing(c *Conn) bool { return closingTCP(c.T[0].Proto, c.State) }

// closingTCP is tcpClosing of a flow's protocol and state (both tables').
func closingTCP(proto, state uint8) bool {
	return proto == packet.ProtoTCP && state-TCPFinWait <= TCPClose-TCPFinWait
}

// setTCPState sets flow idx's TCP state and moves it to the eviction list
// the new state puts it on (an assured connection that starts closing
// joins the tail of the evictable list: O(1)).
func (t *Table) setTCPState(idx uint32, s uint8) {
	c := &t.conns[idx]
	was := listOf(c)
	c.State = s
	if l := listOf(c); l != was {
		t.listRemove(was, idx)
		t.listAdd(l, idx)
	}
}

// Create adds a flow whose original direction is k (reply: its inverse)
// and returns its index. When the table is full it evicts the oldest
// evictable flow (unassured, or a closing TCP connection); when every flow
// is assured and not closing it may reuse one only if it has expired. It
// returns ok == false when nothing could be freed: an assured live flow
// that is not closing is never evicted to admit a new one.
func (t *Table) Create(k *Tuple, now int64) (uint32, bool) {
	return t.create(k, t.hash(k), now)
}

// create is Create for a key whose hash h is known (Conntrack's lookup
// computed it).
func (t *Table) create(k *Tuple, h uint32, now int64) (uint32, bool) {
	if t.free == 0 && !t.evict(now) {
		return 0, false
	}
	idx := t.free
	c := &t.conns[idx]
	t.free = c.nxt
	*c = Conn{}
	// The reply tuple is written field by field: Inverse would build it
	// on the stack, and copying it from there reads as one 16-byte load
	// what was just stored in pieces (a store-forwarding stall).
	c.T[0] = *k
	r := &c.T[1]
	r.Src, r.Dst, r.Sport, r.Dport, r.Proto = k.Dst, k.Src, k.Dport, k.Sport, k.Proto
	c.Flags = flagLive
	c.Expires = now
	t.tag++
	if t.tag == 0 {
		t.tag = 1
	}
	c.Tag = t.tag
	t.born[t.tag&t.bornMask] = idx
	t.link(idx, 0, h)
	t.link(idx, 1, t.hashInverse(k))
	t.listAdd(0, idx)
	t.live++
	t.Created++
	return idx, true
}

// Eviction's lookahead in creation order (evictAhead): the buckets of the
// flow created aheadBuckets after the victim are prefetched, and the lines
// of the one created aheadLines after it, whose buckets a later eviction
// prefetches once those lines have arrived.
const (
	aheadBuckets = 4
	aheadLines   = 2 * aheadBuckets
)

// evictAhead prepares the memory of later evictions without walking the
// evictable list. The list is a pointer chase: the entry after the next
// victim is known only once the next victim's line has arrived, so a walk
// along it runs at most one memory latency ahead, and a batch of new flows
// in a full table evicts faster than that. But the flows a full table
// evicts are mostly unassured flows, which joined the list when they were
// created: in creation order. So the victims after h are, mostly, the
// flows created after it, and born finds those by tag without reading any
// entry between. A wrong guess (the flow was deleted or became assured;
// the entry was reused) costs a few prefetched lines, never a wrong
// eviction: the victim is always the list's head.
func (t *Table) evictAhead(h uint32) {
	tag := t.conns[h].Tag
	pf := t.pf[:0]
	if v := t.born[(tag+aheadBuckets)&t.bornMask]; v != 0 {
		// Its lines were prefetched aheadLines-aheadBuckets
		// evictions ago: reading its tag and hashes does not wait.
		if c := &t.conns[v]; c.Tag == tag+aheadBuckets && c.Flags&flagLive != 0 {
			pf = append(pf, t.bucketAddr(c.hs[0]), t.bucketAddr(c.hs[1]))
		}
	}
	if v := t.born[(tag+aheadLines)&t.bornMask]; v != 0 {
		a := uintptr(unsafe.Pointer(&t.conns[v]))
		pf = append(pf, a, a+64)
	}
	prefetchAll(pf)
}

// evictScan bounds how many assured entries Create looks at for an expired
// one when there is no unassured flow to evict (O(1) per new flow).
const evictScan = 8

func (t *Table) evict(now int64) bool {
	if h := t.lists[0].head; h != 0 {
		t.evictAhead(h)
		// Evictions take the list in order, so the memory of the
		// next ones is also prepared along it: for the entry after
		// next (whose lines the previous eviction prefetched) its
		// buckets and the lines of the entry after it. Where the
		// list is in creation order evictAhead has brought all of
		// that in already and these loads hit; where it is not
		// (closing connections joined it later) this is what
		// prepares the next victims.
		if n := t.conns[h].nxt; n != 0 {
			if m := t.conns[n].nxt; m != 0 {
				prefetchAll(t.appendVictim(t.pf[:0], m))
			}
		}
		t.evictProbes++
		t.Sync(h)
		if now < t.conns[h].Expires {
			t.Evicted++
		} else {
			t.Expired++
		}
		t.Delete(h)
		return true
	}
	for range evictScan {
		h := t.lists[1].head
		if h == 0 {
			return false
		}
		t.evictProbes++
		t.Sync(h)
		if now >= t.conns[h].Expires {
			t.Delete(h)
			t.Expired++
			return true
		}
		// Rotate: the next Create looks at other entries.
		t.listRemove(1, h)
		t.listAdd(1, h)
	}
	return false
}

// Delete removes entry idx.
func (t *Table) Delete(idx uint32) {
	c := &t.conns[idx]
	if c.Flags&flagLive == 0 {
		return
	}
	t.uncache(idx)
	t.unlink(idx, 0)
	t.unlink(idx, 1)
	t.listRemove(listOf(c), idx)
	c.Flags = 0
	c.Fast = [2]Fast{}
	c.nxt = t.free
	t.free = idx
	t.live--
}

// SetAssured marks a flow assured and moves it off the eviction list
// (unless it is a closing TCP connection, which stays evictable).
func (t *Table) SetAssured(idx uint32) {
	c := &t.conns[idx]
	if c.Flags&FlagAssured != 0 {
		return
	}
	c.Flags |= FlagAssured
	if listOf(c) == 1 {
		t.listRemove(0, idx)
		t.listAdd(1, idx)
	}
}

// SetReply changes the reply tuple of flow idx (NAT does it when it
// translates a new flow) and rehashes it. The caller made sure the new
// tuple is not in use (InUse).
func (t *Table) SetReply(idx uint32, k *Tuple) {
	t.unlink(idx, 1)
	t.conns[idx].T[1] = *k
	t.link(idx, 1, t.hash(k))
}

// ClaimReply is InUse and SetReply in one: if no live flow holds tuple k
// in either direction, it makes k the reply tuple of flow idx and returns
// true; otherwise it changes nothing. h is hash(k) (Bucket, or Warm's
// hs). The key's bucket is read once, for the lookup, and the link that
// follows writes it while it is in cache; the old reply is unlinked by
// the hash it was linked with (no hashing). NAT calls it for each
// candidate reply tuple of a new flow.
func (t *Table) ClaimReply(idx uint32, k *Tuple, h uint32) bool {
	if _, _, used := t.lookupIn(k, h); used {
		return false
	}
	t.unlinkNewest(idx, 1) // claim.go
	t.conns[idx].T[1] = *k
	t.link(idx, 1, h)
	return true
}

// InUse reports whether some live flow holds tuple k in either direction.
func (t *Table) InUse(k *Tuple) bool {
	_, _, ok := t.Lookup(k)
	return ok
}

// gcPerTick is how many entries Collect examines per call: with a tick per
// millisecond, a table of 1M flows is swept every 4 s.
const gcPerTick = 256

// Collect deletes expired flows among the next gcPerTick entries
// (round robin), so that memory of idle flows is reclaimed without a pause.
func (t *Table) Collect(now int64) {
	n := uint32(len(t.conns))
	if n <= 1 {
		return
	}
	for range min(gcPerTick, int(n-1)) {
		i := t.gc
		t.gc++
		if t.gc >= n {
			t.gc = 1
		}
		c := &t.conns[i]
		if c.Flags&flagLive != 0 && now >= c.Expires {
			t.Sync(i) // hits in the flow cache extend it
		}
		if c.Flags&flagLive != 0 && now >= c.Expires {
			t.Delete(i)
			t.Expired++
		}
	}
}

// Generation numbers the configuration FastTrack entries were learned
// under (fastgen.Generation, one per graph).
type Generation = fastgen.Generation

// GenerationOf returns the generation of ctx's graph (fastgen.Of).
func GenerationOf(ctx *elements.Context) *Generation { return fastgen.Of(ctx) }

// CtTable is what packets tracked in the table point to
// (packet.Ct.Table).
func (t *Table) CtTable() *packet.CtTable { return &t.hdr }

// Generation returns the generation the table's fast-path entries are
// learned under: its graph's (a table made by NewTable has its own).
func (t *Table) Generation() *Generation {
	if t.gen == nil {
		t.gen = &Generation{}
	}
	return t.gen
}

// FlowOf returns the table and entry a packet was annotated with by
// Conntrack, or nil if it carries none.
func FlowOf(p *packet.Packet) (*Table, *Conn) {
	h := p.Ct.Table
	if h == nil || h.V6 {
		return nil, nil
	}
	t := (*Table)(unsafe.Pointer(h)) // hdr is Table's first field
	if p.Ct.Flow == 0 || int(p.Ct.Flow) >= len(t.conns) {
		return nil, nil
	}
	c := &t.conns[p.Ct.Flow]
	if c.Flags&flagLive == 0 || c.Tag != p.Ct.Tag {
		return nil, nil
	}
	return t, c
}

// TimeoutOf is the idle timeout flow c gets from a packet now.
func (t *Table) TimeoutOf(c *Conn) int64 { return t.timeouts.of(c) }

// IsFastPathState reports whether a flow may bypass the tracker: not TCP,
// or TCP in ESTABLISHED (handshakes and closes go through the slow path).
func IsFastPathState(c *Conn) bool { return c.T[0].Proto != 6 || c.State == TCPEstablished }
