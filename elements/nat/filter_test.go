package nat

import (
	"math/bits"
	"math/rand/v2"
	"testing"

	"github.com/junction-dataplane/junction/elements/flowsteer"
)

// TestMapFilter churns the mappings of a 256-port range (UDP and TCP,
// mappings that keep their port and ones in the index) well past the
// filter's rebuilds and checks after every change that find gives every
// live endpoint its port (the filter never hides a mapping, before or
// after a rebuild) and no endpoint without one a port; that a rebuild
// leaves no bit set but a live mapping's; and that the filter answers
// most never-mapped endpoints without the tables.
func TestMapFilter(t *testing.T) {
	s := testStore(t, 1024, 1279, 1)
	m := s.worker(0, &flowsteer.Table{})
	rng := rand.New(rand.NewPCG(1, 2))
	type ep struct {
		pi   int
		addr uint32
		port uint16
	}
	live := map[ep]uint16{}
	var order []ep
	rebuilds, checked := 0, 0
	check := func() {
		t.Helper()
		for e, o := range live {
			tb := &m.tabs[e.pi][0]
			if got, ok := s.find(m, tb, endpointKey(e.addr, e.port), e.port); !ok || got != o {
				t.Fatalf("after %d rebuilds: %+v: find %d %v, want %d", rebuilds, e, got, ok, o)
			}
		}
		for range 32 {
			e := ep{rng.IntN(2), 0x0a000000 + rng.Uint32N(1<<16), uint16(1024 + rng.IntN(256))}
			if _, ok := live[e]; ok {
				continue
			}
			if p, ok := s.find(m, &m.tabs[e.pi][0], endpointKey(e.addr, e.port), e.port); ok {
				t.Fatalf("%+v has no mapping, find gave %d", e, p)
			}
		}
		checked++
	}
	for step := range 20_000 {
		if len(live) < 400 && rng.IntN(3) != 0 {
			e := ep{rng.IntN(2), 0x0a000000 + rng.Uint32N(1<<16), uint16(1024 + rng.IntN(256))}
			tb := &m.tabs[e.pi][0]
			if _, ok := live[e]; ok {
				continue
			}
			o := e.port
			if tb.ents[o-s.lo].word.Load()&wordUsed != 0 {
				var ok bool
				if o, ok = s.pop(&flowsteer.Table{}, 17, s.addrs[0], tb, int(e.port&1)); !ok {
					continue
				}
			} else {
				s.take(tb, o)
			}
			s.install(m, tb, endpointKey(e.addr, e.port), e.port, o, 0)
			live[e] = o
			order = append(order, e)
		} else if len(order) > 0 {
			i := rng.IntN(len(order))
			e := order[i]
			order[i] = order[len(order)-1]
			order = order[:len(order)-1]
			stale := m.filt.stale
			s.release(m, &m.tabs[e.pi][0], live[e])
			delete(live, e)
			if m.filt.stale < stale {
				rebuilds++
				set := 0
				for _, w := range m.filt.bits {
					set += bits.OnesCount64(w)
				}
				if set > 3*len(live) {
					t.Fatalf("after a rebuild %d bits set for %d live mappings", set, len(live))
				}
			}
		}
		if step%97 == 0 {
			check()
		}
	}
	check()
	if rebuilds < 10 {
		t.Fatalf("%d rebuilds: the churn did not exercise them", rebuilds)
	}
	// A never-mapped endpoint reads the tables only when its bits are
	// set: with 400 of 512 ports mapped, at most 1,200 of the 4096 bits
	// (three each), and all three of about 1 in 40.
	miss := 0
	for range 10_000 {
		k := endpointKey(0x0b000000+rng.Uint32N(1<<20), uint16(rng.IntN(65536))) | uint64(rng.IntN(2))<<1
		if m.filt.has(k) {
			miss++
		}
	}
	if miss > 10_000*(400+m.filt.stale)/4096+300 {
		t.Errorf("%d of 10000 new endpoints passed the filter", miss)
	}
	t.Logf("%d rebuilds, %d checks, %d of 10000 new endpoints passed the filter", rebuilds, checked, miss)
}
