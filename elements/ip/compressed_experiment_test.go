package ip

import (
	"math/bits"
	"testing"
	"unsafe"
)

// An experiment, not a structure Junction uses: could a compressed table
// meet "random ≤ 1.3× single" over the whole address space, where the
// DIR-24-8 table (32 MiB) gives 7.4×? rle24 is tbl24 compressed by runs
// (Poptrie's leaf compression, without its internal nodes): per block of
// 64 /24 entries, a bitmap of where a new value starts and the index of
// the block's first value; a lookup reads the block (one line), counts
// bits below its own and reads the value (a second, dependent line); the
// groups of prefixes longer than /24 are the fib's. On the 1M synthetic
// table it takes 4 MiB of blocks and 1.94M values (3.7 MiB): 7.7 MiB, a
// quarter of the fib. Results (routing.md): random 10.4–13.8 ns against
// 2.8 ns single — smaller, faster at random, but still ≥ 3.7× single,
// because two dependent reads beyond the 1 MiB L2 cost what they cost.
type rleBlock struct {
	bm   uint64
	base uint32
	_    uint32
}

type rle24 struct {
	blk  []rleBlock
	vals []uint16
	f    *fib
}

func buildRLE(f *fib) *rle24 {
	r := &rle24{f: f, blk: make([]rleBlock, 1<<18)}
	var prev uint16
	for b := range 1 << 18 {
		r.blk[b].base = uint32(len(r.vals))
		for i := range 64 {
			idx := uint32(b<<6 | i)
			e := f.pages[idx>>pageBits][idx&(pageSize-1)]
			if i == 0 || e != prev {
				r.blk[b].bm |= 1 << i
				r.vals = append(r.vals, e)
			}
			prev = e
		}
	}
	return r
}

func (r *rle24) lookup(dst uint32) uint16 {
	i := dst >> 8
	b := &r.blk[i>>6]
	n := bits.OnesCount64(b.bm << (63 - i&63))
	e := r.vals[b.base+uint32(n)-1]
	if e&grpBit != 0 {
		g := uint32(e &^ grpBit)
		e = r.f.pages[tbl24Pages+(g>>4)&(groupPages-1)][(g&15)<<8|dst&0xff]
	}
	return e
}

// BenchmarkCompressedExperiment checks rle24 against the fib on 64k random
// destinations, then measures both, random over the whole space, spread
// over the goal's 1.25M destinations, and single.
func BenchmarkCompressedExperiment(b *testing.B) {
	tb, dsts := big1M(b)
	f := tb.cur.Load()
	r := buildRLE(f)
	b.Logf("blocks %d MiB, values %d (%d MiB)", len(r.blk)*int(unsafe.Sizeof(rleBlock{}))>>20, len(r.vals), len(r.vals)*2>>20)
	for i, d := range dsts[:1<<16] {
		if r.lookup(d) != f.lookup4(d) {
			b.Fatalf("dst %d %x: rle %d, fib %d", i, d, r.lookup(d), f.lookup4(d))
		}
	}
	// Two copies of one loop, one per structure: a function value would
	// add an indirect call to what is measured.
	for _, c := range dstSets(dsts) {
		b.Run(c.name, func(b *testing.B) {
			var sink uint16
			i := 0
			for b.Loop() {
				sink += r.lookup(c.d[i&(1<<20-1)])
				i++
			}
			_ = sink
		})
		b.Run(c.name+"-fib", func(b *testing.B) {
			var sink uint16
			i := 0
			for b.Loop() {
				sink += f.lookup4(c.d[i&(1<<20-1)])
				i++
			}
			_ = sink
		})
	}
}
