package nat

import (
	"math/rand/v2"
	"sync/atomic"

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
// preservation), else a free port of the same parity (RFC 4787 REQ-3/4),
// else any free port of its own. The mappings are a table per outside
// address and protocol, indexed by port (mapStore.ports: 40 bytes a port,
// written only by the port's owner); an inside endpoint whose mapping is
// not its own port is found through the worker's index (mapIndex). The
// free ports of each worker are two stacks (even, odd), shuffled at start,
// so that ports handed out are not predictable beyond the kept ones.
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

// portSlot is one outside port's mapping. key is written by the owning
// worker only (and read by show nat on another goroutine: atomic); the
// other fields are the owner's (show nat reads them as Conntrack's
// listing reads flows: copied, then key checked again).
type portSlot struct {
	// key is the inside endpoint: address<<32 | port<<16 | 1; 0: free.
	key atomic.Uint64
	// until is when (Conntrack's clock >> 30, about seconds) the
	// mapping may end if no flow of it is tracked; since, when it was
	// made.
	until, since uint32
	// remote holds the last two remote addresses the mapping sent to
	// (address-dependent filtering).
	remote [2]uint32
	// ref and tag name the last flow bound to the mapping.
	ref, tag uint32
	// displaced counts the mappings of inside port (this port) that are
	// in the worker's index because this port was not free for them.
	displaced uint16
	// pos is the port's place in its owner's free stack while free.
	pos uint16
}

// mapStore is an SNAT element's mappings, shared by its workers'
// instances.
type mapStore struct {
	addrs     []uint32
	lo, hi    uint16
	workers   int
	filtering int
	timeout   [2]uint32 // tcp, udp: in clock >> 30 units
	// ports[proto][address][port-lo] (proto: 0 TCP, 1 UDP).
	ports [2][][]portSlot
	mw    []*mapWorker
	masq  *flowsteer.Masq // published steering (nil: one worker, none needed)
	name  string
}

// mapWorker is one worker's side: its free ports and its index.
type mapWorker struct {
	free  [2][][2][]uint16 // [proto][address][parity]
	sweep [2][]uint32      // [proto][address]: reclaim cursor (offset in the range)
	idx   mapIndex
	owned int
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
	for pi := range s.ports {
		s.ports[pi] = make([][]portSlot, len(addrs))
		for ai := range addrs {
			s.ports[pi][ai] = make([]portSlot, span)
		}
	}
	s.mw = make([]*mapWorker, workers)
	return s
}

// worker builds worker w's side (its instance calls it): the ports it owns
// go on its free stacks, shuffled, except those that are a DNAT rule's
// public endpoint.
func (s *mapStore) worker(w int, steer *flowsteer.Table) *mapWorker {
	if s.mw[w] != nil {
		return s.mw[w]
	}
	m := &mapWorker{}
	for pi := range m.free {
		proto := uint8(packet.ProtoTCP)
		if pi == 1 {
			proto = packet.ProtoUDP
		}
		m.free[pi] = make([][2][]uint16, len(s.addrs))
		m.sweep[pi] = make([]uint32, len(s.addrs))
		for ai, a := range s.addrs {
			tab := s.ports[pi][ai]
			for p := int(s.lo); p <= int(s.hi); p++ {
				port := uint16(p)
				if flowsteer.Port(port, s.workers) != w || steer.IsPublic(proto, a, port) {
					continue
				}
				m.free[pi][ai][p&1] = append(m.free[pi][ai][p&1], port)
			}
			for par := range 2 {
				st := m.free[pi][ai][par]
				rand.Shuffle(len(st), func(i, j int) { st[i], st[j] = st[j], st[i] })
				for i, port := range st {
					tab[port-s.lo].pos = uint16(i)
				}
				m.owned += len(st)
			}
		}
	}
	m.idx.init(m.owned)
	s.mw[w] = m
	return m
}

// endpointKey is a portSlot key.
func endpointKey(addr uint32, port uint16) uint64 { return uint64(addr)<<32 | uint64(port)<<16 | 1 }

// find returns the outside port of inside endpoint key (port a) in table
// tab, if it has a mapping.
func (s *mapStore) find(m *mapWorker, tab []portSlot, pi int, key uint64, a uint16) (uint16, bool) {
	if a >= s.lo && a <= s.hi {
		sl := &tab[a-s.lo]
		if sl.key.Load() == key {
			return a, true
		}
		if sl.displaced == 0 {
			return 0, false
		}
	}
	return m.idx.get(key | uint64(pi)<<1)
}

// take removes port from its free stack (it is free and owned).
func (m *mapWorker) take(tab []portSlot, lo uint16, st *[2][]uint16, port uint16) {
	s := &st[port&1]
	i := tab[port-lo].pos
	if int(i) >= len(*s) || (*s)[i] != port {
		return // not on the stack (dropped as a DNAT port since)
	}
	last := (*s)[len(*s)-1]
	(*s)[i] = last
	tab[last-lo].pos = i
	*s = (*s)[:len(*s)-1]
}

// pop takes a free port of the given parity: ok false when the stack is
// empty. Ports that became a DNAT rule's public endpoint since
// are dropped from the stack.
func (s *mapStore) pop(steer *flowsteer.Table, proto uint8, addr uint32, st *[2][]uint16, par int) (uint16, bool) {
	q := &st[par]
	for len(*q) > 0 {
		port := (*q)[len(*q)-1]
		*q = (*q)[:len(*q)-1]
		if !steer.IsPublic(proto, addr, port) {
			return port, true
		}
	}
	return 0, false
}

// release frees the mapping of port in table tab.
func (s *mapStore) release(m *mapWorker, tab []portSlot, pi, ai int, port uint16) {
	sl := &tab[port-s.lo]
	key := sl.key.Load()
	if key == 0 {
		return
	}
	if a := uint16(key >> 16); a != port {
		m.idx.del(key | uint64(pi)<<1)
		if a >= s.lo && a <= s.hi {
			tab[a-s.lo].displaced--
		}
	}
	sl.key.Store(0)
	sl.remote = [2]uint32{}
	s.putFree(m, tab, pi, ai, port)
}

// putFree puts port back on its free stack.
func (s *mapStore) putFree(m *mapWorker, tab []portSlot, pi, ai int, port uint16) {
	st := &m.free[pi][ai][port&1]
	tab[port-s.lo].pos = uint16(len(*st))
	*st = append(*st, port)
}

// expired reports whether the mapping of sl may end at now: its timeout
// passed and its last flow is gone.
func expired(t *conntrack.Table, sl *portSlot, now int64) bool {
	if uint32(now>>30) < sl.until {
		return false
	}
	c := t.Live(sl.ref, sl.tag)
	if c == nil {
		return true
	}
	t.Sync(sl.ref) // FastTrack's hits extend the flow
	return c.Expires <= now
}

// reclaim frees up to reclaimPerTry of the worker's expired mappings of
// one table, walking from where the last walk stopped.
func (s *mapStore) reclaim(t *conntrack.Table, m *mapWorker, tab []portSlot, pi, ai int, w int, now int64) {
	span := uint32(len(tab))
	cur := m.sweep[pi][ai]
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
		sl := &tab[cur]
		if sl.key.Load() == 0 {
			continue
		}
		if expired(t, sl, now) {
			s.release(m, tab, pi, ai, port)
		}
		if looked++; looked == reclaimPerTry {
			break
		}
	}
	m.sweep[pi][ai] = cur
}

