package conntrack

import (
	"math/bits"
	"runtime"
	"unsafe"

	"github.com/junction-dataplane/junction/packet"
)

// The flow cache is FastTrack's compiled copy of the flow directions it
// handles: one 64-byte line per direction holding the arrival tuple (the
// key), the whole rewrite with its checksum deltas precomputed, the
// Ethernet header (by index, see Adj), the flow's identity for the
// packet's annotation, and the hits counted since they were last folded
// into the flow. A fast-path hit then reads one cache line instead of the
// three a flow-table lookup touches (bucket, and both lines of the entry):
// at 1M flows that is one memory miss per packet instead of three, and at
// 10k flows fewer instructions.
//
// It is kept coherent by the table, which owns it: every way a flow
// changes outside the fast path goes through the table (findIn on the slow
// path, Delete, Collect, evict), and each of those first folds the flow's
// cached directions back into the Conn (packets, bytes, expiry) and, where
// the flow may change, drops them. So an entry exists only for a live,
// unchanged flow, and a Conn's counters and expiry are exact whenever
// anything but the fast path reads them (Sync folds on demand).
//
// The cache has a slot per node of the flow table (2 per flow, rounded
// up to a power of two), and each direction may sit in
// either of two slots chosen by two independent halves of a hash of its
// RawKey: slot A from the lower half,
// slot B from the upper. WarmCache prefetches A for a whole
// chunk, then B for the keys A does not hold; a hit reads one line.
// Inserting moves an occupant to its other slot when both are taken (one
// cuckoo step), and only then displaces the occupant of B, which keeps the
// flow-table path. Two choices and the step displace far fewer directions
// at a million flows than single-choice sets did (BenchmarkNATGraph's
// compiles/pkt; benchmarks/nat.md, "The flow cache").

// The cache is also what tells FastTrack that a packet is not fast-tracked
// (CacheComplete): while the worker's FastTracks share one policy, the
// tracker, which counts every packet of a flow, lists the flows it finds
// fast-trackable and those whose entries it dropped (TakePending), and
// FastTrack compiles their directions before its next lookups; displaced
// and refused directions leave a hint in their first slot. A probe that
// finds nothing at an unhinted slot is then a miss, and a flow that never
// engages costs FastTrack one probe and nothing more.

// RawKey is a flow direction's tuple as its bytes lie in an untagged
// IPv4 frame without options, each part read as one little-endian word:
//
//	A = the source and destination addresses (IPv4 header bytes 12-19)
//	B = the source and destination ports (transport bytes 0-3; for an
//	    ICMP echo its identifier, twice) | protocol<<32
//
// FastTrack reads it straight from the frame, and a flow-cache hit compares
// and hashes it as it is: no byte is swapped and no Tuple is built on the
// packet path. B == 0 is no key (no flow has protocol 0).
type RawKey struct{ A, B uint64 }

// RawKeyOf returns the raw key of tuple k.
func RawKeyOf(k *Tuple) RawKey {
	return RawKey{
		A: uint64(bits.ReverseBytes32(k.Src)) | uint64(bits.ReverseBytes32(k.Dst))<<32,
		B: uint64(bits.ReverseBytes16(k.Sport)) | uint64(bits.ReverseBytes16(k.Dport))<<16 | uint64(k.Proto)<<32,
	}
}

// ToTuple writes the tuple of raw key r to k, field by field (see
// FastTrack's parse: a Tuple literal copied whole stalls on store
// forwarding).
func (r *RawKey) ToTuple(k *Tuple) {
	k.Src, k.Dst = bits.ReverseBytes32(uint32(r.A)), bits.ReverseBytes32(uint32(r.A>>32))
	k.Sport, k.Dport = bits.ReverseBytes16(uint16(r.B)), bits.ReverseBytes16(uint16(r.B>>16))
	k.Proto = uint8(r.B >> 32)
}

