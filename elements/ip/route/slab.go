package route

import "unsafe"

// Huge pages for the IPv4 table.
//
// A 1M-prefix table spreads its lookups over 32 MiB of tbl24 pages (plus
// up to 16 MiB of group pages). On 4 KiB pages every random lookup is a
// TLB miss as well as a cache miss, and the page walk itself misses the
// cache. On 2 MiB pages the whole table needs about 24 TLB entries, which
// the second-level TLB holds.
//
// The Go heap is not advised for transparent huge pages, and with THP in
// "madvise" mode (the common default) it stays on 4 KiB pages. So when a
// writer version owns many pages (a build: NewTable, Replace, Publish,
// Update, a routes_file load; or a version that has accumulated many
// copy-on-write pages), they come from a slab: one large []page4 on the Go
// heap whose 2 MiB-aligned interior is advised MADV_HUGEPAGE before its
// first use. Pages are handed out in order and never given back.
//
// Lifetime. The slab is an ordinary Go object and every *page4 taken from
// it is an interior pointer, so the garbage collector keeps the slab alive
// as long as any version (published or the writer's) still points into it,
// and frees it after: no reference counting, no unmapping, nothing a
// reader has to do. The price is retention: a slab is freed only when its
// last page is. The writer's pages live in at most one slab (plus ordinary
// heap pages for later copy-on-write copies), so each version keeps at
// most one slab alive: one table's worth (48 MiB at the most) beside the
// pages it uses. Small updates copy pages to the heap; the slab pages they
// replace stay allocated until the next repack (below), so the dead part of
// a slab is bounded by the repack threshold.
//
// Repack. Copy-on-write copies of small updates come from the slab's spare
// room (it is rounded up to whole huge pages) and then from the heap, on
// small pages. When the heap pages make a quarter of the table's own pages
// (and at least slabMinPages), publish moves every page the version owns
// into a new slab: O(table) copying, at most once per quarter-table of
// copied pages, so the table stays on huge pages under churn.
//
// Where huge pages are unavailable (not Linux, THP disabled, madvise
// refused), the slab is just a large heap object on small pages: lookups
// are identical, only slower.

const (
	hugePageSize = 2 << 20
	page4Bytes   = int(unsafe.Sizeof(page4{}))
	pagesPerHuge = hugePageSize / page4Bytes // 256
	// slabMinPages: below 4 MiB the table fits the TLB's reach on small
	// pages and stays on the ordinary heap.
	slabMinPages = 4 << 20 / page4Bytes
)

// pageSlab is a run of pages handed out in order.
type pageSlab struct {
	pages   []page4 // usable pages, 2 MiB aligned when possible
	next    int     // pages[:next] are handed out
	advised bool    // MADV_HUGEPAGE was accepted
	sealed  bool    // collapse was attempted after the first fill
}

// newPageSlab returns a slab with room for at least n pages, rounded up to
// whole huge pages. The memory is zero.
func newPageSlab(n int, advise bool) *pageSlab {
	n = (n + pagesPerHuge - 1) / pagesPerHuge * pagesPerHuge
	// The heap gives large objects 8 KiB-aligned memory: up to
	// pagesPerHuge-1 leading pages are skipped to reach a 2 MiB boundary.
	raw := make([]page4, n+pagesPerHuge-1)
	skip := 0
	if r := int(uintptr(unsafe.Pointer(&raw[0])) & (hugePageSize - 1)); r != 0 && r%page4Bytes == 0 {
		skip = (hugePageSize - r) / page4Bytes
	}
	s := &pageSlab{pages: raw[skip : skip+n : skip+n]}
	if advise {
		s.advised = adviseHuge(s.bytes(n))
	}
	return s
}

// bytes returns the memory of the first n pages.
func (s *pageSlab) bytes(n int) []byte {
	if n == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&s.pages[0])), n*page4Bytes)
}

// take returns the next unused (zero) page, nil when the slab is full.
func (s *pageSlab) take() *page4 {
	if s == nil || s.next == len(s.pages) {
		return nil
	}
	p := &s.pages[s.next]
	s.next++
	return p
}

