package route

// What a table version costs in memory (MemStats).

// MemStats describes a table version's size.
type MemStats struct {
	Routes4, Routes6 int
	NextHopSets      int
	Groups           int // IPv4 /24s holding a longer prefix
	Nodes6           int
	Bytes4           int // IPv4 forwarding structure (what lookups read)
	Bytes6           int // IPv6 forwarding structure
	ControlBytes     int // writer bookkeeping (depths, groups), estimated
}

func (w *writerState) memStats() MemStats {
	m := MemStats{Routes4: w.n4, Routes6: w.n6, NextHopSets: len(w.nhIndex),
		Groups: len(w.groups) - len(w.gfree), Nodes6: w.nodes6}
	distinct := map[*page4]struct{}{}
	for _, p := range w.pages {
		if p != zeroPage {
			distinct[p] = struct{}{}
		}
	}
	pages := len(distinct)
	m.Bytes4 = pages*pageSize*2 + numPages*8 + len(w.nh)*(24+32)
	m.Bytes6 = w.nodes6 * (256*2 + 32 + 8 + 24)
	for _, d := range w.depth {
		if d != nil {
			m.ControlBytes += pageSize
		}
	}
	m.ControlBytes += len(w.groups)*int(16+256) + w.nodes6*256
	// Go maps: about 2x the key and value sizes, plus per-entry overhead.
	m.ControlBytes += w.n4*16 + w.n6*64
	return m
}