// CacheEntry is one flow direction compiled for the fast path. Its first
// 13 bytes are the key, a RawKey's A and the low 5 bytes of its B (the
// layout CacheMatch reads), and the rewrite is kept in frame byte order
// too, so that a hit stores it without swapping bytes.
type CacheEntry struct {
	Addrs  uint64 // RawKey.A: the addresses as the packet arrives
	Ports  uint32 // RawKey.B's ports
	Proto  uint8  // RawKey.B's protocol (0: empty slot)
	Out    uint8  // FastTrack output
	TTLDec uint8
	Bits   uint8 // CacheDir | CacheEstablished | timeout class<<cacheClassShift

	Idx, Tag uint32 // the flow and its Tag

	// The rewrite: the addresses and ports after it, as RawKey's A and
	// B hold them (for ICMP echo the identifier in the low 16 bits), and
	// the sums it adds to the IPv4 and L4 checksums (packet.FlowDeltas),
	// byte-swapped like everything here: a hit adds them to the
	// checksums as the frame holds them (packet.AddOnes).
	NAddrs       uint64
	NPorts       uint32
	IPSum, L4Sum uint16
	Gen          uint32 // the Generation the rewrite is valid for
	Adj          uint16 // Ethernet header (Table.Adj)
	// A hit's annotation State and Dir (packet.Ct), precomputed.
	CtState, CtDir uint8

	Pkts, Bytes uint32 // hits not yet folded into the flow
	Deadline    int64  // the flow expires at Deadline unless hit again (monotonic ns)
}

// CacheEntry bits.
const (
	CacheDir         = 1 << 0 // the direction (Conn.T index)
	CacheEstablished = 1 << 1 // the flow has seen a reply (annotation CtEstablished)
	cacheClassShift  = 2      // 3 bits: index into the table's timeout classes
	cacheClasses     = 8
	// cacheHint and cacheSpill belong to the slot, not the entry in it
	// (slotBits: every write keeps them). cacheHint: see hint.
	// cacheSpill: some direction whose first slot this is was put in
	// its second; without it, a key that this slot does not hold is not
	// cached at all, and its second slot need not be read.
	cacheHint  = 1 << 7
	cacheSpill = 1 << 6
	slotBits   = cacheHint | cacheSpill
	// CacheFoldAt is the Bytes count at which a hit folds the entry at
	// once, so that the 32-bit counters never wrap (Pkts ≤ Bytes/28).
	CacheFoldAt = 1 << 31
)

// flowCache is a table's cache (nil slices when disabled).
type flowCache struct {
	e    []CacheEntry
	mask uint32 // len(e)-1
	mem  *mapping
	// Timeout of each class: what a hit adds to now (FastTrack's
	// idle_timeout, or the tracker's timeout for the flow's state when
	// it was compiled).
	ctos [cacheClasses]int64
	ncto int
	// Ethernet headers by index, and the reverse map (compile only).
	adj    [][12]byte
	adjIdx map[[12]byte]uint16
	adjGen uint32
	// The index each output's last compile found: the flows leaving by
	// one output mostly share its next hop (a gateway's upstream
	// router), and the map lookup hashes 12 bytes.
	adjHot [256]uint16
	n      int // occupied slots
	Stats  CacheStats

	// The fast-track policy of the worker's FastTracks that use the
	// cache (AddFastPolicy). With one policy the cache is complete
	// (CacheComplete): the tracker lists the flows that may have become
	// fast-trackable (pend), FastTrack compiles them before its next
	// lookups, and a slot's hint bit marks where that could not be done.
	policy   FastPolicy
	policies int
	mixed    bool // FastTracks with different policies: the cache is not complete
	complete bool // policies != 0, !mixed and a cache: see setComplete
	pend     [pendCap]PendingFlow
	npend    int
	hints    int // hint bits ever set since the cache was allocated
}

// pendCap bounds the pending list: two entries per packet of a 64-packet
// chunk; more (several tracker passes between two FastTrack passes) fall
// back to hints.
const pendCap = 128

// PendingFlow is a flow the tracker handled that may have a direction
// fast-trackable and not cached (TakePending).
type PendingFlow struct{ Idx, Tag uint32 }

