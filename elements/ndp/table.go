package ndp

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/junction-dataplane/junction/elements/fastgen"
)

// State is a neighbour cache entry's reachability state (RFC 4861 7.3.2).
type State uint32

const (
	// Free: no entry, or one whose resolution failed; the next packet to
	// it starts over.
	Free State = iota
	// Incomplete: solicitations are being multicast; packets wait.
	Incomplete
	// Reachable: confirmed within the reachable time.
	Reachable
	// Stale: not confirmed lately (or learnt unsolicited); still used,
	// and the first packet sent moves it to Delay.
	Stale
	// Delay: a packet was sent to a stale entry; if nothing confirms it
	// within the delay, it is probed.
	Delay
	// Probe: unicast solicitations are being sent; still used until they
	// all go unanswered.
	Probe
)

var stateNames = [...]string{"FREE", "INCOMPLETE", "REACHABLE", "STALE", "DELAY", "PROBE"}

func (s State) String() string {
	if int(s) < len(stateNames) {
		return stateNames[s]
	}
	return "?"
}

// Timers are RFC 4861's protocol constants (section 10) as the querier
// uses them.
type Timers struct {
	Reachable    int64 // REACHABLE_TIME (ns)
	Retrans      int64 // RETRANS_TIMER
	Delay        int64 // DELAY_FIRST_PROBE_TIME
	MaxMulticast int32 // MAX_MULTICAST_SOLICIT
	MaxUnicast   int32 // MAX_UNICAST_SOLICIT
}

// DefaultTimers are RFC 4861's defaults.
var DefaultTimers = Timers{
	Reachable: int64(30 * time.Second), Retrans: int64(time.Second), Delay: int64(5 * time.Second),
	MaxMulticast: 3, MaxUnicast: 3,
}

// The neighbour cache is shared by every worker's NDPQuerier of one graph
// element (an advertisement arrives on whichever worker's queue the device
// hashed it to). Readers take no lock: a slot is an atomic pointer to an
// entry whose address never changes; the entry's state, MAC and times are
// atomic words. State changes are rare (a few per neighbour per reachable
// time) and are made under a mutex, so that two workers never both move
// an entry (and never both send its probe). An entry is recycled by
// replacing the slot's pointer with a new entry: a reader holding the old
// one still sees a consistent address.
const (
	tableSlots = 4096
	maxProbe   = 32
)

type neigh struct {
	addr   [16]byte
	static bool
	mac    atomic.Uint64 // 48-bit MAC; meaningful in Reachable..Probe
	state  atomic.Uint32
	since  atomic.Int64 // when the state was entered (Reachable: last confirmation)
	probes atomic.Int32 // solicitations sent in Incomplete or Probe
	used   atomic.Int64 // when a packet was last sent to it (0: never)

	// What the device's in-kernel fast path holds for it (fastpath.go):
	// the MAC copied (0: none) and when.
	fastMAC atomic.Uint64
	fastAt  atomic.Int64
	// refreshed: when refreshFast last solicited it.
	refreshed atomic.Int64
}

func (n *neigh) State() State { return State(n.state.Load()) }

type table struct {
	slots [tableSlots]atomic.Pointer[neigh]
	mu    sync.Mutex
	tm    Timers
	n     atomic.Int32 // entries in use
	// gen is the graph's fast-path generation, bumped when a known
	// neighbour's MAC changes.
	gen *fastgen.Generation
}

// invalidate makes the graph's fast-path entries stale (they were learned
// with a neighbour's old MAC).
func (t *table) invalidate() {
	if t.gen != nil {
		t.gen.Invalidate()
	}
}

func hash16(a *[16]byte) uint32 {
	var lo, hi uint64
	for i := 0; i < 8; i++ {
		hi = hi<<8 | uint64(a[i])
		lo = lo<<8 | uint64(a[8+i])
	}
	h := (lo ^ hi*0x9e3779b97f4a7c15) * 0xbf58476d1ce4e5b9
	return uint32(h >> 32)
}

// find returns the entry for a, or nil. It never locks.
func (t *table) find(a *[16]byte) *neigh {
	i := hash16(a)
	for k := uint32(0); k < maxProbe; k++ {
		n := t.slots[(i+k)&(tableSlots-1)].Load()
		if n == nil {
			return nil // slots are never emptied: the chain ends here
		}
		if n.addr == *a {
			return n
		}
	}
	return nil
}

// recyclable reports whether n may give its slot to another address: a
// failed entry, an incomplete one long dead, or a stale one no packet was
// sent to lately (entries that solicitations made, which a flood of them
// must not let crowd out the next hops in use).
func (t *table) recyclable(n *neigh, now int64) bool {
	if n.static {
		return false
	}
	switch st := n.State(); st {
	case Free:
		return true
	case Incomplete:
		return now-n.since.Load() > 2*int64(t.tm.MaxMulticast)*t.tm.Retrans
	default:
		// Resolved: recyclable once neither confirmed (REACHABLE) nor
		// sent to within the reachable time.
		if st == Reachable && now-n.since.Load() < t.tm.Reachable {
			return false
		}
		u := n.used.Load()
		return u == 0 || now-u > t.tm.Reachable
	}
}

