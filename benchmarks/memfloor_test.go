package benchmarks

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// BenchmarkMemoryFloor is the floor under any lookup structure's
// random/single ratio on this machine: one 2-byte read at a random index
// of an array (what the last step of any LPM lookup is: a next-hop index
// in a leaf) against a read at one fixed index, in the same loop as
// BenchmarkLookup1M's. No structure of that size can do better than one
// read, so if random/single exceeds 1.3× here for the smallest size a
// 1M-prefix table could take, the goal's "random ≤ 1.3× single" over the
// whole address space is out of reach for any structure.
//
// Sizes: 256 KiB (fits L2), 1 MiB (L2 size on this CPU), 2 MiB (about
// the information-theoretic minimum of the synthetic 1M table: 1M
// next-hop choices of log2(300) bits plus ~0.7 MB for where 1M prefixes
// sit among 2^24 /24s), 8 MiB (a good compressed trie of it), 32 MiB
// (the DIR-24-8 table).
func BenchmarkMemoryFloor(b *testing.B) {
	for _, mib := range []float64{0.25, 1, 2, 8, 32} {
		n := int(mib * (1 << 20) / 2)
		arr := make([]uint16, n)
		rng := rand.New(rand.NewPCG(9, 9))
		for i := range arr {
			arr[i] = uint16(rng.Uint32())
		}
		idx := make([]uint32, 1<<20)
		for i := range idx {
			idx[i] = rng.Uint32N(uint32(n))
		}
		one := make([]uint32, len(idx))
		for i := range one {
			one[i] = idx[0]
		}
		for _, c := range []struct {
			name string
			ix   []uint32
		}{{"random", idx}, {"single", one}} {
			b.Run(fmt.Sprintf("MiB=%g/%s", mib, c.name), func(b *testing.B) {
				var sink uint16
				i := 0
				for b.Loop() {
					sink += arr[c.ix[i&(1<<20-1)]]
					i++
				}
				_ = sink
			})
		}
	}
}
