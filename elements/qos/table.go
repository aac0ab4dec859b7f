package qos

import "math/bits"

// ways is the associativity of a keyed policer's table: a key lives in one
// set of ways entries, so a lookup compares at most ways keys and the
// table needs no chaining or resizing.
const ways = 4

// entry is one key's meter.
type entry struct {
	k0, k1 uint64 // the key
	kind   uint8  // what the key is (kind*); 0: the entry is free
	m      meter
}

// Key kinds: an IPv4 or IPv6 prefix, a flow hash, a frame that is not IP.
const (
	kindFree = iota
	kindIPv4
	kindIPv6
	kindFlow
	kindOther
)

// table is one worker's bounded set of meters by key (an address prefix or
// a flow hash). When a key's set is full, the entry refilled longest ago
// gives way: an entry idle for longer than it takes its buckets to fill is
// full anyway, so evicting it changes no colour; one evicted sooner comes
// back full (counted as evictions).
type table struct {
	e    []entry
	mask uint64 // sets - 1
}

func newTable(capacity int) table {
	sets := max(1, capacity/ways)
	sets = 1 << bits.Len(uint(sets-1)) // a power of two
	return table{e: make([]entry, sets*ways), mask: uint64(sets - 1)}
}

// setOf is the set a key lives in: a multiplicative hash (the key is an
// address prefix or an already mixed flow hash), its high bits.
func (t *table) setOf(k0, k1 uint64, kind uint8) []entry {
	h := (k0^uint64(kind)<<59)*0x9e3779b97f4a7c15 ^ k1*0xc2b2ae3d27d4eb4f
	return t.e[((h>>32)&t.mask)*ways:][:ways]
}

// lookup returns the meter of key (k0, k1, kind) in set (setOf's),
// made full if it had none; evicted reports that making it evicted a
// meter not yet full.
func (t *table) lookup(set []entry, k0, k1 uint64, kind uint8, pr *profile, now int64) (m *meter, evicted bool) {
	victim := 0
	for i := range set {
		e := &set[i]
		if e.k0 == k0 && e.k1 == k1 && e.kind == kind {
			return &e.m, false
		}
		if e.kind == kindFree {
			victim = i
			break
		}
		if e.m.last < set[victim].m.last {
			victim = i
		}
	}
	e := &set[victim]
	evicted = e.kind != kindFree && now-e.m.last < pr.fullAfter
	e.k0, e.k1, e.kind, e.m = k0, k1, kind, pr.full(now)
	return &e.m, evicted
}
