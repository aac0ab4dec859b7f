package arp

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/junction-dataplane/junction/elements/fastgen"
)

// The neighbour table is shared by every worker's ARPQuerier of one graph
// element: an ARP reply arrives on whichever worker's queue the device
// hashed it to, and every worker must see what it taught. Workers read the
// table for every packet, so reads take no lock: each slot is a handful of
// atomic words. Writes (learning from ARP, inserting a new next hop,
// recycling a slot) are rare and take a mutex among themselves only.
//
// A slot is found by open addressing (linear probing from a hash of the IP).
// A slot's key, once set, changes only when a writer recycles the slot for
// another address (insert: the least recently active entry of a full chain,
// never a static one nor an active next hop); the writer first invalidates
// the MAC, then changes the key, then publishes the new MAC. A reader loads key, MAC,
// key again and uses the MAC only if both keys match the IP it looks for, so
// it never pairs one IP with another IP's MAC.

const (
	// tableSlots is the number of neighbour entries per ARPQuerier element
	// (all workers together). Entries are made only for next hops the
	// router sends to and for on-link hosts that ARP for its own address
	// (at most learn_rate a second per worker), so a link needs as many as
	// it has active neighbours.
	tableSlots = 8192
	// maxProbe bounds a lookup: a chain holds at most this many entries.
	maxProbe = 32
	// usedStep is the resolution of a slot's used time: a worker sending
	// to a neighbour stores the time at most once per step, so the cache
	// line the workers share is written rarely, not per packet.
	usedStep = int64(100 * time.Millisecond)

	macValid  = uint64(1) << 63 // the MAC bits hold a resolved address
	macStatic = uint64(1) << 62 // configured by neighbors: never ages
	macMask   = uint64(1)<<48 - 1
)

type slot struct {
	key  atomic.Uint32 // IPv4 address, big endian; 0 = never used
	mac  atomic.Uint64 // macValid | macStatic | 48-bit MAC
	seen atomic.Int64  // monotonic ns of the last confirmation
	// probe is the monotonic ns of the last ARP request for this key (from
	// any worker): requests are rate limited per next hop through a CAS
	// on it.
	probe atomic.Int64
	// fastMAC and fastAt are what was last copied into the device's
	// fast path, and when (Querier.toFastPath).
	fastMAC atomic.Uint64
	fastAt  atomic.Int64
	// used is the monotonic ns (to usedStep) the router last sent a
	// packet to this neighbour: a reachable entry used within the timeout
	// is an active next hop, which making room for new entries never
	// evicts.
	used atomic.Int64
	_    [8]byte // a slot per cache line (64 bytes): workers probing different hops do not share lines
}

type table struct {
	slots [tableSlots]slot
	mu    sync.Mutex // writers only
	// gen is the graph's fast-path generation, bumped when a known
	// neighbour moves (nil: none to bump).
	gen *fastgen.Generation
	// tmo is the querier's timeout: how long an entry is reachable after
	// its last confirmation, and an active next hop after its last use.
	tmo int64
}

func hashIP(ip uint32) uint32 {
	h := ip * 0x9e3779b1
	return h ^ h>>15
}

// find returns the slot holding ip and its MAC word (0 if unresolved), or
// nil. It never locks.
func (t *table) find(ip uint32) (*slot, uint64) {
	i := hashIP(ip)
	for n := 0; n < maxProbe; n++ {
		s := &t.slots[(i+uint32(n))&(tableSlots-1)]
		k := s.key.Load()
		if k == 0 {
			return nil, 0 // keys are never cleared: the chain ends here
		}
		if k == ip {
			m := s.mac.Load()
			if s.key.Load() != ip {
				return nil, 0 // recycled under us: a miss this once
			}
			return s, m
		}
	}
	return nil, 0
}

// lastActive is the latest of the slot's confirmation, request and use:
// eviction takes the entry least recently active.
func (s *slot) lastActive() int64 {
	a := s.seen.Load()
	if p := s.probe.Load(); p > a {
		a = p
	}
	if u := s.used.Load(); u > a {
		a = u
	}
	return a
}

