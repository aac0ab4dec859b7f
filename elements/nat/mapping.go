package nat

import (
	"math/rand/v2"
	"slices"
	"sync/atomic"
	"unsafe"

	"github.com/junction-dataplane/junction/elements/conntrack"
	"github.com/junction-dataplane/junction/elements/flowsteer"
	"github.com/junction-dataplane/junction/packet"
)

// Endpoint-independent mapping (RFC 4787 REQ-1, RFC 5382 REQ-1): an inside
// endpoint (address and port) is given one outside endpoint, used for
// every flow it opens whatever the destination, kept while a flow of it
// is tracked and for a timeout after (RFC 4787 REQ-5, RFC 5382 REQ-5).
//
// Each outside port belongs to one worker (flowsteer.Port); FromDevice
// steers a masqueraded flow's packets from the inside by the source port's
// owner and the packets to an outside port by that port's owner
// (flowsteer's Masq). So every flow of an inside endpoint is decided by
// one worker, the owner of its port, which holds its mapping and gives it
// outside ports it owns: the inside port itself when it is free (port
// preservation), else a free port of the same parity (RFC 4787 REQ-3/4):
// first a few drawn from the inside endpoint (the same after a restart),
// then from the free stack, else any free port of its own. The mappings are a table per outside
// address and protocol, indexed by port (32 bytes a port:
// an 8-byte word and 24 bytes of metadata in one entry, half a line;
// written only by the port's owner); an inside endpoint
// whose mapping is
// not its own port is found through the worker's index (epIndex). The
// free ports of each worker are two stacks (even, odd), shuffled at start,
// so that ports handed out are not predictable beyond the kept ones.
//
// A new mapping reads and writes as few random lines as it can (each is
// a miss shared with Conntrack's, prefetched or not). Each worker keeps,
// per table, a bit per port saying whether the port is mapped
// (mapTable.used: the word's wordUsed bit, for the ports it owns) and
// one saying whether it is on its free stack (onStack): 1 KiB each per
// 8,192 ports, small enough to stay in cache. The candidate ports of a
// new mapping are checked in the first instead of in their words. A port
// that leaves the free ports other than by a pop (kept by its endpoint,
// or drawn) stays on its stack, counted out of the free ports
// (mapWorker.nfree): pop drops it while it is mapped, and when its
// mapping ends it is free again where it stands (a table of each port's
// place in its stack, read and rewritten so as to move the stack's top
// into the hole, cost three random lines a mapping). Once they are as many
// as a stack's free ports, one sequential pass drops them (tidy), so that
// pops do not step over them one by one.
//
// A mapping ends lazily: when a worker needs a port and has none free, it
// looks at a few of its mappings (reclaimPerTry) and frees those whose
// timeout has passed and whose last bound flow is gone from Conntrack.
// When no port can be had, the flow falls back to a port chosen per
// destination (the walk of snatports.go, among this worker's ports),
// counted as "mapping fallback": a full table degrades to Linux's
// behaviour instead of refusing flows.

// Filtering behaviours (RFC 4787 section 5, REQ-8; RFC 5382 REQ-3).
const (
	// filterAPD: only replies of existing flows come in (Linux's
	// masquerade; Conntrack alone decides).
	filterAPD = iota
	// filterAD: a new flow from a remote address the mapping has sent
	// to is let in (DNAT binds it to the inside endpoint).
	filterAD
	// filterEI (endpoint-independent, index 2 of filterNames): any new
	// flow to the mapping is let in.
)

var filterNames = []string{"address-and-port-dependent", "address-dependent", "endpoint-independent"}

// reclaimPerTry bounds the mappings one allocation looks at to free some:
// it runs only when the worker has no free port.
const reclaimPerTry = 16

