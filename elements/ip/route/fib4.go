package route

import (
	"fmt"
	"net/netip"

	"github.com/junction-dataplane/junction/packet"
)

// The IPv4 writer: copy-on-write pages and groups of the DIR-24-8 table
// (fib.go): inserting and removing prefixes, finding the rule for an address.

func (w *writerState) pageW(i uint32) *page4 {
	if !w.fresh[i] {
		p := w.newPage()
		if old := w.pages[i]; old != zeroPage {
			*p = *old
		}
		w.pages[i] = p
		w.fresh[i] = true
	}
	return w.pages[i]
}

func (w *writerState) slot(s uint32) uint16 { return w.pages[s>>pageBits][s&(pageSize-1)] }

func (w *writerState) setSlot(s uint32, v uint16) {
	w.pageW(s >> pageBits)[s&(pageSize-1)] = v
}

func (w *writerState) setGroup(g uint16, j uint32, v uint16) {
	w.pageW(tbl24Pages + uint32(g)>>groupShift)[uint32(g&(1<<groupShift-1))<<8|j] = v
}

// depthPage returns the depths of the page holding slot s, materialising
// a uniform page's.
func (w *writerState) depthPage(s uint32) *[pageSize]uint8 {
	d := w.depth[s>>pageBits]
	if d == nil {
		d = new([pageSize]uint8)
		if u := w.udepth[s>>pageBits]; u != 0 {
			for i := range d {
				d[i] = u
			}
		}
		w.depth[s>>pageBits] = d
	}
	return d
}

// uniform returns the shared page whose every entry is v. Such pages are
// never written (pageW copies them first).
func (w *writerState) uniform(v uint16) *page4 {
	p := w.uni[v]
	if p == nil {
		p = new(page4)
		for i := range p {
			p[i] = v
		}
		w.uni[v] = p
	}
	return p
}

// setRange24 gives the /24 slots [s0, s0+n) owned by depth at most d (insert:
// cond = le) or exactly d (delete: cond = eq) the value v and depth nd. A
// page entirely in the range whose slots all have one depth is swapped
// for a shared uniform page in O(1): a /8 costs 16 pointer writes, a
// default route one per page, not 16M entry writes.
func (w *writerState) setRange24(s0, n uint32, d uint8, exact bool, v uint16, nd uint8) {
	for s := s0; s < s0+n; {
		pg := s >> pageBits
		lo := s & (pageSize - 1)
		cnt := min(pageSize-lo, s0+n-s)
		if cnt == pageSize && w.depth[pg] == nil {
			u := w.udepth[pg]
			if (exact && u == d) || (!exact && u <= d) {
				w.udepth[pg] = nd
				w.pages[pg] = w.uniform(v)
				w.fresh[pg] = false
			}
			s += cnt
			continue
		}
		dp := w.depthPage(s)
		var data *page4
		for i := lo; i < lo+cnt; i++ {
			cur := dp[i]
			if exact && cur != d || !exact && cur > d {
				continue
			}
			dp[i] = nd
			if data == nil {
				data = w.pageW(pg)
			}
			e := data[i]
			if e&grpBit == 0 {
				data[i] = v
				continue
			}
			g := e &^ grpBit
			gc := &w.groups[g]
			gc.base, gc.baseDepth = v, nd
			for j := range uint32(256) {
				if c := gc.depth[j]; exact && c == d || !exact && c <= d {
					gc.depth[j] = nd
					w.setGroup(g, j, v)
				}
			}
		}
		s += cnt
	}
}

func mask4(bits int) uint32 {
	if bits == 0 {
		return 0
	}
	return ^uint32(0) << (32 - bits)
}

// needsGroup reports whether inserting addr/bits would take a new group.
func (w *writerState) needsGroup(addr uint32, bits int) bool {
	return bits > 24 && w.slot(addr>>8)&grpBit == 0
}

func (w *writerState) allocGroup() (uint16, error) {
	if n := len(w.gfree); n > 0 {
		g := w.gfree[n-1]
		w.gfree = w.gfree[:n-1]
		return g, nil
	}
	if len(w.groups) >= maxGroups {
		return 0, fmt.Errorf("%w: more than %d /24s hold a longer prefix", errTableFull, maxGroups)
	}
	w.groups = append(w.groups, groupCtl{})
	return uint16(len(w.groups) - 1), nil
}

// insert4 sets addr/bits (addr masked) to value v, replacing any value the
// prefix had. The caller has taken a reference on v.
func (w *writerState) insert4(addr uint32, bits int, v uint16) (old uint16, err error) {
	d := uint8(bits + 1)
	if bits <= 24 {
		w.setRange24(addr>>8, 1<<(24-bits), d, false, v, d)
	} else {
		s := addr >> 8
		e := w.slot(s)
		var g uint16
		if e&grpBit == 0 {
			if g, err = w.allocGroup(); err != nil {
				return 0, err
			}
			gc := &w.groups[g]
			bd := w.depthPage(s)[s&(pageSize-1)]
			*gc = groupCtl{slot: s, base: e, baseDepth: bd}
			for j := range uint32(256) {
				gc.depth[j] = bd
				w.setGroup(g, j, e)
			}
			w.setSlot(s, grpBit|g)
		} else {
			g = e &^ grpBit
		}
		gc := &w.groups[g]
		if _, ok := w.rules4[bits][addr]; !ok {
			gc.long++
		}
		lo := addr & 0xff
		for j := lo; j < lo+1<<(32-bits); j++ {
			if gc.depth[j] <= d {
				gc.depth[j] = d
				w.setGroup(g, j, v)
			}
		}
	}
	old, had := w.rules4[bits][addr]
	w.rules4[bits][addr] = v
	if !had {
		w.n4++
	}
	return old, nil
}

// delete4 removes addr/bits and returns its value (0: there was none).
func (w *writerState) delete4(addr uint32, bits int) uint16 {
	v, ok := w.rules4[bits][addr]
	if !ok {
		return 0
	}
	delete(w.rules4[bits], addr)
	w.n4--
	d := uint8(bits + 1)
	var rv uint16
	var rd uint8
	for l := bits - 1; l >= 0; l-- {
		if x, ok := w.rules4[l][addr&mask4(l)]; ok {
			rv, rd = x, uint8(l+1)
			break
		}
	}
	if bits <= 24 {
		w.setRange24(addr>>8, 1<<(24-bits), d, true, rv, rd)
		return v
	}
	s := addr >> 8
	g := w.slot(s) &^ grpBit
	gc := &w.groups[g]
	lo := addr & 0xff
	for j := lo; j < lo+1<<(32-bits); j++ {
		if gc.depth[j] == d {
			gc.depth[j] = rd
			w.setGroup(g, j, rv)
		}
	}
	gc.long--
	if gc.long == 0 {
		// Only the /24-or-shorter owner is left: fold the group back.
		w.setSlot(s, gc.base)
		w.gfree = append(w.gfree, g)
	}
	return v
}

// lookupRule4 returns the longest prefix holding dst (introspection).
func (w *writerState) lookupRule4(dst uint32) (netip.Prefix, uint16, bool) {
	for l := 32; l >= 0; l-- {
		a := dst & mask4(l)
		if v, ok := w.rules4[l][a]; ok {
			return netip.PrefixFrom(packet.AddrFromU32(a), l), v, true
		}
	}
	return netip.Prefix{}, 0, false
}