// active reports whether n is a next hop in use: resolved and sent to
// within the reachable time. Making room never evicts one.
func (t *table) active(n *neigh, now int64) bool {
	if n.static {
		return true
	}
	u := n.used.Load()
	return n.State() >= Reachable && u != 0 && now-u <= t.tm.Reachable
}

// lastActive is when n last changed state (or was confirmed) or was sent to.
func (n *neigh) lastActive() int64 {
	a := n.since.Load()
	if u := n.used.Load(); u > a {
		a = u
	}
	return a
}

// insertLocked makes an entry for a in state st (under t.mu), or returns
// the existing one. A slot is taken from a recyclable entry or a free
// slot, else by evicting the least recently active entry that is not an
// active next hop (evicted reports it): a flood that makes entries faster
// than they age (a scan of the link's addresses from outside, each an
// INCOMPLETE entry for 6 s) recycles its own, and a new neighbour always
// finds room. nil only when a's chain holds only active next hops and
// static entries.
func (t *table) insertLocked(a *[16]byte, st State, mac uint64, now int64) (_ *neigh, evicted bool) {
	i := hash16(a)
	var dead, lru *atomic.Pointer[neigh]
	var lruAt int64
	for k := uint32(0); k < maxProbe; k++ {
		s := &t.slots[(i+k)&(tableSlots-1)]
		n := s.Load()
		if n == nil {
			if dead == nil {
				dead = s
				t.n.Add(1)
			}
			break
		}
		if n.addr == *a {
			return n, false
		}
		if dead != nil {
			continue
		}
		if t.recyclable(n, now) {
			dead = s
		} else if !t.active(n, now) {
			if at := n.lastActive(); lru == nil || at < lruAt {
				lru, lruAt = s, at
			}
		}
	}
	if dead == nil {
		if lru == nil {
			return nil, false
		}
		dead, evicted = lru, true
	}
	if old := dead.Load(); old != nil {
		// A worker holding packets for the old entry sees it failed and
		// drops them as unresolved, instead of soliciting for an entry
		// no advertisement can reach any more.
		old.state.Store(uint32(Free))
	}
	n := &neigh{addr: *a}
	n.mac.Store(mac)
	n.state.Store(uint32(st))
	n.since.Store(now)
	if st == Incomplete {
		n.probes.Store(1)
	}
	dead.Store(n)
	return n, evicted
}

func (t *table) setStatic(a [16]byte, mac uint64) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	n, _ := t.insertLocked(&a, Reachable, mac, 0)
	if n == nil {
		return false
	}
	n.static = true
	n.mac.Store(mac)
	n.state.Store(uint32(Reachable))
	return true
}

// Solicitations an output may ask for.
const (
	solNone = iota
	solMulticast
	solUnicast
)

// output decides for one packet to a: usable reports that mac may be used
// now; solicit asks for a solicitation (multicast: resolve; unicast: probe
// mac). n is nil only when the table has no room ("table full"). An
// entry evicted to make room for a's is counted in evicted.
func (t *table) output(a *[16]byte, now int64, evicted *atomic.Uint64) (n *neigh, mac uint64, usable bool, solicit int) {
	n = t.find(a)
	if n == nil {
		t.mu.Lock()
		var ev bool
		n, ev = t.insertLocked(a, Incomplete, 0, now)
		t.mu.Unlock()
		if ev {
			evicted.Add(1)
		}
		if n == nil {
			return nil, 0, false, solNone
		}
		if n.since.Load() == now && n.State() == Incomplete && n.probes.Load() == 1 {
			return n, 0, false, solMulticast
		}
	}
	if n.static {
		return n, n.mac.Load(), true, solNone
	}
	st := n.State()
	switch st {
	case Reachable:
		if now-n.since.Load() < t.tm.Reachable {
			n.touch(now)
			return n, n.mac.Load(), true, solNone
		}
		fallthrough
	case Stale:
		// Sending to a stale entry starts the delay (7.3.3); a reachable
		// one past its time is stale first.
		t.mu.Lock()
		if s := n.State(); s == Reachable || s == Stale {
			n.state.Store(uint32(Delay))
			n.since.Store(now)
		}
		t.mu.Unlock()
		n.touch(now)
		return n, n.mac.Load(), true, solNone
	case Delay:
		sol := solNone
		if now-n.since.Load() >= t.tm.Delay {
			t.mu.Lock()
			if n.State() == Delay && now-n.since.Load() >= t.tm.Delay {
				n.state.Store(uint32(Probe))
				n.since.Store(now)
				n.probes.Store(1)
				sol = solUnicast
			}
			t.mu.Unlock()
		}
		n.touch(now)
		return n, n.mac.Load(), true, sol
	case Probe:
		sol := solNone
		if now-n.since.Load() >= t.tm.Retrans {
			t.mu.Lock()
			if n.State() == Probe && now-n.since.Load() >= t.tm.Retrans {
				if n.probes.Load() >= t.tm.MaxUnicast {
					// Unreachable: resolve it afresh (7.3.3: the entry
					// is deleted; the next packet makes an INCOMPLETE one).
					n.state.Store(uint32(Incomplete))
					n.since.Store(now)
					n.probes.Store(1)
					t.mu.Unlock()
					return n, 0, false, solMulticast
				}
				n.probes.Add(1)
				n.since.Store(now)
				sol = solUnicast
			}
			t.mu.Unlock()
		}
		n.touch(now)
		return n, n.mac.Load(), true, sol
	case Free:
		t.mu.Lock()
		if n.State() == Free {
			n.state.Store(uint32(Incomplete))
			n.since.Store(now)
			n.probes.Store(1)
			t.mu.Unlock()
			return n, 0, false, solMulticast
		}
		t.mu.Unlock()
	}
	return n, 0, false, solNone // Incomplete: wait
}