// A port's mapping is one 32-byte entry (portEntry), a word and
// metadata, so that making a mapping, binding a flow to it or looking it
// up reads and writes one line (the word had a table of its own, 8 bytes a
// port, so that the look-up of an inside port read a table that would stay
// in cache; since the filter and the worker's bitmaps, few reads want the
// word alone, and every new mapping wrote two lines). The word holds the
// inside endpoint: address<<32 | port<<16, bit 0 set while the mapping
// exists, bits 1-15 zero. (They counted the mappings
// of inside port this port that are in the worker's index, so that a
// look-up whose word did not match skipped the index when the count was
// 0; since the filter, an endpoint without a mapping rarely gets that far,
// and keeping the count wrote the inside port's word, a line of its
// own, for every mapping that did not keep its port, and again when it
// ended.) It is written by the port's owner only and read by show nat
// on another goroutine (atomic). The rest (portMeta, 24 bytes) is the
// owner's; show nat reads it as Conntrack's listing reads flows: copied,
// then the word read again.
const (
	wordUsed = 1
	endpoint = ^uint64(0xfffe)
)

// portEntry is a port's mapping: 32 bytes, and the tables are cut
// 64-byte aligned, so an entry is never split between two lines.
type portEntry struct {
	word atomic.Uint64
	portMeta
}

// An entry is 32 bytes (a compile-time check).
const _ = uint(unsafe.Sizeof(portEntry{})-32) + uint(32-unsafe.Sizeof(portEntry{}))

type portMeta struct {
	// since is when (Conntrack's clock >> 30, about seconds) the
	// mapping was made.
	since uint32
	// remote holds the last two remote addresses the mapping sent to
	// (address-dependent filtering).
	remote [2]uint32
	// ref and tag name the last flow bound to the mapping.
	ref, tag uint32
	// until is when (Conntrack's clock >> 30, about seconds) the
	// mapping may end if no flow of it is tracked. In the same entry as
	// the rest (24 bytes), so that a new mapping, and a flow bound to
	// one, writes one line of metadata, not two.
	until uint32
}

// mapStore is an SNAT element's mappings, shared by its workers'
// instances.
type mapStore struct {
	addrs     []uint32
	lo, hi    uint16
	workers   int
	filtering int
	timeout   [2]uint32 // tcp, udp: in clock >> 30 units
	// ents[proto][address][port-lo] (proto: 0 TCP, 1 UDP).
	ents [2][][]portEntry
	mw   []*mapWorker
	masq *flowsteer.Masq // published steering (nil: one worker, none needed)
	name string
	mem  *hugeMem // where the tables are cut from (nil: the Go heap)
	// inside: the networks whose hosts reach each other's mappings
	// (hairpinning).
	inside []flowsteer.Prefix
	// block > 0: deterministic port blocks of that many ports
	// (portblock.go); units[w] lists the units of the range w owns.
	block int
	bulk  bool // blocks taken and given back (portbulk.go), not fixed
	units [][]uint16
	refs  atomic.Int32 // instances holding the store (the last to close frees mem)
}

// mapWorker is one worker's side: its free ports and its index.
type mapWorker struct {
	// free[proto][address][parity]: the free stacks, which also hold
	// ports taken out of order (mapped: skipped by pop, dropped by
	// tidy); nfree the free ports on each.
	free  [2][][2][]uint16
	nfree [2][][2]int
	// used, onStack [proto][address]: a bit per port of the range (its
	// offset), for the ports this worker owns: mapped; on its free
	// stack.
	used, onStack [2][][]uint64
	sweep         [2][]uint32 // [proto][address]: reclaim cursor (offset in the range)
	// dry[proto][address]: until when (clock >> 30) not to look for
	// mappings to free, after a look found none (a table full of live
	// mappings costs its new flows no walk).
	dry [2][]uint32
	// idx[proto]: the index of the mappings that did not keep their
	// port.
	idx   [2]epIndex
	filt  mapFilter
	owned int
	// releases counts the mappings ended (release), the only way a
	// port becomes free again: a guess's draws found mapped stay
	// mapped while it is unchanged (allocate).
	releases uint32
	w        int      // the worker
	mem      *hugeMem // the index's and the filter's memory
	// tabs[proto][address]: the worker's view of each table, made once
	// (a new flow takes a pointer instead of copying five slices).
	tabs [2][]mapTable
	// Port blocks (portblock.go): a bit per host whose block on this
	// worker has been used (noted for the log), and the first uses
	// noted since the last Tick.
	blockLogged []uint64
	uses        []blockUse
	nuses       int
	bulk        *bulkBlocks // bulk blocks (portbulk.go), or nil
}

