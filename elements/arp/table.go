package arp

import (
	"sync"
	"sync/atomic"

	"github.com/junction-dataplane/junction/elements/conntrack"
)

// The neighbour table is shared by every worker's ARPQuerier of one graph
// element: an ARP reply arrives on whichever worker's queue the device
// hashed it to, and every worker must see what it taught. Workers read the
// table for every packet, so reads take no lock: each slot is a handful of
// atomic words. Writes (learning from ARP, inserting a new next hop,
// recycling a dead slot) are rare and take a mutex among themselves only.
//
// A slot is found by open addressing (linear probing from a hash of the IP).
// A slot's key, once set, changes only when a writer recycles a slot whose
// entry has been dead for a long time; the writer first invalidates the MAC,
// then changes the key, then publishes the new MAC. A reader loads key, MAC,
// key again and uses the MAC only if both keys match the IP it looks for, so
// it never pairs one IP with another IP's MAC.

const (
	// tableSlots is the number of neighbour entries per ARPQuerier element
	// (all workers together). Entries are made only for next hops the
	// router sends to and for hosts that ARP for its own address, so a
	// link needs as many as it has active neighbours.
	tableSlots = 8192
	// maxProbe bounds a lookup: beyond it the table counts as full.
	maxProbe = 32

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
	_       [16]byte // a slot per cache line (64 bytes): workers probing different hops do not share lines
}

type table struct {
	slots [tableSlots]slot
	mu    sync.Mutex // writers only
	// gen is the graph's fast-path generation, bumped when a known
	// neighbour moves (nil: none to bump).
	gen *conntrack.Generation
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

// insert returns the slot for ip, making one if needed (recycling a slot
// dead since before deadBefore on a full chain). It returns nil when the
// chain is full of live entries.
func (t *table) insert(ip uint32, deadBefore int64) *slot {
	t.mu.Lock()
	defer t.mu.Unlock()
	i := hashIP(ip)
	var dead *slot
	for n := 0; n < maxProbe; n++ {
		s := &t.slots[(i+uint32(n))&(tableSlots-1)]
		k := s.key.Load()
		if k == ip {
			return s
		}
		if k == 0 {
			if dead != nil {
				break // recycle the dead slot earlier in the chain
			}
			s.seen.Store(0)
			s.probe.Store(0)
			s.key.Store(ip)
			return s
		}
		if dead == nil {
			m := s.mac.Load()
			if m&macStatic == 0 && s.seen.Load() < deadBefore && s.probe.Load() < deadBefore {
				dead = s
			}
		}
	}
	if dead == nil {
		return nil
	}
	dead.mac.Store(0)
	dead.seen.Store(0)
	dead.probe.Store(0)
	dead.key.Store(ip)
	return dead
}

// learn records that ip is at mac (now). With create false only an
// existing entry is updated (an unsolicited ARP does not make entries).
// Static entries are never overwritten. It reports whether an entry was
// updated.
func (t *table) learn(ip uint32, mac uint64, now int64, create bool, deadBefore int64) bool {
	s, m := t.find(ip)
	if s == nil {
		if !create {
			return false
		}
		if s = t.insert(ip, deadBefore); s == nil {
			return false
		}
		m = s.mac.Load()
	}
	if m&macStatic != 0 {
		return false
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
	return true
}

// setStatic installs a configured neighbour.
func (t *table) setStatic(ip uint32, mac uint64) bool {
	s := t.insert(ip, 0)
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
