package conntrack

import (
	"math/rand/v2"
	"testing"

	"github.com/junction-dataplane/junction/packet"
)

// TestEvictionOrder checks that a full table evicts exactly in the order
// of its evictable list while eviction's lookahead (evictAhead's guesses
// by creation order) is wrong as often as it is right: flows are deleted,
// become assured, start closing (joining the list's tail out of creation
// order) and reopen between evictions, and the tag counter wraps. A model
// kept beside the table (a slice of the evictable flows in the order they
// became evictable: created unassured, or started closing) names every
// victim; each new flow in a full table must evict exactly that flow,
// after looking at one entry, and the table's list must read as the model
// after every step. Every flow's expiry is far away, so every
// eviction is an eviction.
func TestEvictionOrder(t *testing.T) {
	for _, capacity := range []int{16, 1000} {
		testEvictionOrder(t, capacity)
	}
}

func testEvictionOrder(t *testing.T, capacity int) {
	now := int64(1)
	tb := NewTable(capacity, DefaultTimeouts(), func() int64 { return now })
	tb.tag = ^uint32(0) - uint32(capacity) // the tags wrap past 0 (never used) during the test
	rng := rand.New(rand.NewPCG(uint64(capacity), 7))

	type flow struct {
		k        Tuple
		assured  bool
		closing  bool
		evictble bool
	}
	var model []Tuple          // the evictable flows, oldest first
	flows := map[Tuple]*flow{} // the live flows
	var keys []Tuple           // live flows' keys, for picking one at random
	evictable := func(f *flow) bool { return !f.assured || f.closing }
	remove := func(k Tuple) {
		for i := range model {
			if model[i] == k {
				model = append(model[:i], model[i+1:]...)
				return
			}
		}
		t.Fatalf("%v is not in the model", k)
	}
	forget := func(k Tuple) {
		delete(flows, k)
		for i := range keys {
			if keys[i] == k {
				keys[i] = keys[len(keys)-1]
				keys = keys[:len(keys)-1]
				return
			}
		}
	}
	// moved applies a change of f's flags to the model's list.
	moved := func(f *flow) {
		switch e := evictable(f); {
		case e && !f.evictble:
			model = append(model, f.k)
		case !e && f.evictble:
			remove(f.k)
		}
		f.evictble = evictable(f)
	}
	idxOf := func(k Tuple) uint32 {
		idx, dir, ok := tb.Lookup(&k)
		if !ok || dir != 0 {
			t.Fatalf("live flow %v not found", k)
		}
		return idx
	}
	checkList := func(step int) {
		i := 0
		for e := tb.lists[0].head; e != 0; e = tb.conns[e].nxt {
			if i >= len(model) || tb.conns[e].T[0] != model[i] {
				t.Fatalf("capacity %d step %d: evictable list differs from the model at position %d", capacity, step, i)
			}
			i++
		}
		if i != len(model) {
			t.Fatalf("capacity %d step %d: evictable list has %d flows, the model %d", capacity, step, i, len(model))
		}
	}

	next := uint32(0)
	evictions := 0
	for step := range 40 * capacity {
		switch r := rng.IntN(10); {
		case r < 6 || len(keys) == 0:
			// A new flow (a third TCP, so that it can close).
			next++
			k := Tuple{Src: 10<<24 | next, Dst: 8<<24 | 8, Sport: uint16(next), Dport: 53, Proto: packet.ProtoUDP}
			if next%3 == 0 {
				k.Proto = packet.ProtoTCP
			}
			full := tb.Len() == capacity
			var victim Tuple
			if full {
				if len(model) == 0 {
					continue // nothing evictable: refused, as TestEvictionBounded checks
				}
				victim = model[0]
			}
			p0 := tb.EvictProbes()
			idx, ok := tb.Create(&k, now)
			if !ok {
				t.Fatalf("capacity %d step %d: new flow refused with %d evictable", capacity, step, len(model))
			}
			tb.Conn(idx).Expires = now + 1e15
			if full {
				if d := tb.EvictProbes() - p0; d != 1 {
					t.Fatalf("capacity %d step %d: eviction looked at %d entries", capacity, step, d)
				}
				if _, _, still := tb.Lookup(&victim); still {
					t.Fatalf("capacity %d step %d: the list's oldest evictable flow %v was not the one evicted", capacity, step, victim)
				}
				remove(victim)
				forget(victim)
				evictions++
			}
			f := &flow{k: k}
			flows[k] = f
			keys = append(keys, k)
			moved(f)
		case r == 6:
			k := keys[rng.IntN(len(keys))]
			tb.Delete(idxOf(k))
			if flows[k].evictble {
				remove(k)
			}
			forget(k)
		case r == 7:
			f := flows[keys[rng.IntN(len(keys))]]
			tb.SetAssured(idxOf(f.k))
			f.assured = true
			moved(f)
		default:
			// A TCP flow starts closing, or reopens.
			f := flows[keys[rng.IntN(len(keys))]]
			if f.k.Proto != packet.ProtoTCP {
				continue
			}
			idx := idxOf(f.k)
			if f.closing {
				tb.setTCPState(idx, TCPSynSent)
			} else {
				tb.setTCPState(idx, TCPFinWait+uint8(rng.IntN(int(TCPClose-TCPFinWait+1))))
			}
			f.closing = !f.closing
			moved(f)
		}
		checkList(step)
		if tb.Len() != len(flows) {
			t.Fatalf("capacity %d step %d: %d live flows, the model %d", capacity, step, tb.Len(), len(flows))
		}
	}
	if evictions < capacity {
		t.Fatalf("capacity %d: only %d evictions", capacity, evictions)
	}
	if tb.tag > uint32(40*capacity) {
		t.Fatalf("capacity %d: the tags did not wrap (%d)", capacity, tb.tag)
	}
}