// mapTable is one address and protocol's part of a store.
type mapTable struct {
	ents    []portEntry
	free    *[2][]uint16
	nfree   *[2]int
	used    []uint64
	onStack []uint64
	pi      int
	ai      int
	// ends: no mapping of the table may end before it (clock >> 30):
	// the lowest timeout end (portMeta.until) ever written through
	// this view, the worker's (^0: none; 0 in a view for reading), so
	// that while the clock is below it no mapping's metadata need be
	// read to know that it has not ended.
	ends uint32
}

func protoIndex(proto uint8) int {
	if proto == packet.ProtoUDP {
		return 1
	}
	return 0
}

func newMapStore(name string, addrs []uint32, lo, hi uint16, workers, filtering int, timeout [2]uint32) *mapStore {
	s := &mapStore{addrs: addrs, lo: lo, hi: hi, workers: workers, filtering: filtering, timeout: timeout, name: name}
	span := int(hi-lo) + 1
	s.mem = newHugeMem(2 * len(addrs) * (span*int(unsafe.Sizeof(portEntry{})) + 64))
	for pi := range s.ents {
		s.ents[pi] = make([][]portEntry, len(addrs))
		for ai := range addrs {
			s.ents[pi][ai] = cut[portEntry](s.mem, span)
		}
	}
	s.mw = make([]*mapWorker, workers)
	return s
}

// table returns worker m's view of address ai and protocol pi (m nil:
// without the free ports, for reading).
func (s *mapStore) table(m *mapWorker, pi, ai int) mapTable {
	t := mapTable{ents: s.ents[pi][ai], pi: pi, ai: ai}
	if m != nil {
		t.free, t.nfree = &m.free[pi][ai], &m.nfree[pi][ai]
		t.used, t.onStack = m.used[pi][ai], m.onStack[pi][ai]
		t.ends = ^uint32(0)
	}
	return t
}

// worker builds worker w's side (its instance calls it): the ports it owns
// go on its free stacks, shuffled, except those that are a DNAT rule's
// public endpoint.
func (s *mapStore) worker(w int, steer *flowsteer.Table) *mapWorker {
	if s.mw[w] != nil {
		return s.mw[w]
	}
	m := &mapWorker{w: w}
	span := int(s.hi-s.lo) + 1
	m.mem = newHugeMem(2*epIndexBytes(s.ownedMax(w)/2) + filterBytes(s.ownedMax(w)) + 2*2*len(s.addrs)*(bitmapBytes(span)+64) + 256)
	for pi := range m.free {
		proto := uint8(packet.ProtoTCP)
		if pi == 1 {
			proto = packet.ProtoUDP
		}
		m.free[pi] = make([][2][]uint16, len(s.addrs))
		m.nfree[pi] = make([][2]int, len(s.addrs))
		m.used[pi] = make([][]uint64, len(s.addrs))
		m.onStack[pi] = make([][]uint64, len(s.addrs))
		m.sweep[pi] = make([]uint32, len(s.addrs))
		m.dry[pi] = make([]uint32, len(s.addrs))
		for ai, a := range s.addrs {
			m.used[pi][ai] = cut[uint64](m.mem, bitmapBytes(span)/8)
			m.onStack[pi][ai] = cut[uint64](m.mem, bitmapBytes(span)/8)
			stk := m.onStack[pi][ai]
			for p := int(s.lo); p <= int(s.hi); p++ {
				port := uint16(p)
				if flowsteer.Port(port, s.workers) != w || steer.IsPublic(proto, a, port) {
					continue
				}
				m.free[pi][ai][p&1] = append(m.free[pi][ai][p&1], port)
				setBit(stk, port-s.lo)
			}
			for par := range 2 {
				st := m.free[pi][ai][par]
				rand.Shuffle(len(st), func(i, j int) { st[i], st[j] = st[j], st[i] })
				m.nfree[pi][ai][par] = len(st)
				m.owned += len(st)
			}
		}
	}
	if s.block > 0 {
		hosts := len(s.units[w]) / (s.block / flowsteer.PortUnit)
		m.blockLogged = make([]uint64, (hosts+63)/64)
		m.uses = make([]blockUse, maxBlockUses)
		if s.bulk {
			m.bulk = newBulkBlocks(s, w)
		}
	}
	for pi := range m.idx {
		m.idx[pi].init(m.mem, s.ownedMax(w)/2)
	}
	m.filt.init(m.mem, m.owned)
	for pi := range m.tabs {
		m.tabs[pi] = make([]mapTable, len(s.addrs))
		for ai := range s.addrs {
			m.tabs[pi][ai] = s.table(m, pi, ai)
		}
	}
	s.mw[w] = m
	return m
}