// install makes port the mapping of inside endpoint key (port a).
func (s *mapStore) install(m *mapWorker, tab []portSlot, pi int, key uint64, a, port uint16, now int64) {
	if a != port {
		m.idx.put(key|uint64(pi)<<1, port)
		if a >= s.lo && a <= s.hi {
			tab[a-s.lo].displaced++
		}
	}
	tab[port-s.lo].since = uint32(now >> 30)
	tab[port-s.lo].key.Store(key)
}

// use notes a flow bound to the mapping at sl: its timeout restarts and
// its remote address is remembered for filtering.
func (s *mapStore) use(sl *portSlot, c *conntrack.Conn, idx uint32, pi int, remote uint32, now int64) {
	sl.ref, sl.tag = idx, c.Tag
	if u := uint32(now>>30) + s.timeout[pi]; u != sl.until {
		sl.until = u
	}
	if sl.remote[0] != remote && s.filtering == filterAD {
		sl.remote[1], sl.remote[0] = sl.remote[0], remote
	}
}

// inbound returns the inside endpoint a new flow from src to addr:port
// (proto) is let in to by the filtering, ok false when none: no mapping,
// one that has ended, or a remote the filtering refuses. The caller runs
// on the port's owner (FromDevice steers the packet there).
func (s *mapStore) inbound(t *conntrack.Table, proto uint8, src, addr uint32, port uint16, now int64) (uint32, uint16, bool) {
	if s.filtering == filterAPD || port < s.lo || port > s.hi {
		return 0, 0, false
	}
	ai := -1
	for i, a := range s.addrs {
		if a == addr {
			ai = i
			break
		}
	}
	if ai < 0 {
		return 0, 0, false
	}
	sl := &s.ports[protoIndex(proto)][ai][port-s.lo]
	key := sl.key.Load()
	if key == 0 || expired(t, sl, now) {
		return 0, 0, false
	}
	if s.filtering == filterAD && sl.remote[0] != src && sl.remote[1] != src {
		return 0, 0, false
	}
	return uint32(key >> 32), uint16(key >> 16), true
}

// mapIndex is an open-addressing hash table from inside endpoint (with
// the protocol) to outside port, for the mappings that did not keep their
// port. Linear probing, deletion by backward shift; at most half full (it
// is sized for every port the worker owns).
type mapIndex struct {
	keys []uint64 // 0: empty
	vals []uint16
	mask uint64
	sh   uint
}

func (x *mapIndex) init(n int) {
	size, sh := 16, uint(60)
	for size < 2*n {
		size <<= 1
		sh--
	}
	x.keys = make([]uint64, size)
	x.vals = make([]uint16, size)
	x.mask = uint64(size - 1)
	x.sh = sh
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