// CacheStats counts cache events; the Conntrack element reports and
// clears Replaced and Refused (FastTrack counts its own compiles).
type CacheStats struct {
	Replaced, Refused uint64
}

// FastPolicy is when a FastTrack fast-tracks a flow direction that
// FastTrackLearn learned (its keys after, policy and idle_timeout).
type FastPolicy struct {
	After uint32 // packets of the flow, both directions, counted first (Conn.Packets)
	Both  bool   // only once a reply was seen (both-directions)
	Idle  int64  // the timeout a hit gives (0: the tracker's for the flow's state)
}

// FlowEligible reports whether flow c's learned directions may take the
// fast path under policy p: it has counted After packets (the tracker
// counts every packet it handles, and a fast-path hit is counted where it
// is folded in: each packet once), has seen a reply if Both, and is not a
// TCP flow outside ESTABLISHED. The direction's own conditions (learned
// for the current generation, the packet's TTL and ICMP type) and expiry
// are the caller's.
func (p *FastPolicy) FlowEligible(c *Conn) bool {
	return c.Packets[0]+c.Packets[1] >= p.After && (!p.Both || c.Flags&FlagSeenReply != 0) && IsFastPathState(c)
}

// AddFastPolicy registers the policy of a FastTrack that uses the flow
// cache; RemoveFastPolicy (in its Close) undoes it. While every registered
// FastTrack has the same policy, CompilePolicy returns it.
func (t *Table) AddFastPolicy(p FastPolicy) {
	fc := &t.fc
	if fc.policies == 0 {
		fc.policy, fc.mixed = p, false
	} else if p != fc.policy {
		fc.mixed = true
	}
	fc.policies++
	t.setComplete()
}

// setComplete recomputes fc.complete, which the tracker tests for every
// packet (CompilePolicy's condition as one flag).
func (t *Table) setComplete() {
	fc := &t.fc
	fc.complete = fc.policies != 0 && !fc.mixed && len(fc.e) != 0
}

// RemoveFastPolicy drops a registration of AddFastPolicy.
func (t *Table) RemoveFastPolicy() {
	if t.fc.policies > 0 {
		t.fc.policies--
	}
	if t.fc.policies == 0 {
		t.fc.mixed = false
	}
	t.setComplete()
}

// CompilePolicy returns the policy of the FastTracks using the cache, or
// nil when the cache is not complete: no cache, no FastTrack using it, or
// FastTracks with different policies (each then looks a flow the cache does
// not hold up in the flow table, as it did before the cache was complete).
func (t *Table) CompilePolicy() *FastPolicy {
	if !t.fc.complete {
		return nil
	}
	return &t.fc.policy
}

// CacheComplete reports whether every flow direction that is
// fast-trackable under CompilePolicy is in the cache, or pending
// (TakePending), or hinted at its first slot (CacheHinted): then a packet
// whose direction the cache does not hold, at an unhinted slot, is a miss
// without a look at the flow table. Everything that can make a direction
// fast-trackable happens to a flow the tracker handles (learning it on the
// slow path, the packet count reaching after, the first reply, TCP
// reaching ESTABLISHED, relearning in a new generation), and every way a
// cached direction leaves the cache while its flow lives goes through the
// tracker (which lists the flow) or is a displacement or refusal (which
// hints it).
func (t *Table) CacheComplete() bool { return t.CompilePolicy() != nil }

// CacheEmpty reports whether the cache holds nothing and has no hint: no
// packet can then hit, and none needs the flow table.
func (t *Table) CacheEmpty() bool { return t.fc.n == 0 && t.fc.hints == 0 }

// PendingN is the number of flows TakePending would return.
func (t *Table) PendingN() int { return t.fc.npend }

// TakePending returns the flows listed since the last call, and empties the
// list; the slice is the table's, valid until the tracker runs again.
func (t *Table) TakePending() []PendingFlow {
	p := t.fc.pend[:t.fc.npend]
	t.fc.npend = 0
	return p
}

