package ip

import (
	"fmt"
	"net/netip"
	"reflect"
	"slices"

	"github.com/junction-dataplane/junction/elements"
	"github.com/junction-dataplane/junction/elements/ip/route"
	"github.com/junction-dataplane/junction/elements/ip/tables"
)

// Routes added live across a reload. A reload that leaves a table's
// configuration unchanged keeps the table, live routes and all
// (shared.go). One that changes it (a route added to the file, another
// routes_file content) builds the table anew from the file, and the
// routes an operator added with `forwarder route add` would vanish with
// nothing said: they are applied again on top of the file's routes,
// except where the new configuration cannot take them, which the reload
// report names route by route (elements.ReloadPlanner):
//
//   - the file now has a route for the same prefix: the file's wins (the
//     operator wrote it since);
//   - a path leaves by a port the new table's routes do not name;
//   - the new table holds the other address family only (family);
//   - the new table mirrors the kernel (source = "kernel");
//   - the file's routes and the live ones together exceed max_routes.

var _ elements.ReloadPlanner = (*IPLookup)(nil)

// liveCarry is what a rebuild from a new configuration does with the
// live routes of a running table: the routes it applies again, and a
// report line for each route.
type liveCarry struct {
	keep  []route.Route
	lines []string
}

// planLive decides, for the running shared table sh and the new
// (validated) configuration c, which of sh's live routes a table built
// from c keeps.
func planLive(sh *sharedTable, c *tables.Config) liveCarry {
	var lc liveCarry
	if sh == nil || c == nil {
		return lc
	}
	prefixes := sh.live.list()
	if len(prefixes) == 0 {
		return lc
	}
	file := make(map[netip.Prefix]route.Route, len(c.Parsed()))
	for _, r := range c.Parsed() {
		file[r.Prefix] = r
	}
	room := c.Limits().MaxRoutesOrDefault() - len(c.Parsed())
	for _, p := range prefixes {
		r, ok := sh.table.Exact(p)
		if !ok {
			continue // deleted since (by the kernel mirror's rebuild, say)
		}
		drop := func(why string, args ...any) {
			lc.lines = append(lc.lines, fmt.Sprintf("live route dropped: %v: "+why, append([]any{r}, args...)...))
		}
		fr, inFile := file[p]
		switch {
		case c.Kernel():
			drop("the new configuration mirrors the kernel's table (source = \"kernel\")")
		case inFile && fr.Equal(r):
			lc.lines = append(lc.lines, fmt.Sprintf("live route now in the file: %v", r))
		case inFile:
			drop("the file routes %v itself (%v)", p, fr)
		case !c.HasFamily(p.Addr()):
			drop("the new table holds IPv%d routes only", c.FamilyNumber())
		case maxOut(r) >= c.Ports():
			drop("out %d: the new configuration has output ports 0..%d", maxOut(r), c.Ports()-1)
		case room <= 0:
			drop("the file's %d routes fill max_routes %d", len(c.Parsed()), c.Limits().MaxRoutesOrDefault())
		default:
			room--
			lc.keep = append(lc.keep, r)
			lc.lines = append(lc.lines, fmt.Sprintf("live route kept: %v (applied over the file's routes)", r))
		}
	}
	return lc
}

func maxOut(r route.Route) int {
	m := 0
	for _, h := range r.Hops() {
		m = max(m, h.Out)
	}
	return m
}

// ReloadPlan implements elements.ReloadPlanner: the live routes a
// reload to next keeps and drops. Of the lookups reading one table, the
// first that read it speaks for it.
func (e *IPLookup) ReloadPlan(next any, rebuilt bool) []string {
	sh := e.ctl
	if sh == nil || sh.reporter != e.name {
		return nil
	}
	nc, _ := next.(*IPLookupConfig)
	if nc == nil || nc.tbl == nil {
		return nil
	}
	if reflect.DeepEqual(sh.cfg, nc.tbl) && (len(nc.tbl.Offload) == 0 || !rebuilt) {
		var lines []string
		for _, p := range sh.live.list() {
			if r, ok := sh.table.Exact(p); ok {
				lines = append(lines, fmt.Sprintf("live route kept: %v (the table is kept as it is)", r))
			}
		}
		return lines
	}
	return planLive(sh, nc.tbl).lines
}

// applyLive inserts the routes carried from the running table prev into
// t, built from c, and marks them live in sh.
func applyLive(prev *sharedTable, c *tables.Config, t *route.Table, sh *sharedTable) error {
	lc := planLive(prev, c)
	if len(lc.keep) == 0 {
		return nil
	}
	if err := t.Insert(lc.keep...); err != nil {
		return fmt.Errorf("applying the %d routes added live (forwarder route add) over the new routes: %w (delete them with forwarder route del, or add them to the file)", len(lc.keep), err)
	}
	for _, r := range lc.keep {
		sh.live.mark(r.Prefix, true)
	}
	return nil
}

// list returns the live prefixes, sorted.
func (l *liveRoutes) list() []netip.Prefix {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]netip.Prefix, 0, len(l.set))
	for p := range l.set {
		out = append(out, p)
	}
	slices.SortFunc(out, func(a, b netip.Prefix) int {
		if c := a.Addr().Compare(b.Addr()); c != 0 {
			return c
		}
		return a.Bits() - b.Bits()
	})
	return out
}