// seal runs once, at the first publish of a version using the slab: it
// asks the kernel to collapse what is still on small pages (a huge page
// was not available when it was first touched).
func (s *pageSlab) seal() {
	if s == nil || s.sealed {
		return
	}
	s.sealed = true
	if s.advised {
		used := (s.next + pagesPerHuge - 1) / pagesPerHuge * pagesPerHuge
		collapseHuge(s.bytes(used))
	}
}

// contains reports whether p is one of s's pages.
func (s *pageSlab) contains(p *page4) bool {
	if s == nil || len(s.pages) == 0 {
		return false
	}
	a := uintptr(unsafe.Pointer(p))
	lo := uintptr(unsafe.Pointer(&s.pages[0]))
	return a >= lo && a < lo+uintptr(len(s.pages)*page4Bytes)
}

// hugeBytes reports how much of the slab's used part the kernel backs with
// huge pages (-1: unknown, not Linux or no /proc).
func (s *pageSlab) hugeBytes() int {
	if s == nil || s.next == 0 {
		return 0
	}
	return residentHuge(s.bytes(s.next))
}

// estimatePages4 returns how many pages a fresh build of routes writes:
// the tbl24 pages holding a prefix longer than /12 (a shorter one only
// swaps in shared uniform pages) and the group pages of the /24s holding
// a prefix longer than /24 (groups are numbered densely in a build).
func estimatePages4(routes []Route) int {
	var touched [tbl24Pages / 64]uint64
	var g24 []uint64 // one bit per /24, allocated on the first long prefix
	n, groups := 0, 0
	for i := range routes {
		p := routes[i].Prefix
		if !p.Addr().Is4() || p.Bits() <= 24-pageBits {
			continue
		}
		a := u32of(p.Addr())
		pg := a >> (32 - 24 + pageBits)
		if touched[pg/64]&(1<<(pg%64)) == 0 {
			touched[pg/64] |= 1 << (pg % 64)
			n++
		}
		if p.Bits() > 24 {
			if g24 == nil {
				g24 = make([]uint64, 1<<24/64)
			}
			s := a >> 8
			if g24[s/64]&(1<<(s%64)) == 0 {
				g24[s/64] |= 1 << (s % 64)
				groups++
			}
		}
	}
	return n + (min(groups, maxGroups)+1<<groupShift-1)>>groupShift
}

// ---- writer side ----

// newPage returns a zero page for the writer's current version: from the
// slab while it has room, else from the heap.
func (w *writerState) newPage() *page4 {
	if p := w.slab.take(); p != nil {
		return p
	}
	w.heapNew++
	return new(page4)
}

// ownPage reports whether page p is one a version owns (not the zero page
// nor a shared uniform page).
func (w *writerState) ownPage(p *page4) bool {
	return w.uni[p[0]] != p
}

// maybeRepack runs before each publish. It is O(1) unless enough pages
// came from the heap since the last look.
func (w *writerState) maybeRepack() {
	if w.layout.heapOnly || w.heapNew < w.repackAt {
		w.slab.seal()
		return
	}
	own, loose := 0, 0
	for _, p := range w.pages {
		if w.ownPage(p) {
			own++
			if !w.slab.contains(p) {
				loose++
			}
		}
	}
	if loose >= slabMinPages && loose*4 >= own {
		w.repack(own)
	} else {
		// Look again after at least a few more heap pages.
		w.heapNew = 0
		w.repackAt = max(slabMinPages/4, max(slabMinPages, own/4)-loose)
	}
	w.slab.seal()
}

// repack moves every page the writer's version owns into one new slab.
// Published versions keep the pages they had; the copies belong to the
// version under construction.
func (w *writerState) repack(own int) {
	s := newPageSlab(own, !w.layout.noAdvice)
	for i, p := range w.pages {
		if w.ownPage(p) {
			q := s.take()
			*q = *p
			w.pages[i] = q
			w.fresh[i] = true
		}
	}
	w.slab = s
	w.heapNew = 0
	w.repackAt = max(slabMinPages, own/4)
}
