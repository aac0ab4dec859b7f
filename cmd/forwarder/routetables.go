package main

import (
	"fmt"
	"net/netip"
	"strings"

	"github.com/junction-dataplane/junction/elements"
	"github.com/junction-dataplane/junction/elements/ip/route"
	"github.com/junction-dataplane/junction/internal/control"
)

// The route tables the control socket addresses (forwarder route
// add|del|replace|reload, show routes): the graph's [tables.NAME]
// sections, which any number of IPLookups read, and the tables of
// IPLookups with routes of their own, named after the element. A command
// names one with -table NAME, or one of its IPLookups with -element NAME;
// without either it takes the only table, else the one of the route's
// address family when there is one per family, else main.

// namedTable is what IPLookup says of the table it reads.
type namedTable interface {
	elements.RouteTable
	RouteTableName() string // "" for the element's own table
	RouteFamily() int       // 4 or 6 for a table of one family, 0 for both
	Unmirrored() map[string]int
}

// liveTable is one table of the running graph.
type liveTable struct {
	name   string // the [tables] name, or the IPLookup's for its own table
	shared bool   // a [tables] section
	el     string // the first IPLookup that reads it: its ports name the routes' outputs
	rt     namedTable
}

// liveTables lists the tables of the running graph, each once, in the
// order of their first reader.
func (cs *ctlServer) liveTables() []liveTable {
	var out []liveTable
	seen := map[string]bool{}
	for _, i := range elementsOf[namedTable](cs.r, cs.graph()) {
		rt := cs.r.Instances(i)[0].(namedTable)
		t := liveTable{name: rt.RouteTableName(), shared: true, el: cs.graph().Elements[i].Name, rt: rt}
		if t.name == "" {
			t.name, t.shared = t.el, false
		}
		key := fmt.Sprint(t.shared, t.name)
		if !seen[key] {
			seen[key] = true
			out = append(out, t)
		}
	}
	return out
}

// pickTable chooses the table a command addresses: by -table (tableName),
// by -element (elName), or, without either, the only one, the only one
// of a's family (a may be invalid: no family known), or main.
func (cs *ctlServer) pickTable(tableName, elName string, a netip.Addr) (liveTable, error) {
	all := cs.liveTables()
	if tableName != "" && elName != "" {
		return liveTable{}, control.Usagef("-table and -element both name a table: give one")
	}
	if elName != "" {
		i, rt, err := pickElement[namedTable](cs, "IPLookup", elName)
		if err != nil {
			return liveTable{}, err
		}
		want := liveTable{name: rt.RouteTableName(), shared: true}
		if want.name == "" {
			want = liveTable{name: cs.graph().Elements[i].Name}
		}
		for _, t := range all {
			if t.name == want.name && t.shared == want.shared {
				return t, nil
			}
		}
	}
	names := make([]string, len(all))
	for i, t := range all {
		names[i] = t.name
	}
	if tableName != "" {
		for _, t := range all {
			if t.name == tableName {
				return t, nil
			}
		}
		msg := fmt.Sprintf("-table %s: no route table of that name (this graph has: %s)", tableName, strings.Join(names, ", "))
		if s := nearest(tableName, names); s != "" {
			msg += fmt.Sprintf(" (did you mean %q?)", s)
		}
		return liveTable{}, control.Usagef("%s", msg)
	}
	switch len(all) {
	case 0:
		return liveTable{}, control.Usagef("this graph has no route table (no IPLookup)")
	case 1:
		return all[0], nil
	}
	if a.IsValid() {
		fam := 4
		if a.Is6() && !a.Is4In6() {
			fam = 6
		}
		var of []liveTable
		for _, t := range all {
			if f := t.rt.RouteFamily(); f == fam {
				of = append(of, t)
			}
		}
		if len(of) == 1 {
			return of[0], nil
		}
	}
	for _, t := range all {
		if t.shared && t.name == "main" {
			return t, nil
		}
	}
	return liveTable{}, control.Usagef("this graph has %d route tables (%s): choose one with -table NAME", len(all), strings.Join(names, ", "))
}

// routeAddr is the address that tells a route's family, from the first
// positional argument (invalid if there is none or it does not parse).
func routeAddr(pos []string) netip.Addr {
	if len(pos) > 1 && isRouteType(pos[0]) {
		pos = pos[1:] // "blackhole 10.1.2.3/32", as ip route writes it
	}
	if len(pos) == 0 {
		return netip.Addr{}
	}
	a, p, err := parseAddrOrPrefix(pos[0])
	if err != nil {
		return netip.Addr{}
	}
	if !a.IsValid() {
		a = p.Addr()
	}
	return a
}

// isRouteType reports whether w names a route type other than unicast.
func isRouteType(w string) bool {
	t, ok := route.ParseType(w)
	return ok && t != route.Unicast
}