// WarmPending prefetches, for the flows of p (TakePending's list) that are
// fast-trackable under the cache's policy, the first slot of each learned
// direction of generation gen: the line compiling it writes. A batch of
// new TCP connections reaching ESTABLISHED lists many flows at once, each
// direction's slot a cold line; compiled one after the other, each waited
// for its own.
func (t *Table) WarmPending(p []PendingFlow, gen uint32) {
	if len(t.fc.e) == 0 {
		return
	}
	pf := t.pf[:0]
	for _, f := range p {
		c := t.Live(f.Idx, f.Tag)
		if c == nil || !t.fc.policy.FlowEligible(c) {
			continue
		}
		for d := range 2 {
			if fd := &c.Fast[d]; fd.Valid && fd.Gen == gen {
				k := RawKeyOf(&c.T[d])
				a, _ := t.cacheSlotsOf(&k)
				if len(pf) == cap(pf) {
					prefetchAll(pf)
					pf = pf[:0]
				}
				pf = append(pf, uintptr(unsafe.Pointer(a)))
			}
		}
	}
	prefetchAll(pf)
	runtime.KeepAlive(t)
}

// Live returns flow idx if it is still the flow of tag tag, else nil.
func (t *Table) Live(idx, tag uint32) *Conn {
	if int(idx) >= len(t.conns) {
		return nil
	}
	c := &t.conns[idx]
	if c.Flags&flagLive == 0 || c.Tag != tag {
		return nil
	}
	return c
}

// pending lists flow idx for FastTrack's next pass (see CacheComplete), or
// hints its directions when the list is full. The check is inlined: the
// tracker calls it for every flow it finds fast-trackable.
func (t *Table) pending(idx uint32) {
	if t.fc.complete {
		t.addPending(idx)
	}
}

func (t *Table) addPending(idx uint32) {
	fc := &t.fc
	if fc.npend > 0 && fc.pend[fc.npend-1].Idx == idx {
		return
	}
	if fc.npend == pendCap {
		c := &t.conns[idx]
		for d := range 2 {
			k := RawKeyOf(&c.T[d])
			t.hint(&k)
		}
		return
	}
	fc.pend[fc.npend] = PendingFlow{Idx: idx, Tag: t.conns[idx].Tag}
	fc.npend++
}

// hint marks the first slot of raw key k: a direction whose first slot it
// is may be fast-trackable without being cached, so FastTrack looks a
// packet that misses there up in the flow table. A hint stays until the
// cache is allocated again.
func (t *Table) hint(k *RawKey) {
	a, _ := t.cacheSlotsOf(k)
	if a.Bits&cacheHint == 0 {
		a.Bits |= cacheHint
		t.fc.hints++
	}
}

// CacheHints reports whether any slot carries a hint (CacheHinted).
func (t *Table) CacheHints() bool { return t.fc.hints != 0 }

// CacheHinted reports whether the first slot of the key whose hash WarmCache
// computed as x carries a hint (a probe read that line already).
func (t *Table) CacheHinted(x uint64) bool {
	return t.fc.e[uint32(x)&t.fc.mask].Bits&cacheHint != 0
}

// Cached reports whether direction dir of flow idx is in the cache.
func (t *Table) Cached(idx uint32, dir uint8) bool {
	return t.conns[idx].Flags&flagCached != 0 && t.cacheFind(idx, dir) != nil
}

// InCache reports whether the flow cache may hold a direction of c.
func (c *Conn) InCache() bool { return c.Flags&flagCached != 0 }

// EnableCache gives the table a flow cache (FastTrack calls it; a table
// used without FastTrack never has one). It is allocated now if the table
// is configured, else when it is.
func (t *Table) EnableCache() {
	t.cacheWanted = true
	if len(t.buckets) > 0 && t.fc.e == nil {
		t.allocCache()
	}
}

// CacheEnabled reports whether the table has a flow cache.
func (t *Table) CacheEnabled() bool { return t.fc.e != nil }

