package nat

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/junction-dataplane/junction/elements/flowsteer"
)

// testStore is a mapping store of one outside address (203.0.113.1) with
// ports lo..hi shared by workers, address-and-port-dependent filtering,
// held by the test until its end.
func testStore(t *testing.T, lo, hi uint16, workers int) *mapStore {
	s := newMapStore("t", []uint32{0xcb007101}, lo, hi, workers, filterAPD, [2]uint32{240, 300})
	t.Cleanup(func() { s.release1() })
	s.refs.Add(1)
	return s
}

// TestFreeStacks churns the mappings of a 64-port range on worker 1 of 2,
// taking ports out of order (kept or drawn), popping them and freeing
// them again, some more than once, and checks after every change that the
// free stacks hold each port at most once and exactly the ports marked on
// them; that the count of free ports is the number of unmapped ports on
// the stack; that the used bits are the words' wordUsed bits; and, at the
// end, that popping empties exactly the free ports, none mapped. Now and
// then the mapped ports are dropped from a stack (dropTaken, tidy's pass).
// Pushing a port already on its stack, counting a taken port as still
// free, popping a mapped one, or a drop that leaves a dropped port marked
// (a freed port then never pushed) fails it.
func TestFreeStacks(t *testing.T) {
	s := testStore(t, 1024, 1087, 2)
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
			if tb.inUse(p-s.lo) != (tb.ents[p-s.lo].word.Load()&wordUsed != 0) || tb.inUse(p-s.lo) != live[p] {
				t.Fatalf("step %d: port %d: used bit %v, word %x, mapped %v", step, p, tb.inUse(p-s.lo), tb.ents[p-s.lo].word.Load(), live[p])
			}
		}
	}
	for step := range 5000 {
		if rng.IntN(16) == 0 {
			s.dropTaken(tb, rng.IntN(2)) // what tidy does, on stacks too small for it
		}
		switch r := rng.IntN(4); {
		case r < 2 && len(live) < len(owned):
			var want uint16 // 0: pop
			if r == 0 {
				want = owned[rng.IntN(len(owned))]
			}
			o, ok := newPort(s, steer, tb, rng, want, live)
			if !ok {
				continue
			}
			if live[o] {
				t.Fatalf("step %d: pop gave mapped port %d", step, o)
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

// newPort gives a new mapping in tb a port the two ways the NAT does:
// want out of order (a port kept by its endpoint, or drawn), taken off
// its stack, or with want 0 one popped from the free stack of a random
// parity. False: want is mapped already, or the stack is empty.
func newPort(s *mapStore, steer *flowsteer.Table, tb *mapTable, rng *rand.Rand, want uint16, live map[uint16]bool) (uint16, bool) {
	if want == 0 {
		return s.pop(steer, 17, s.addrs[0], tb, rng.IntN(2))
	}
	if live[want] {
		return 0, false
	}
	s.take(tb, want)
	return want, true
}

func contains(s []uint16, p uint16) bool {
	for _, x := range s {
		if x == p {
			return true
		}
	}
	return false
}

// TestTidy maps a full range's ports the way new mappings do (most out of
// order: kept or drawn, the rest popped) and checks, after each tidy of
// the table, that the free stacks hold exactly the free ports in the order
// they had (so that pops give the same ports), that no taken port is left
// once tidy dropped them and none when they are fewer than the free ports,
// and that pops then give the free ports in the stacks' order. It fails
// when tidy reorders a stack, drops a free port or keeps a mapped one.
func TestTidy(t *testing.T) {
	s := testStore(t, 1024, 9215, 1)
	steer := &flowsteer.Table{}
	m := s.worker(0, steer)
	tb := &m.tabs[1][0]
	rng := rand.New(rand.NewPCG(5, 6))
	live := map[uint16]bool{}
	tidied := 0
	for step := 0; len(live) < 8000; step++ {
		want := [2][]uint16{}
		for par := range 2 {
			for _, p := range tb.free[par] {
				if !live[p] {
					want[par] = append(want[par], p)
				}
			}
		}
		before := [2]int{len(tb.free[0]), len(tb.free[1])}
		s.tidy(tb)
		for par := range 2 {
			g := before[par] - tb.nfree[par]
			if len(tb.free[par]) != before[par] {
				tidied++
				if g < tidyMin || g < tb.nfree[par] {
					t.Fatalf("step %d: parity %d tidied with %d taken and %d free", step, par, g, tb.nfree[par])
				}
				if !slices.Equal(tb.free[par], want[par]) {
					t.Fatalf("step %d: parity %d: stack %v after tidy, want the free ports in order %v", step, par, tb.free[par], want[par])
				}
			} else if g >= tidyMin && g >= tb.nfree[par] {
				t.Fatalf("step %d: parity %d left with %d taken and %d free", step, par, g, tb.nfree[par])
			}
			for _, p := range tb.free[par] {
				if !testBit(tb.onStack, p-s.lo) {
					t.Fatalf("step %d: port %d on its stack, not marked", step, p)
				}
			}
		}
		for p := s.lo; p <= s.hi; p++ {
			if live[p] && testBit(tb.onStack, p-s.lo) && !contains(tb.free[p&1], p) {
				t.Fatalf("step %d: mapped port %d marked on its stack, not there", step, p)
			}
		}
		// A batch of new mappings: three in four out of order.
		for range 64 {
			var want uint16 // 0: pop
			if rng.IntN(4) != 0 {
				want = s.lo + uint16(rng.IntN(int(s.hi-s.lo)+1))
			}
			o, ok := newPort(s, steer, tb, rng, want, live)
			if !ok {
				continue
			}
			s.install(m, tb, endpointKey(0x0a000000+uint32(len(live)), o), o, o, 0)
			live[o] = true
		}
	}
	if tidied == 0 {
		t.Fatal("no stack tidied")
	}
	// What is left pops in the stacks' order.
	for par := range 2 {
		want := slices.DeleteFunc(slices.Clone(tb.free[par]), func(p uint16) bool { return live[p] })
		s.dropTaken(tb, par)
		if !slices.Equal(tb.free[par], want) {
			t.Fatalf("parity %d: dropTaken kept a mapped port or reordered", par)
		}
		for i := len(want) - 1; i >= 0; i-- {
			o, ok := s.pop(steer, 17, s.addrs[0], tb, par)
			if !ok || o != want[i] {
				t.Fatalf("parity %d: pop gave %d %v, want %d", par, o, ok, want[i])
			}
		}
	}
}