// TestMissHint checks warmNew's miss answers against the index: a chunk
// of keys is looked up (warmNew) and then, as Conntrack's track loop
// does, found one by one (findHinted, with warmNew's answer) and created
// when missing; the chunk repeats keys and holds the inverses of earlier
// ones, so that a key that missed in warmNew is linked by an earlier
// packet of the chunk. Each findHinted must agree with a lookup made
// then. In a table cut to two buckets every bucket overflows, so keys
// are also linked past their own bucket (link bumps gen there too).
// Every other chunk is prepared as Conntrack does (warm finds most misses
// from the bucket alone). Checked by mutation: a miss trusted whatever
// the gen, a link that does not bump gen, or warm taking a bucket with an
// overflow count for a miss, fails it.
func TestMissHint(t *testing.T) {
	for _, cut := range []bool{false, true} {
		now := int64(1)
		tb := NewTable(64, DefaultTimeouts(), func() int64 { return now })
		if cut {
			// 16 nodes in two buckets of nine slots
			// (TestChainLinks).
			tb = NewTable(8, DefaultTimeouts(), func() int64 { return now })
			tb.buckets, tb.mask = tb.buckets[:2], 1
		}
		rng := rand.New(rand.NewPCG(3, 4))
		for round := range 200 {
			var keys []Tuple
			for len(keys) < chunk {
				switch r := rng.IntN(4); {
				case r == 0 && len(keys) > 0:
					keys = append(keys, keys[rng.IntN(len(keys))])
				case r == 1 && len(keys) > 0:
					keys = append(keys, keys[rng.IntN(len(keys))].Inverse())
				default:
					keys = append(keys, Tuple{Src: 10<<24 | uint32(rng.IntN(200)), Dst: 8<<24 | 8, Sport: 1000, Dport: 53, Proto: packet.ProtoUDP})
				}
			}
			hs := make([]uint32, len(keys))
			ok := make([]int, len(keys))
			found := make([]uint32, len(keys))
			if round%2 == 0 {
				tb.Warm(keys, hs) // warmNew looks every key up
			} else {
				tb.warm(keys, hs, 2, found) // as Conntrack: warm answers most misses
			}
			tb.warmNew(keys, hs, ok, found)
			for i := range keys {
				wantIdx, wantDir, want := tb.lookupIn(&keys[i], hs[i])
				idx, dir, got := tb.findHinted(&keys[i], hs[i], found[i], now)
				if got != want || got && (idx != wantIdx || dir != wantDir) {
					t.Fatalf("cut %v round %d key %d: findHinted %d/%d/%v, the index %d/%d/%v", cut, round, i, idx, dir, got, wantIdx, wantDir, want)
				}
				if !got {
					idx, ok := tb.Create(&keys[i], now)
					if !ok {
						t.Fatalf("cut %v round %d: create refused", cut, round)
					}
					tb.Conn(idx).Expires = now + 1e15
					if rng.IntN(8) == 0 {
						tb.Delete(idx) // later packets of the chunk miss again
					}
				}
			}
		}
	}
}