// active reports whether s (MAC word m) is an active next hop at now:
// resolved, confirmed within timeout and grace (so reachable, or stale
// and being re-probed) and sent to within the timeout.
func (t *table) active(s *slot, m uint64, now int64) bool {
	return m&macValid != 0 && now-s.seen.Load() < t.tmo+grace && now-s.used.Load() < t.tmo
}

// insert returns the slot for ip, making one if needed. When ip's chain
// has no free slot it takes the entry least recently active (confirmed,
// requested or used), never a static entry nor an active next hop: a
// flood of new entries then recycles its own, and the neighbours the
// router is sending to keep theirs. A slot dead for good (inactive for
// timeout, grace and giveUp) earlier in the chain is taken before a free
// one later, which keeps chains short. It returns nil only when the whole
// chain is static or active, and evicted reports that a live entry
// (inactive for less than that) made room.
func (t *table) insert(ip uint32, now int64) (s *slot, evicted bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	i := hashIP(ip)
	deadBefore := now - t.tmo - grace - giveUp
	var victim *slot
	var vAct int64
	for n := 0; n < maxProbe; n++ {
		s := &t.slots[(i+uint32(n))&(tableSlots-1)]
		k := s.key.Load()
		if k == ip {
			return s, false
		}
		if k == 0 {
			if victim != nil && vAct < deadBefore {
				break // recycle the dead slot earlier in the chain
			}
			s.seen.Store(0)
			s.probe.Store(0)
			s.used.Store(0)
			s.fastMAC.Store(0)
			s.fastAt.Store(0)
			s.key.Store(ip)
			return s, false
		}
		m := s.mac.Load()
		if m&macStatic != 0 || t.active(s, m, now) {
			continue
		}
		if a := s.lastActive(); victim == nil || a < vAct {
			victim, vAct = s, a
		}
	}
	if victim == nil {
		return nil, false
	}
	// Readers check the key after reading the MAC: invalidate the MAC
	// first, so that none pairs the new key with the old MAC.
	victim.mac.Store(0)
	victim.seen.Store(0)
	victim.probe.Store(0)
	victim.used.Store(0)
	victim.fastMAC.Store(0)
	victim.fastAt.Store(0)
	victim.key.Store(ip)
	return victim, vAct >= deadBefore
}

// learn records that ip is at mac (now). With create false only an
// existing entry is updated (an unsolicited ARP does not make entries).
// Static entries are never overwritten. It reports whether an entry was
// updated, and whether making it evicted a live one.
func (t *table) learn(ip uint32, mac uint64, now int64, create bool) (ok, evicted bool) {
	s, m := t.find(ip)
	if s == nil {
		if !create {
			return false, false
		}
		if s, evicted = t.insert(ip, now); s == nil {
			return false, false
		}
		m = s.mac.Load()
	}
	if m&macStatic != 0 {
		return false, evicted
	}
	if m != macValid|mac {
		t.mu.Lock()
		if s.key.Load() == ip && s.mac.Load()&macStatic == 0 {
			s.mac.Store(macValid | mac)
		}
		t.mu.Unlock()
		if m&macValid != 0 {
			// A known neighbour moved: fast-path entries learned with
			// its old MAC must not outlive it.
			if t.gen != nil {
				t.gen.Invalidate()
			}
		}
	}
	s.seen.Store(now)
	return true, evicted
}

// setStatic installs a configured neighbour.
func (t *table) setStatic(ip uint32, mac uint64) bool {
	s, _ := t.insert(ip, 0)
	if s == nil {
		return false
	}
	s.mac.Store(macValid | macStatic | mac)
	return true
}

// tryProbe claims the right to send the next ARP request for s: at most one
// per interval per next hop, whichever worker asks first.
func (s *slot) tryProbe(now, interval int64) bool {
	last := s.probe.Load()
	if last != 0 && now-last < interval {
		return false
	}
	return s.probe.CompareAndSwap(last, now)
}
