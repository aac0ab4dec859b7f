package route

import (
	"math/rand/v2"
	"net/netip"
	"os"
	"runtime"
	"strings"
	"testing"
	"unsafe"

	"github.com/junction-dataplane/junction/packet"
)

// sameFIB4 compares two IPv4 versions entry by entry: every tbl24 entry,
// and every group entry behind one. Values and group numbers must be
// equal, not only the routes they stand for (both sides are built by the
// same sequence of operations).
func sameFIB4(t *testing.T, a, b *fib) {
	t.Helper()
	for s := uint32(0); s < 1<<24; s++ {
		ea := a.pages[s>>pageBits][s&(pageSize-1)]
		eb := b.pages[s>>pageBits][s&(pageSize-1)]
		if ea != eb {
			t.Fatalf("/24 %v: entry %#x, want %#x", packet.AddrFromU32(s<<8), ea, eb)
		}
		if ea&grpBit == 0 {
			continue
		}
		for j := uint32(0); j < 256; j++ {
			if va, vb := a.lookup4(s<<8|j), b.lookup4(s<<8|j); va != vb {
				t.Fatalf("lookup %v: %d, want %d", packet.AddrFromU32(s<<8|j), va, vb)
			}
		}
	}
}

// snapshot4 records a version's answers for dsts.
func snapshot4(f *fib, dsts []uint32) []uint16 {
	out := make([]uint16, len(dsts))
	f.lookup4Batch(dsts, out)
	return out
}

// slabCounts returns the pages the writer's version owns and how many of
// them are in its slab.
func slabCounts(w *writerState) (own, inSlab int) {
	for _, p := range w.pages {
		if w.ownPage(p) {
			own++
			if w.slab.contains(p) {
				inSlab++
			}
		}
	}
	return
}

func bigRoutes(n int) []Route {
	return GenerateRoutes(GenOptions{Seed: 3, Routes: n, NextHops: 50, Default: true})
}

// newTableHeap builds a table the way it was built before slabs.
func newTableHeap(t *testing.T, rs []Route) *Table {
	t.Helper()
	tb, err := NewTableHeap(rs)
	if err != nil {
		t.Fatal(err)
	}
	return tb
}

// TestSlabMatchesHeap: a table whose pages come from a slab gives exactly
// the heap-built table's entries, after the build and after copy-on-write
// updates (small batches, then a large one that repacks), and the versions
// published before each update are left untouched.
func TestSlabMatchesHeap(t *testing.T) {
	rs := bigRoutes(150_000)
	ts, err := NewTable(rs)
	if err != nil {
		t.Fatal(err)
	}
	th := newTableHeap(t, rs)
	if th.w.slab != nil {
		t.Fatal("heap build has a slab")
	}
	s := ts.w.slab
	if s == nil {
		t.Fatalf("no slab for %d pages", estimatePages4(rs))
	}
	own, in := slabCounts(ts.w)
	if own != in || own != s.next || s.next != estimatePages4(rs) || ts.w.heapNew != 0 {
		t.Fatalf("build: %d own pages, %d in the slab, %d taken, estimate %d, %d from the heap",
			own, in, s.next, estimatePages4(rs), ts.w.heapNew)
	}
	t.Logf("slab: %d pages (%d MiB), %d used, huge-page advice %v", len(s.pages), len(s.pages)*page4Bytes>>20, s.next, s.advised)
	sameFIB4(t, ts.cur.Load(), th.cur.Load())

	rng := rand.New(rand.NewPCG(11, 12))
	dsts := make([]uint32, 1<<16)
	for i := range dsts {
		dsts[i] = probe(rng, rs)
	}
	type old struct {
		f    *fib
		want []uint16
	}
	var olds []old
	update := func(cs []Change) {
		t.Helper()
		f := ts.cur.Load()
		olds = append(olds, old{f, snapshot4(f, dsts)})
		if err := ts.Apply(cs); err != nil {
			t.Fatal(err)
		}
		if err := th.Apply(cs); err != nil {
			t.Fatal(err)
		}
		sameFIB4(t, ts.cur.Load(), th.cur.Load())
		for i, o := range olds {
			if got := snapshot4(o.f, dsts); !equalU16(got, o.want) {
				t.Fatalf("version %d changed after a later update", i)
			}
		}
	}
	changes := func(n int) []Change {
		cs := make([]Change, n)
		for i := range cs {
			r := rs[rng.IntN(len(rs))]
			switch rng.IntN(3) {
			case 0:
				cs[i] = Change{Route: r, Delete: true}
			case 1:
				r.NextHop = addrU32(0x0c000001 + uint32(rng.IntN(20)))
				cs[i] = Change{Route: r}
			default:
				// A new /25../28 inside a random existing route's /24.
				a := u32of(r.Prefix.Addr())&^0xff | uint32(rng.IntN(256))
				l := 25 + rng.IntN(4)
				p := netip.PrefixFrom(packet.AddrFromU32(a), l).Masked()
				cs[i] = Change{Route: Route{Prefix: p, NextHop: addrU32(0x0d000001), Out: 1}}
			}
		}
		return cs
	}
	// Small batches: copies come from the slab's spare room, then the heap.
	for range 5 {
		update(changes(50))
	}
	if ts.w.slab != s {
		t.Fatal("small updates repacked")
	}
	_, in = slabCounts(ts.w)
	t.Logf("after small updates: %d pages in the slab, %d from the heap", in, ts.w.heapNew)
	// A large batch copies more than a quarter of the pages: it repacks.
	update(changes(20_000))
	if ts.w.slab == s {
		t.Fatal("a large update did not repack")
	}
	if own, in := slabCounts(ts.w); own != in {
		t.Fatalf("after repack: %d own pages, %d in the new slab", own, in)
	}
	// And small ones again, on the new slab.
	for range 3 {
		update(changes(50))
	}
	// Rebuilds (Replace) start a fresh slab.
	if err := ts.Replace(rs[:100_000]); err != nil {
		t.Fatal(err)
	}
	err = th.Replace(rs[:100_000]) // th keeps its heap layout
	if err != nil {
		t.Fatal(err)
	}
	sameFIB4(t, ts.cur.Load(), th.cur.Load())
}