// touch records use for recycling, at most one store a millisecond.
func (n *neigh) touch(now int64) {
	if now-n.used.Load() > int64(time.Millisecond) {
		n.used.Store(now)
	}
}

// retry drives an incomplete entry (from a worker holding packets for it):
// it reports a multicast solicitation due, or that resolution failed.
func (t *table) retry(n *neigh, now int64) (solicit bool, failed bool) {
	switch n.State() {
	case Free:
		return false, true
	case Incomplete:
	default:
		return false, false
	}
	if now-n.since.Load() < t.tm.Retrans {
		return false, false
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if n.State() != Incomplete || now-n.since.Load() < t.tm.Retrans {
		return false, n.State() == Free
	}
	if n.probes.Load() >= t.tm.MaxMulticast {
		n.state.Store(uint32(Free))
		n.since.Store(now)
		return false, true
	}
	n.probes.Add(1)
	n.since.Store(now)
	return true, false
}

// learnNA applies an advertisement (RFC 4861 7.2.5): it never makes an
// entry. It reports whether the entry's MAC became usable or was confirmed.
func (t *table) learnNA(target *[16]byte, mac uint64, hasLLA bool, flags uint8, now int64) bool {
	n := t.find(target)
	if n == nil || n.static {
		return false
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	st := n.State()
	cur := n.mac.Load()
	solicited := flags&FlagSolicited != 0
	if st == Incomplete || st == Free {
		if !hasLLA {
			return false
		}
		n.mac.Store(mac)
		n.probes.Store(0)
		n.since.Store(now)
		if solicited {
			n.state.Store(uint32(Reachable))
		} else {
			n.state.Store(uint32(Stale))
		}
		return true
	}
	differs := hasLLA && mac != cur
	if flags&FlagOverride == 0 && differs {
		// Not overriding a known address: only note the doubt.
		if st == Reachable {
			n.state.Store(uint32(Stale))
			n.since.Store(now)
		}
		return false
	}
	if differs {
		n.mac.Store(mac)
		t.invalidate() // fast-path entries learned with the old MAC
	}
	switch {
	case solicited:
		n.state.Store(uint32(Reachable))
		n.since.Store(now)
		n.probes.Store(0)
	case differs:
		n.state.Store(uint32(Stale))
		n.since.Store(now)
	}
	return true
}

// learnNS applies a solicitation's source link-layer option (7.2.3): an
// entry is made (create) or updated, STALE when its MAC is new or changed.
// full reports a new entry refused because the cache had no slot to
// give (every entry in use), so that a flood of solicitations from
// random sources is counted.
func (t *table) learnNS(src *[16]byte, mac uint64, now int64, create bool, evicted *atomic.Uint64) (ok, full bool) {
	n := t.find(src)
	if n == nil {
		if !create {
			return false, false
		}
		t.mu.Lock()
		var ev bool
		n, ev = t.insertLocked(src, Stale, mac, now)
		t.mu.Unlock()
		if ev {
			evicted.Add(1)
		}
		return n != nil, n == nil
	}
	if n.static {
		return false, false
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	st := n.State()
	if st == Incomplete || st == Free || n.mac.Load() != mac {
		if st != Incomplete && st != Free {
			t.invalidate()
		}
		n.mac.Store(mac)
		n.state.Store(uint32(Stale))
		n.since.Store(now)
		n.probes.Store(0)
		return true, false
	}
	return false, false
}