// ownedMax bounds the ports worker w owns (of both protocols and every
// address; DNAT ports are among them), to size its memory before its
// free stacks are built.
func (s *mapStore) ownedMax(w int) int {
	n := 0
	for p := int(s.lo); p <= int(s.hi); p++ {
		if flowsteer.Port(uint16(p), s.workers) == w {
			n++
		}
	}
	return 2 * len(s.addrs) * n
}

// bitmapBytes is the memory of a bitmap of span ports.
func bitmapBytes(span int) int { return (span + 63) / 64 * 8 }

func setBit(b []uint64, i uint16)       { b[i>>6] |= 1 << (i & 63) }
func clearBit(b []uint64, i uint16)     { b[i>>6] &^= 1 << (i & 63) }
func testBit(b []uint64, i uint16) bool { return b[i>>6]&(1<<(i&63)) != 0 }

// inUse reports whether port offset i (port-lo), a port of the table's
// worker, is mapped: its word's wordUsed bit, read from the worker's
// bitmap.
func (t *mapTable) inUse(i uint16) bool { return testBit(t.used, i) }

// owner is the worker that owns port.
func (s *mapStore) owner(port uint16) int {
	if s.workers == 1 {
		return 0
	}
	return flowsteer.Port(port, s.workers)
}

// addrIndex is the index of outside address a in s.addrs (0 if absent).
func (s *mapStore) addrIndex(a uint32) int {
	for i, x := range s.addrs {
		if x == a {
			return i
		}
	}
	return 0
}

// endpointKey is the word of a mapping of inside endpoint addr:port
// (without the count of displaced mappings).
func endpointKey(addr uint32, port uint16) uint64 {
	return uint64(addr)<<32 | uint64(port)<<16 | wordUsed
}

// find returns the outside port of inside endpoint key (port a), if it has
// a mapping.
func (s *mapStore) find(m *mapWorker, t *mapTable, key uint64, a uint16) (uint16, bool) {
	if !m.filt.has(key | uint64(t.pi)<<1) {
		return 0, false // certainly none: its lines are not read
	}
	if a >= s.lo && a <= s.hi && t.ents[a-s.lo].word.Load()&endpoint == key {
		return a, true
	}
	return m.idx[t.pi].get(key)
}

// take removes port, free and owned, from the free ports (a port the
// endpoint keeps, or drawn): it stays on its stack, where pop skips it
// while it is mapped, so no other line is written.
func (s *mapStore) take(t *mapTable, port uint16) {
	if testBit(t.onStack, port-s.lo) {
		t.nfree[port&1]--
	} // else not on the stack (dropped as a DNAT port since)
}

// pop takes a free port of the given parity: ok false when there is none.
// Ports mapped since they were pushed (taken out of order) are dropped
// from the stack, as are ports that became a DNAT rule's public
// endpoint.
func (s *mapStore) pop(steer *flowsteer.Table, proto uint8, addr uint32, t *mapTable, par int) (uint16, bool) {
	q := &t.free[par]
	for t.nfree[par] > 0 && len(*q) > 0 {
		port := (*q)[len(*q)-1]
		*q = (*q)[:len(*q)-1]
		clearBit(t.onStack, port-s.lo)
		if t.inUse(port - s.lo) {
			continue // taken out of order: not counted
		}
		t.nfree[par]--
		if !steer.IsPublic(proto, addr, port) {
			return port, true
		}
	}
	return 0, false
}

