package route

import (
	"math/rand/v2"
	"testing"

	"github.com/junction-dataplane/junction/packet"
)

// TestLookup6BatchAgrees: the interleaved batch walk gives what lookup6
// gives, packet by packet, on nested random routes and on batches of every
// size up to two chunks.
func TestLookup6BatchAgrees(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	rs := GenerateRoutes(GenOptions{Seed: 5, Routes6: 3000, Default: rng.IntN(2) == 0})
	tb, err := NewTable(rs)
	if err != nil {
		t.Fatal(err)
	}
	f := tb.cur.Load()
	pool := packet.NewPool(256)
	out := make([]uint16, 130)
	for round := 0; round < 200; round++ {
		n := 1 + rng.IntN(129)
		pkts := make([]*packet.Packet, n)
		for i := range pkts {
			a := rs[rng.IntN(len(rs))].Prefix.Addr().As16()
			for j := rng.IntN(17); j < 16; j++ {
				a[j] = byte(rng.Uint32())
			}
			fr := make([]byte, 14+40)
			fr[14] = 0x60
			copy(fr[14+24:], a[:])
			p := pool.Get()
			p.SetFrame(fr)
			pkts[i] = p
		}
		f.lookup6Batch(pkts, out[:n])
		for i, p := range pkts {
			a := [16]byte(p.Data[14+24:])
			if want := f.lookup6(&a); out[i] != want {
				t.Fatalf("round %d packet %d: batch %d, lookup6 %d", round, i, out[i], want)
			}
			p.Free()
		}
	}
}
