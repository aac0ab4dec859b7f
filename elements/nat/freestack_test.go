package nat

import (
	"math/rand/v2"
	"testing"

	"github.com/junction-dataplane/junction/elements/flowsteer"
)

// TestFreeStacks churns the mappings of a 64-port range on worker 1 of 2,
// taking ports out of order (kept or drawn), popping them and freeing
// them again, some more than once, and checks after every change that the
// free stacks hold each port at most once and exactly the ports marked on
// them; that the count of free ports is the number of unmapped ports on
// the stack; that the used bits are the words' wordUsed bits; and, at the
// end, that popping empties exactly the free ports, none mapped. Pushing
// a port already on its stack, counting a taken port as still free or
// popping a mapped one fails it.
func TestFreeStacks(t *testing.T) {
	s := newMapStore("t", []uint32{0xcb007101}, 1024, 1087, 2, filterAPD, [2]uint32{240, 300})
	defer s.release1()
	s.refs.Add(1)
	steer := &flowsteer.Table{}
	m := s.worker(1, steer)
	tb := &m.tabs[1][0]
	var owned []uint16
	for p := s.lo; p <= s.hi; p++ {
		if s.owner(p) == 1 {
			owned = append(owned, p)
		}
	}
	if len(owned) == 0 || len(owned) == int(s.hi-s.lo)+1 {
		t.Fatalf("worker 1 owns %d of %d ports: want some", len(owned), s.hi-s.lo+1)
	}
	rng := rand.New(rand.NewPCG(3, 4))
	live := map[uint16]bool{}
	check := func(step int) {
		t.Helper()
		for par := range 2 {
			seen := map[uint16]bool{}
			free := 0
			for _, p := range tb.free[par] {
				if seen[p] {
					t.Fatalf("step %d: port %d twice on its stack", step, p)
				}
				seen[p] = true
				if !testBit(tb.onStack, p-s.lo) {
					t.Fatalf("step %d: port %d on its stack, not marked", step, p)
				}
				if !live[p] {
					free++
				}
			}
			if free != tb.nfree[par] {
				t.Fatalf("step %d: parity %d: %d unmapped ports on the stack, counted %d", step, par, free, tb.nfree[par])
			}
		}
		for _, p := range owned {
			if testBit(tb.onStack, p-s.lo) && !contains(tb.free[p&1], p) {
				t.Fatalf("step %d: port %d marked on its stack, not there", step, p)
			}
			if tb.inUse(p-s.lo) != (tb.words[p-s.lo].Load()&wordUsed != 0) || tb.inUse(p-s.lo) != live[p] {
				t.Fatalf("step %d: port %d: used bit %v, word %x, mapped %v", step, p, tb.inUse(p-s.lo), tb.words[p-s.lo].Load(), live[p])
			}
		}
	}
	for step := range 5000 {
		switch r := rng.IntN(4); {
		case r < 2 && len(live) < len(owned):
			var o uint16
			if r == 0 {
				// Out of order: a port kept by its endpoint or drawn.
				o = owned[rng.IntN(len(owned))]
				if live[o] {
					continue
				}
				s.take(tb, o)
			} else {
				var ok bool
				if o, ok = s.pop(steer, 17, s.addrs[0], tb, rng.IntN(2)); !ok {
					continue
				}
				if live[o] {
					t.Fatalf("step %d: pop gave mapped port %d", step, o)
				}
			}
			if rng.IntN(8) == 0 {
				s.putFree(tb, o) // the claim failed
				continue
			}
			s.install(m, tb, endpointKey(0x0a000000+uint32(step), o), o, o, 0)
			live[o] = true
		case len(live) > 0:
			for o := range live {
				s.release(m, tb, o)
				delete(live, o)
				break
			}
		}
		check(step)
	}
	for par := range 2 {
		n := tb.nfree[par]
		for range n {
			o, ok := s.pop(steer, 17, s.addrs[0], tb, par)
			if !ok || live[o] {
				t.Fatalf("popping parity %d: %d %v (mapped %v)", par, o, ok, live[o])
			}
			live[o] = true
		}
		if _, ok := s.pop(steer, 17, s.addrs[0], tb, par); ok || tb.nfree[par] != 0 {
			t.Fatalf("parity %d: a pop after the %d free ports", par, n)
		}
	}
	for _, p := range owned {
		if !live[p] {
			t.Fatalf("port %d neither mapped nor popped", p)
		}
	}
}

func contains(s []uint16, p uint16) bool {
	for _, x := range s {
		if x == p {
			return true
		}
	}
	return false
}