// tidy drops from table t's free stacks the ports taken out of order
// (mapped while on them) once they are as many as the free ports there,
// and at least tidyMin: pop and guess then step over none of them. The
// free ports keep their order, so pops give the same ports as without it;
// a dropped port, no longer marked on its stack, is pushed on top when its
// mapping ends (putFree) instead of being free again where it stood. Each
// pass is the stack's length, at most twice the ports dropped, each taken
// out of order once: a few sequential reads a mapping, instead of the
// places pop and guess stepped over one by one, each a bitmap test and a
// branch, on lines of the stack not read since the shuffle (on a nearly
// full table more than ten a pop). SNAT tidies a table once a batch,
// before the batch's guesses and pops (warmMapped).
func (s *mapStore) tidy(t *mapTable) {
	for par := range 2 {
		if g := len(t.free[par]) - t.nfree[par]; g >= tidyMin && g >= t.nfree[par] {
			s.dropTaken(t, par)
		}
	}
}

// tidyMin is the fewest ports taken out of order tidy drops from a stack.
const tidyMin = 32

// dropTaken removes the mapped ports from the free stack of parity par,
// keeping the order of the others, and clears their marks (without a
// branch a place: which ports are mapped is a coin toss).
func (s *mapStore) dropTaken(t *mapTable, par int) {
	st := t.free[par]
	used, on := t.used, t.onStack
	n := 0
	for _, p := range st {
		i := p - s.lo
		u := used[i>>6] >> (i & 63) & 1 // 1: mapped, dropped
		on[i>>6] &^= u << (i & 63)
		st[n] = p
		n += int(u ^ 1)
	}
	t.free[par] = st[:n]
}

// release frees the mapping of port.
func (s *mapStore) release(m *mapWorker, t *mapTable, port uint16) {
	w := &t.ents[port-s.lo].word
	v := w.Load()
	if v&wordUsed == 0 {
		return
	}
	w.Store(0)
	clearBit(t.used, port-s.lo)
	m.releases++
	if uint16(v>>16) != port {
		m.idx[t.pi].del(v)
	}
	t.ents[port-s.lo].remote = [2]uint32{}
	s.putFree(t, port)
	if m.bulk != nil {
		m.bulkReleased(t.ai, port)
	}
	if m.filt.stale++; m.filt.stale >= m.filt.rebuildAt() {
		s.refilter(m)
	}
}

// putFree makes port free again: on top of its free stack, unless it
// is still on it (taken out of order).
func (s *mapStore) putFree(t *mapTable, port uint16) {
	if !testBit(t.onStack, port-s.lo) {
		st := &t.free[port&1]
		*st = append(*st, port)
		setBit(t.onStack, port-s.lo)
	}
	t.nfree[port&1]++
}

// expired reports whether the mapping of port may end at now: its
// timeout passed and its last flow is gone.
func (s *mapStore) expired(ct *conntrack.Table, t *mapTable, port uint16, now int64) bool {
	if t.noneEnded(now) {
		return false // without reading the metadata's line
	}
	pm := &t.ents[port-s.lo].portMeta
	if uint32(now>>30) < pm.until {
		return false
	}
	c := ct.Live(pm.ref, pm.tag)
	if c == nil {
		return true
	}
	ct.Sync(pm.ref) // FastTrack's hits extend the flow
	return c.Expires <= now
}

// noneEnded reports whether no mapping of the table can have ended at
// now: every timeout end written is later.
func (t *mapTable) noneEnded(now int64) bool { return uint32(now>>30) < t.ends }

// reclaim frees up to reclaimPerTry of the worker's expired mappings of
// one table, walking from where the last walk stopped.
func (s *mapStore) reclaim(ct *conntrack.Table, m *mapWorker, t *mapTable, w int, now int64) {
	dry := &m.dry[t.pi][t.ai]
	if uint32(now>>30) < *dry {
		return
	}
	freed := false
	span := uint32(len(t.ents))
	cur := m.sweep[t.pi][t.ai]
	looked := 0
	for range span {
		if cur++; cur >= span {
			cur = 0
		}
		port := s.lo + uint16(cur)
		if flowsteer.Port(port, s.workers) != w {
			cur += flowsteer.PortUnit - 1 - uint32(port%flowsteer.PortUnit) // skip the rest of the unit
			continue
		}
		if !t.inUse(uint16(cur)) { // a port of this worker's: its bitmap
			continue
		}
		if s.expired(ct, t, port, now) {
			s.release(m, t, port)
			freed = true
		}
		if looked++; looked == reclaimPerTry {
			break
		}
	}
	m.sweep[t.pi][t.ai] = cur
	if !freed {
		*dry = uint32(now>>30) + 1
	}
}