func (t *Table) allocCache() {
	n := max(t.cacheSlots, 2) // a power of two ≥ 2: one slot a node
	if p, m := allocRaw(n * int(unsafe.Sizeof(CacheEntry{}))); p != nil {
		t.fc.e, t.fc.mem = unsafe.Slice((*CacheEntry)(p), n), m
		runtime.AddCleanup(t, func(m *mapping) { m.free() }, m)
	} else {
		t.fc.e = make([]CacheEntry, n)
	}
	t.fc.mask = uint32(n - 1)
	t.fc.ncto = 0
	t.fc.adj, t.fc.adjIdx = nil, nil
	t.fc.n, t.fc.hints, t.fc.npend = 0, 0, 0
	t.setComplete()
}

func (t *Table) releaseCache() {
	t.fc.e, t.fc.n, t.fc.hints, t.fc.npend = nil, 0, 0, 0
	t.setComplete()
	t.fc.mem.free()
	t.fc.mem = nil
}

// cacheHash is the hash of a raw key that picks its two slots.
func (t *Table) cacheHash(r *RawKey) uint64 {
	h, l := bits.Mul64(r.A^t.seed0, r.B^t.seed1)
	return h ^ l
}

// WarmCache finds where each raw key's entry would be and brings it in:
// slots[i] is keys[i]'s first slot if that holds it or no direction of that
// first slot spilled to its second, else its second (which may not hold
// it either: CacheMatch decides), and hx is scratch for the hashes. So a
// key that is not cached costs one line, unless its first slot spilled. It works in two passes over the chunk so that the misses overlap:
// it prefetches every key's first slot, then, as those lines arrive, the
// second slot of the keys whose first slot does not hold them. A direction
// goes to its second slot only when its first was taken, so at the load of
// 1M flows in 4M slots about one in eight lives there (an estimate: the
// first slot's mean occupancy while the table filled), and a packet costs
// ~1.1 memory lines instead of the 2 that prefetching both slots took
// (the measurement: benchmarks/nat.md, "two-stage prefetch"). Keys with
// B == 0 (not eligible) are skipped.
//
// The slots stay right while the caller only updates the counters of
// entries that matched: anything that moves or replaces an entry
// (CompileCache, the table's coherence hooks) invalidates them.
func (t *Table) WarmCache(keys []RawKey, hx []uint64, slots []*CacheEntry) {
	if len(t.fc.e) == 0 {
		return
	}
	hx, slots = hx[:len(keys)], slots[:len(keys)]
	e := t.fc.e
	base := uintptr(unsafe.Pointer(&e[0]))
	const size = unsafe.Sizeof(CacheEntry{})
	m := t.fc.mask
	pf := t.pf[:0]
	for i := range keys {
		if keys[i].B == 0 {
			continue
		}
		x := t.cacheHash(&keys[i])
		hx[i] = x
		if len(pf) == cap(pf) {
			prefetchAll(pf)
			pf = pf[:0]
		}
		pf = append(pf, base+uintptr(uint32(x)&m)*size)
	}
	prefetchAll(pf)
	pf = pf[:0]
	for i := range keys {
		if keys[i].B == 0 {
			continue
		}
		a := &e[uint32(hx[i])&m]
		if CacheMatch(a, &keys[i]) || a.Bits&cacheSpill == 0 {
			slots[i] = a // holds it, or nothing is in the second slot
			continue
		}
		b := uint32(hx[i]>>32) & m
		slots[i] = &e[b]
		if len(pf) == cap(pf) {
			prefetchAll(pf)
			pf = pf[:0]
		}
		pf = append(pf, base+uintptr(b)*size)
	}
	prefetchAll(pf)
	runtime.KeepAlive(t)
}

// cacheSlotsOf returns the two slots the direction of raw key r may
// occupy: the lower half of its hash picks the first, the upper half the
// second (WarmCache computes the same for a chunk).
func (t *Table) cacheSlotsOf(r *RawKey) (a, b *CacheEntry) {
	x, m := t.cacheHash(r), t.fc.mask
	return &t.fc.e[uint32(x)&m], &t.fc.e[uint32(x>>32)&m]
}