func equalU16(a, b []uint16) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestSlabWithoutAdvice: when the kernel gives no huge pages (madvise
// refused, THP off, not Linux) the slab is plain heap memory and the table
// is the same.
func TestSlabWithoutAdvice(t *testing.T) {
	rs := bigRoutes(60_000)
	ts, err := newTableLayout(rs, Limits{}, false, pageLayout{noAdvice: true})
	if err != nil {
		t.Fatal(err)
	}
	if ts.w.slab == nil || ts.w.slab.advised {
		t.Fatalf("slab %v", ts.w.slab)
	}
	sameFIB4(t, ts.cur.Load(), newTableHeap(t, rs).cur.Load())
}

// TestSlabSmallTable: a small table stays on the heap (no 2 MiB slab for
// a few pages) and does not repack.
func TestSlabSmallTable(t *testing.T) {
	rs := bigRoutes(200)
	tb, err := NewTable(rs)
	if err != nil {
		t.Fatal(err)
	}
	if n := estimatePages4(rs); tb.w.slab != nil || n >= slabMinPages {
		t.Fatalf("%d pages: slab %v", n, tb.w.slab != nil)
	}
	if err := tb.Insert(Route{Prefix: netip.MustParsePrefix("10.9.8.0/24"), Out: 1}); err != nil {
		t.Fatal(err)
	}
	if tb.w.slab != nil {
		t.Fatal("small table repacked into a slab")
	}
}

// TestSlabAlignedAndZero: the slab's usable part is 2 MiB aligned, whole
// huge pages, and zero even when the heap reuses memory.
func TestSlabAlignedAndZero(t *testing.T) {
	for range 3 {
		// Dirty some large heap memory and free it.
		junk := make([]page4, 2*pagesPerHuge)
		for i := range junk {
			junk[i][7] = 0xffff
		}
		junk = nil
		runtime.GC()
		s := newPageSlab(pagesPerHuge+44, true)
		if len(s.pages) != 2*pagesPerHuge {
			t.Fatalf("slab of %d pages, want %d", len(s.pages), 2*pagesPerHuge)
		}
		if a := uintptr(unsafe.Pointer(&s.pages[0])); a%hugePageSize != 0 {
			t.Fatalf("slab at %#x", a)
		}
		for i := range s.pages {
			if s.pages[i] != (page4{}) {
				t.Fatalf("page %d not zero", i)
			}
		}
		for range len(s.pages) {
			if s.take() == nil {
				t.Fatal("slab full early")
			}
		}
		if s.take() != nil {
			t.Fatal("slab gives more than it holds")
		}
	}
}

// TestSlabHugePages: on Linux with THP available, the slab of a large
// table is backed by huge pages (AnonHugePages in /proc/self/smaps).
func TestSlabHugePages(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("huge pages are only requested on Linux")
	}
	b, err := os.ReadFile("/sys/kernel/mm/transparent_hugepage/enabled")
	if err != nil || strings.Contains(string(b), "[never]") {
		t.Skip("transparent huge pages unavailable")
	}
	tb, err := NewTable(bigRoutes(150_000))
	if err != nil {
		t.Fatal(err)
	}
	s := tb.w.slab
	used := s.next * page4Bytes
	h := s.hugeBytes()
	t.Logf("%d of %d KiB on huge pages", h>>10, used>>10)
	if !s.advised {
		t.Skip("madvise(MADV_HUGEPAGE) refused")
	}
	// All but the partial huge page at the end should be huge; allow
	// for a kernel short of free 2 MiB blocks, but not for none at all.
	if h < used/2 {
		t.Fatalf("only %d of %d bytes on huge pages", h, used)
	}
}