// install makes port the mapping of inside endpoint key (port a). The
// word is written first: an atomic store waits for every store before
// it to reach the cache, so the lines only this worker reads (index,
// filter) are written after it and not waited for; the metadata (in the
// word's line) comes before the word, which another worker's listing
// reads first. Nothing
// of the inside port's is written when the mapping does not keep it.
func (s *mapStore) install(m *mapWorker, t *mapTable, key uint64, a, port uint16, now int64) {
	i := port - s.lo
	t.ents[i].since = uint32(now >> 30)
	t.ents[i].word.Store(key)
	setBit(t.used, i)
	if a != port {
		m.idx[t.pi].put(key, port)
	}
	m.filt.add(key | uint64(t.pi)<<1)
	if m.bulk != nil {
		m.bulk.live[t.ai][m.bulk.unitBlock[port/flowsteer.PortUnit]]++
	}
}

// use notes a flow bound to the mapping of port: its timeout restarts and
// its remote address is remembered for filtering.
func (s *mapStore) use(t *mapTable, port uint16, c *conntrack.Conn, idx uint32, remote uint32, now int64) {
	pm := &t.ents[port-s.lo].portMeta
	pm.ref, pm.tag = idx, c.Tag
	if u := uint32(now>>30) + s.timeout[t.pi]; u != pm.until {
		pm.until = u
		t.ends = min(t.ends, u)
	}
	if s.filtering == filterAD && pm.remote[0] != remote { // the line is read only when the filtering needs it
		pm.remote[1], pm.remote[0] = pm.remote[0], remote
	}
}

// inbound returns the inside endpoint a new flow from src to addr:port
// (proto) is let in to by the filtering, ok false when none: no mapping,
// one that has ended, or a remote the filtering refuses. The caller runs
// on the port's owner (FromDevice steers the packet there).
func (s *mapStore) inbound(ct *conntrack.Table, proto uint8, src, addr uint32, port uint16, now int64) (uint32, uint16, bool) {
	if s.filtering == filterAPD || port < s.lo || port > s.hi {
		return 0, 0, false
	}
	ai := s.addrIndex(addr)
	if s.addrs[ai] != addr {
		return 0, 0, false
	}
	pi := protoIndex(proto)
	t := s.table(nil, pi, ai) // reads only
	v := t.ents[port-s.lo].word.Load()
	pm := &t.ents[port-s.lo].portMeta
	if v&wordUsed == 0 || s.expired(ct, &t, port, now) {
		return 0, 0, false
	}
	if s.filtering == filterAD && pm.remote[0] != src && pm.remote[1] != src {
		return 0, 0, false
	}
	return uint32(v >> 32), uint16(v >> 16), true
}

// mapIndex is an open-addressing hash table from a nonzero key to a
// 16-bit value (bulk port blocks' hosts, portbulk.go). Linear probing,
// deletion by backward shift; at most half full.
type mapIndex struct {
	keys []uint64 // 0: empty
	vals []uint16
	mask uint64
	sh   uint
}

// indexSize is the slots of an index for n ports, and its hash's shift.
func indexSize(n int) (int, uint) {
	size, sh := 16, uint(60)
	for size < 2*n {
		size <<= 1
		sh--
	}
	return size, sh
}

func (x *mapIndex) init(mem *hugeMem, n int) {
	size, sh := indexSize(n)
	x.keys = cut[uint64](mem, size)
	x.vals = cut[uint16](mem, size)
	x.mask = uint64(size - 1)
	x.sh = sh
}