// CacheMatch reports whether entry e holds raw key r.
func CacheMatch(e *CacheEntry, r *RawKey) bool {
	// The addresses, then ports and protocol: two loads compare the key.
	w := (*[2]uint64)(unsafe.Pointer(e))
	return w[0] == r.A && (w[1]^r.B)&0xff_ffff_ffff == 0
}

// key returns the raw key entry e holds.
func (e *CacheEntry) key() RawKey {
	return RawKey{A: e.Addrs, B: uint64(e.Ports) | uint64(e.Proto)<<32}
}

// CacheTimeout returns the timeout of e's class: what a hit adds to now.
func (t *Table) CacheTimeout(e *CacheEntry) int64 {
	return t.fc.ctos[(e.Bits>>cacheClassShift)&(cacheClasses-1)]
}

// Adj returns the Ethernet header of index i.
func (t *Table) Adj(i uint16) *[12]byte { return &t.fc.adj[i] }

// CompileCache installs e (whose Out, TTLDec, rewrite and Gen the caller
// filled) for direction dir of flow idx: it sets the key, Idx, Tag, the
// timeout class for timeout, the Ethernet header eth, the established bit
// and the annotation bytes, and resets the counters. It returns false when the entry cannot be cached (no cache,
// too many distinct timeouts or Ethernet headers); the flow then keeps
// taking the flow-table path.
func (t *Table) CompileCache(e CacheEntry, idx uint32, dir uint8, eth *[12]byte, timeout int64) bool {
	fc := &t.fc
	if len(fc.e) == 0 {
		return false
	}
	c := &t.conns[idx]
	class := -1
	for i := range fc.ncto {
		if fc.ctos[i] == timeout {
			class = i
			break
		}
	}
	if class < 0 {
		if fc.ncto == cacheClasses {
			fc.Stats.Refused++
			k := RawKeyOf(&c.T[dir])
			t.hint(&k) // FastTrack keeps the flow-table path for it
			return false
		}
		class = fc.ncto
		fc.ctos[class] = timeout
		fc.ncto++
	}
	// Ethernet headers: indices are valid for one generation; a new
	// generation (route, NAT or neighbour change) starts the list
	// again, which keeps it bounded by the neighbours in use.
	if fc.adjIdx == nil || fc.adjGen != e.Gen {
		fc.adj, fc.adjIdx, fc.adjGen = fc.adj[:0], map[[12]byte]uint16{}, e.Gen
	}
	a := fc.adjHot[e.Out]
	ok := int(a) < len(fc.adj) && fc.adj[a] == *eth
	if !ok {
		a, ok = fc.adjIdx[*eth]
	}
	if !ok {
		if len(fc.adj) >= 1<<16 {
			fc.Stats.Refused++
			k := RawKeyOf(&c.T[dir])
			t.hint(&k)
			return false
		}
		a = uint16(len(fc.adj))
		fc.adj = append(fc.adj, *eth)
		fc.adjIdx[*eth] = a
	}
	fc.adjHot[e.Out] = a
	e.Adj = a
	e.Idx, e.Tag = idx, c.Tag
	e.Bits = dir&CacheDir | uint8(class)<<cacheClassShift
	e.CtState, e.CtDir = packet.CtNew, dir&CacheDir
	if c.Flags&FlagSeenReply != 0 {
		e.Bits |= CacheEstablished
		e.CtState = packet.CtEstablished
	}
	e.Pkts, e.Bytes = 0, 0
	e.Deadline = c.Expires
	k := RawKeyOf(&c.T[dir])
	e.Addrs, e.Ports, e.Proto = k.A, uint32(k.B), uint8(k.B>>32)
	sa, sb := t.cacheSlotsOf(&k)
	var w *CacheEntry
	switch {
	case CacheMatch(sa, &k):
		w = sa
		t.FoldCache(sa) // an earlier compile of the same direction
	case sa.Proto == 0 && sa.Bits&cacheSpill == 0:
		// Free, and k is not in its second slot (it would have
		// set the spill bit): that line need not be read.
		w = sa
	case CacheMatch(sb, &k):
		w = sb
		t.FoldCache(sb)
	case sa.Proto == 0:
		w = sa
	case sb.Proto == 0:
		w = sb
	case t.cacheMove(sa):
		w = sa
	case t.cacheMove(sb):
		w = sb
	default:
		// All four candidate places taken: B's occupant gives way,
		// and keeps the flow-table path (a hint at its first slot).
		t.FoldCache(sb)
		fc.Stats.Replaced++
		o := sb.key()
		t.hint(&o)
		w = sb
	}
	if w.Proto == 0 {
		fc.n++
	}
	if w != sa {
		sa.Bits |= cacheSpill
	}
	e.Bits |= w.Bits & slotBits
	*w = e
	c.Flags |= flagCached
	return true
}

