package nat

import (
	"math/rand/v2"
	"testing"

	"github.com/junction-dataplane/junction/elements/conntrack"
	"github.com/junction-dataplane/junction/elements/flowsteer"
	"github.com/junction-dataplane/junction/packet"
)

// TestGuessSkip: allocate, given what warmLines' guess found (the drawn
// ports it need not draw and look at again), picks the port it picks
// without it, for new endpoints on a 1,024-port range filled up to every
// port, with mappings ending between the guess and the choice (half of
// them the endpoint's first drawn port, which the choice must then look
// at again). It fails when the skipped draws are not the ones guess found
// taken or when a mapping ended since is not noticed.
func TestGuessSkip(t *testing.T) {
	s := testStore(t, 2048, 3071, 1)
	steer := &flowsteer.Table{}
	m := s.worker(0, steer)
	mt := &m.tabs[1][0]
	e := &SNAT{ms: s, mw: m, steer: steer}
	rng := rand.New(rand.NewPCG(3, 4))
	live := map[uint16]uint64{} // outside port -> endpoint word
	const now = int64(1) << 40
	skipped, ended := 0, 0
	for i := range 4000 {
		k := conntrack.Tuple{Src: 0x0a000000 | rng.Uint32()&0xffff, Sport: uint16(1024 + rng.IntN(4096)), Proto: packet.ProtoUDP}
		key := endpointKey(k.Src, k.Sport)
		if _, ok := m.idx[1].get(key); ok || k.Sport >= s.lo && k.Sport <= s.hi && mt.ents[k.Sport-s.lo].word.Load() == key {
			continue // already mapped
		}
		if mt.nfree[0]+mt.nfree[1] == 0 {
			// Full: end a few mappings.
			for p := range live {
				s.release(m, mt, p)
				delete(live, p)
				if len(live) < 900 {
					break
				}
			}
		}
		e.gtab, e.gtop = mt, [2]int{-1, -1}
		_, skip := s.guess(mt, &k, s.addrs[0], 0, &e.gtop)
		e.mat[0] = 1
		e.mah[0] = mapAhead{k: &k, skip: skip, rel: m.releases}
		if skip > 0 {
			skipped++
		}
		if rng.IntN(4) == 0 {
			// A mapping ends between the guess and the choice: the
			// endpoint's first drawn port, if mapped, else any.
			d := drawSeed(&k, s.addrs[0])
			p, _ := s.nextDraw(&d, k.Sport)
			if _, ok := live[p]; !ok || rng.IntN(2) == 0 {
				for q := range live {
					p = q
					break
				}
			}
			if _, ok := live[p]; ok {
				s.release(m, mt, p)
				delete(live, p)
				ended++
			}
		}
		got, ok1 := e.allocate(nil, mt, s.addrs[0], &k, now, 0)
		if ok1 {
			s.putFree(mt, got) // undone, as a failed claim does
		}
		want, ok2 := e.allocate(nil, mt, s.addrs[0], &k, now, len(e.mat)) // without the guess
		if got != want || ok1 != ok2 {
			t.Fatalf("flow %d (%#x:%d, guess skipped %d): port %d %v with the guess, %d %v without", i, k.Src, k.Sport, skip, got, ok1, want, ok2)
		}
		if ok2 {
			s.install(m, mt, key, k.Sport, want, now)
			live[want] = key
		}
	}
	if skipped < 1000 || ended < 500 {
		t.Fatalf("%d choices with skipped draws, %d mappings ended between guess and choice: too few to tell", skipped, ended)
	}
}