// compatible reports whether the mappings of s can serve the instances
// of n: the same addresses, ports, workers and inside networks.
func (s *mapStore) compatible(n *mapStore) bool {
	return slices.Equal(s.addrs, n.addrs) && s.lo == n.lo && s.hi == n.hi && s.workers == n.workers &&
		slices.Equal(s.inside, n.inside) && s.block == n.block && s.bulk == n.bulk
}

// release1 drops an instance's hold on the store and frees its memory
// once no instance holds it (last true).
func (s *mapStore) release1() (last bool) {
	if s.refs.Add(-1) != 0 {
		return false
	}
	for _, m := range s.mw {
		if m != nil {
			m.mem.free()
		}
	}
	s.mem.free()
	return true
}

func (x *mapIndex) slot(k uint64) uint64 { return (k * 0x9e3779b97f4a7c15) >> x.sh }

func (x *mapIndex) get(k uint64) (uint16, bool) {
	for i := x.slot(k); ; i = (i + 1) & x.mask {
		switch x.keys[i] {
		case k:
			return x.vals[i], true
		case 0:
			return 0, false
		}
	}
}

func (x *mapIndex) put(k uint64, v uint16) {
	i := x.slot(k)
	for x.keys[i] != 0 && x.keys[i] != k {
		i = (i + 1) & x.mask
	}
	x.keys[i], x.vals[i] = k, v
}

func (x *mapIndex) del(k uint64) {
	i := x.slot(k)
	for x.keys[i] != k {
		if x.keys[i] == 0 {
			return
		}
		i = (i + 1) & x.mask
	}
	// Backward shift: move later entries of the run into the hole when
	// their home is at or before it.
	for j := (i + 1) & x.mask; x.keys[j] != 0; j = (j + 1) & x.mask {
		h := x.slot(x.keys[j])
		if (j-h)&x.mask >= (j-i)&x.mask {
			x.keys[i], x.vals[i] = x.keys[j], x.vals[j]
			i = j
		}
	}
	x.keys[i] = 0
}

// epIndex is a worker's index of one protocol's mappings that did not
// keep their port: from inside endpoint to outside port, both in one
// 8-byte slot (endpoint address<<32 | port<<16 | outside port; 0: empty,
// as no outside port is 0), so that a new mapping writes, and a look-up
// reads, one line of it, not a key's and a value's. Linear probing,
// deletion by backward shift; at most half full (sized for every port
// the worker owns of the protocol).
type epIndex struct {
	slots []uint64
	mask  uint64
	sh    uint
}

// epIndexBytes is the memory of an index for n ports.
func epIndexBytes(n int) int {
	size, _ := indexSize(n)
	return size*8 + 64
}

func (x *epIndex) init(mem *hugeMem, n int) {
	size, sh := indexSize(n)
	x.slots = cut[uint64](mem, size)
	x.mask = uint64(size - 1)
	x.sh = sh
}

// epOf is the endpoint part of a word or slot.
func epOf(v uint64) uint64 { return v &^ 0xffff }

// slot is the home slot of the endpoint of word or slot v.
func (x *epIndex) slot(v uint64) uint64 { return (epOf(v) * 0x9e3779b97f4a7c15) >> x.sh }

// get returns the outside port of the endpoint of word k.
func (x *epIndex) get(k uint64) (uint16, bool) {
	ep := epOf(k)
	for i := x.slot(k); ; i = (i + 1) & x.mask {
		v := x.slots[i]
		if epOf(v) == ep && v != 0 {
			return uint16(v), true
		}
		if v == 0 {
			return 0, false
		}
	}
}

// put makes port the outside port of the endpoint of word k.
func (x *epIndex) put(k uint64, port uint16) {
	ep := epOf(k)
	i := x.slot(k)
	for v := x.slots[i]; v != 0 && epOf(v) != ep; v = x.slots[i] {
		i = (i + 1) & x.mask
	}
	x.slots[i] = ep | uint64(port)
}