// cacheMove moves the entry in slot s to its other slot if that is free.
func (t *Table) cacheMove(s *CacheEntry) bool {
	k := s.key()
	a, b := t.cacheSlotsOf(&k)
	o := a
	if a == s {
		o = b
	}
	if o == s || o.Proto != 0 {
		return false
	}
	ho, hs := o.Bits&slotBits, s.Bits&slotBits
	*o = *s
	o.Bits = o.Bits&^slotBits | ho
	*s = CacheEntry{Bits: hs}
	if o == b {
		s.Bits |= cacheSpill // s is the entry's first slot
	}
	return true
}

// FoldCache adds an entry's counters to its flow and moves the flow's
// expiry to the entry's deadline if later; the entry stays. FastTrack
// calls it when a hit's byte count reaches CacheFoldAt.
func (t *Table) FoldCache(e *CacheEntry) {
	c := &t.conns[e.Idx]
	if c.Tag != e.Tag || c.Flags&flagLive == 0 {
		return // cannot happen: Delete drops a flow's entries
	}
	d := e.Bits & CacheDir
	c.Packets[d] += e.Pkts
	c.Bytes[d] += uint64(e.Bytes)
	e.Pkts, e.Bytes = 0, 0
	if e.Deadline > c.Expires {
		c.Expires = e.Deadline
	}
}

// cacheFind returns flow idx's cache entry for direction d, or nil. The
// second slot is read only when the first has its spill bit (as in
// WarmCache): a line fewer for a direction that is not cached.
func (t *Table) cacheFind(idx uint32, d uint8) *CacheEntry {
	k := RawKeyOf(&t.conns[idx].T[d])
	a, b := t.cacheSlotsOf(&k)
	for _, e := range [2]*CacheEntry{a, b} {
		if e.Proto != 0 && e.Idx == idx && e.Bits&CacheDir == d && CacheMatch(e, &k) {
			return e
		}
		if a.Bits&cacheSpill == 0 {
			return nil
		}
	}
	return nil
}

// Sync folds flow idx's cached directions into it (its counters and
// expiry are then exact); the entries stay. The check is inlined: the
// slow path calls it for every flow it finds.
func (t *Table) Sync(idx uint32) {
	if t.conns[idx].Flags&flagCached != 0 {
		t.sync(idx)
	}
}

func (t *Table) sync(idx uint32) {
	for d := range uint8(2) {
		if e := t.cacheFind(idx, d); e != nil {
			t.FoldCache(e)
		}
	}
}

// uncache folds and drops flow idx's cached directions: the flow is about
// to change (or go). The check is inlined (see Sync).
func (t *Table) uncache(idx uint32) {
	if t.conns[idx].Flags&flagCached != 0 {
		t.drop(idx)
	}
}

func (t *Table) drop(idx uint32) {
	c := &t.conns[idx]
	for d := range uint8(2) {
		if e := t.cacheFind(idx, d); e != nil {
			t.FoldCache(e)
			*e = CacheEntry{Bits: e.Bits & slotBits}
			t.fc.n--
		}
	}
	c.Flags &^= flagCached
	// The flow may still be fast-trackable after the change (or the
	// packet that caused it may not be counted: TCP state, ICMP
	// error): FastTrack's next pass looks.
	t.pending(idx)
}