// del removes the endpoint of word k.
func (x *epIndex) del(k uint64) {
	ep := epOf(k)
	i := x.slot(k)
	for epOf(x.slots[i]) != ep || x.slots[i] == 0 {
		if x.slots[i] == 0 {
			return
		}
		i = (i + 1) & x.mask
	}
	// Backward shift: move later entries of the run into the hole when
	// their home is at or before it.
	for j := (i + 1) & x.mask; x.slots[j] != 0; j = (j + 1) & x.mask {
		h := x.slot(x.slots[j])
		if (j-h)&x.mask >= (j-i)&x.mask {
			x.slots[i] = x.slots[j]
			i = j
		}
	}
	x.slots[i] = 0
}

// mapFilter is a worker's filter of its mappings' inside endpoints: three
// bits per hash of the endpoint and protocol, in one 64-bit word, set
// when a mapping is made, so that a clear bit says the endpoint certainly
// has no mapping. A new endpoint (every new flow of clients that do not
// reuse their sockets) then reads one line of a table small enough to
// stay in the core's cache (filterBitsPer bits a port the worker owns:
// 128 KiB for one address and the default range) instead of its port's
// word and its index slot, lines of tables sized for every port. With
// every port mapped about 1% of new endpoints find all three bits set
// and read those lines anyway (with two bits a word 6% of random
// endpoints, 2-3% of the CPS harness's; with one bit of four a port, 22%:
// on a worker whose ports are all mapped, the common case of new
// endpoints, each of those goes the whole way through bindMapped). A bit
// stays set when its mapping ends (another may share it); the ended
// mappings are counted and, once they reach a sixteenth of the bits, the
// filter is built again from the words of the worker's ports (a walk of
// the tables, once per that many releases).
type mapFilter struct {
	bits  []uint64
	sh    uint // a hash's top 18 bits pick the word's three bits, the next 64-sh the word
	stale int  // mappings ended since the filter was built
}

// filterBitsPer is the filter's bits per port the worker owns.
const filterBitsPer = 8

// filterSize is the bits of a filter for n ports, and its hash's shift.
func filterSize(n int) (int, uint) {
	size, sh := 1<<12, uint(64-6)
	for size < filterBitsPer*n {
		size <<= 1
		sh--
	}
	return size, sh
}

// filterBytes is the memory of a filter for n ports.
func filterBytes(n int) int {
	size, _ := filterSize(n)
	return size/8 + 64
}

func (f *mapFilter) init(mem *hugeMem, n int) {
	size, sh := filterSize(n)
	f.bits = cut[uint64](mem, size/64)
	f.sh = sh
}

// pos is the place of index key k (endpoint and protocol) in the filter:
// its word<<18 | its three bits, 6 bits each. They are the product's top
// bits, which depend on the whole key (bits below 32 do not depend on the
// address).
func (f *mapFilter) pos(k uint64) uint64 {
	h := k * 0xff51afd7ed558ccd
	return h<<18>>(f.sh&63)<<18 | h>>46 // (&63: no check for shifts past 63)
}

// mask is the bits of place i in its word.
func mask(i uint64) uint64 { return 1<<(i>>12&63) | 1<<(i>>6&63) | 1<<(i&63) }

func (f *mapFilter) has(k uint64) bool { return f.test(f.pos(k)) }

func (f *mapFilter) test(i uint64) bool { m := mask(i); return f.bits[i>>18]&m == m }

func (f *mapFilter) add(k uint64) {
	i := f.pos(k)
	f.bits[i>>18] |= mask(i)
}

// line is the address of place i's word, to prefetch.
func (f *mapFilter) line(i uint64) uintptr { return uintptr(unsafe.Pointer(&f.bits[i>>18])) }

// rebuildAt is the count of ended mappings that has the filter built
// again.
func (f *mapFilter) rebuildAt() int { return len(f.bits) * 64 / 16 }

// refilter builds worker m's filter again from the words of the ports it
// owns (their owner writes them: this worker).
func (s *mapStore) refilter(m *mapWorker) {
	clear(m.filt.bits)
	m.filt.stale = 0
	for pi := range s.ents {
		for ai, ents := range s.ents[pi] {
			used := m.used[pi][ai] // the ports this worker owns that are mapped
			for i := range ents {
				if testBit(used, uint16(i)) {
					if v := ents[i].word.Load(); v&wordUsed != 0 {
						m.filt.add(v&endpoint | uint64(pi)<<1)
					}
				}
			}
		}
	}
}
