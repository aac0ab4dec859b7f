package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/netip"
	"strings"

	"github.com/junction-dataplane/junction/elements"
	"github.com/junction-dataplane/junction/elements/ip"
	"github.com/junction-dataplane/junction/elements/ip/tables"
	"github.com/junction-dataplane/junction/internal/control"
	"github.com/junction-dataplane/junction/pipeline"
)

// routeResult is what `route …` answers.
type routeResult struct {
	Element string              `json:"element"`         // the table's first IPLookup
	Table   string              `json:"table,omitempty"` // the [tables] name ("": the element's own)
	Action  string              `json:"action"`          // added, replaced, deleted, reloaded
	Route   *elements.LiveRoute `json:"route,omitempty"`
	Prefix  string              `json:"prefix,omitempty"`
	Routes  int                 `json:"routes,omitempty"` // after a reload
}

func (cs *ctlServer) route(ctx context.Context, args []string) (any, error) {
	if len(args) == 0 {
		return nil, control.Usagef("route: want add, del, replace or reload")
	}
	verb := args[0]
	fs := argFlags("route " + verb)
	el := fs.String("element", "", "an IPLookup: the table it reads")
	tbl := fs.String("table", "", "the route table (default: the only one, the one of the route's family, or main)")
	pos, err := parseArgs(fs, args[1:])
	if err != nil {
		return nil, err
	}
	// A change waits for a reload in progress, and a reload for it: a
	// reload builds its tables from the running ones with their live
	// routes (elements/ip/livecarry.go), so a route added in the middle
	// would be in neither its report nor its table. Inside, the graph is
	// the one running now, which no reload replaces meanwhile.
	var res any
	err = cs.r.ExclusiveOfReload(func() error {
		cs.g = cs.r.Graph()
		var err error
		res, err = cs.routeVerb(verb, *tbl, *el, pos)
		return err
	})
	if err != nil {
		return nil, err
	}
	return res, nil
}

// routeVerb carries out route VERB on the table named tableName, or read
// by the element named elName, or the default one (routetables.go), with
// the positional arguments pos.
func (cs *ctlServer) routeVerb(verb, tableName, elName string, pos []string) (any, error) {
	result := func(t liveTable, action string) *routeResult {
		r := &routeResult{Element: t.el, Action: action}
		if t.shared {
			r.Table = t.name
		}
		return r
	}
	switch verb {
	case "add", "replace", "change":
		if len(pos) == 0 {
			return nil, control.Usagef("route %s: want PREFIX [via NEXTHOP]... out PORT..., or PREFIX blackhole|unreachable|prohibit", verb)
		}
		first := pos[0]
		if len(pos) > 1 && isRouteType(first) {
			first = pos[1]
		}
		if _, _, err := parseAddrOrPrefix(first); err != nil {
			return nil, control.Usagef("route %s: %v", verb, err)
		}
		t, err := cs.pickTable(tableName, elName, routeAddr(pos))
		if err != nil {
			return nil, fmt.Errorf("route %s: %w", verb, err)
		}
		words, err := resolveOutNames(cs.graph(), t.el, pos) // routedev.go: "out wan"
		if err != nil {
			return nil, control.Usagef("route %s: %v", verb, err)
		}
		r, err := t.rt.SetRoute(strings.Join(words, " "), verb != "add")
		if err != nil {
			return nil, control.Usagef("route %s: %v", verb, err)
		}
		action := "added"
		if verb != "add" {
			action = "replaced"
		}
		rs := []elements.LiveRoute{r}
		nameHops(cs.graph(), t.el, rs)
		res := result(t, action)
		res.Route = &rs[0]
		return res, nil
	case "del", "delete":
		if len(pos) != 1 {
			return nil, control.Usagef("route del: want one PREFIX, got %q", strings.Join(pos, " "))
		}
		a, p, err := parseAddrOrPrefix(pos[0])
		if err != nil {
			return nil, control.Usagef("route del: %v", err)
		}
		if a.IsValid() {
			p, _ = a.Prefix(a.BitLen())
		}
		t, err := cs.pickTable(tableName, elName, p.Addr())
		if err != nil {
			return nil, fmt.Errorf("route del: %w", err)
		}
		if err := t.rt.DeleteRoute(p); err != nil {
			return nil, fmt.Errorf("route del: %w", err)
		}
		res := result(t, "deleted")
		res.Prefix = p.String()
		return res, nil
	case "reload":
		if len(pos) > 0 {
			return nil, control.Usagef("route reload: unexpected arguments %q", strings.Join(pos, " "))
		}
		t, err := cs.pickTable(tableName, elName, netip.Addr{})
		if err != nil {
			return nil, fmt.Errorf("route reload: %w", err)
		}
		n, err := t.rt.ReloadRoutes()
		if err != nil {
			return nil, fmt.Errorf("route reload: %w", err)
		}
		res := result(t, "reloaded")
		res.Routes = n
		return res, nil
	}
	msg := fmt.Sprintf("route %q: want add, del, replace or reload", verb)
	if s := nearest(verb, []string{"add", "del", "replace", "reload"}); s != "" {
		msg += fmt.Sprintf(" (did you mean %q?)", s)
	}
	return nil, control.Usagef("%s", msg)
}

// routesFileElements lists, of the IPLookups of g that read a table with
// a routes_file, the first of each table.
func routesFileElements(g *pipeline.Graph) []int {
	var out []int
	seen := map[*tables.Config]bool{}
	for i, e := range g.Elements {
		c, ok := e.Config.(*ip.IPLookupConfig)
		if !ok {
			continue
		}
		if t := c.Table(); t != nil && t.RoutesFile != "" && !t.Kernel() && !seen[t] {
			seen[t] = true
			out = append(out, i)
		}
	}
	return out
}

// ReloadRoutesFiles re-reads the routes_file of every table of r that
// has one and publishes each as one new table version (what SIGHUP does
// when the graph has routes files). It reports one line per table (by
// its first IPLookup's name for a table of the element's own).
func ReloadRoutesFiles(r *pipeline.Router) (string, error) {
	g := r.Graph()
	var lines []string
	var errs []string
	for _, i := range routesFileElements(g) {
		inst := r.Instances(i)
		if len(inst) == 0 {
			continue
		}
		rt, ok := inst[0].(elements.RouteTable)
		if !ok {
			continue
		}
		name := g.Elements[i].Name
		if c := g.Elements[i].Config.(*ip.IPLookupConfig).Table(); c.Name != "" {
			name = "table " + c.Name
		}
		n, err := rt.ReloadRoutes()
		if err != nil {
			errs = append(errs, fmt.Sprintf("%s: %v (the table is unchanged)", name, err))
			continue
		}
		lines = append(lines, fmt.Sprintf("%s: %d routes reloaded", name, n))
	}
	if len(errs) > 0 {
		return strings.Join(lines, "\n"), fmt.Errorf("%s", strings.Join(errs, "\n"))
	}
	return strings.Join(lines, "\n"), nil
}

// routeCmd is `forwarder route add|del|replace|reload`.
func routeCmd(args []string, stdout, stderr io.Writer) error {
	cl, rest, err := clientArgs("route", args, stderr)
	if err != nil {
		return err
	}
	if len(rest) == 0 {
		return cl.usage("want add, del, replace or reload")
	}
	// A mistyped verb is wrong usage whether or not a forwarder runs.
	switch rest[0] {
	case "add", "replace", "change", "del", "delete", "reload":
	default:
		msg := fmt.Sprintf("route %q: want add, del, replace or reload", rest[0])
		if s := nearest(rest[0], []string{"add", "del", "replace", "reload"}); s != "" {
			msg += fmt.Sprintf(" (did you mean %q?)", s)
		}
		return cl.usage(msg)
	}
	data, err := cl.call("route", rest)
	if err != nil {
		return err
	}
	if cl.format == "json" {
		return writeJSON(stdout, data)
	}
	var r routeResult
	if err := json.Unmarshal(data, &r); err != nil {
		return err
	}
	name := r.Element
	if r.Table != "" {
		name = "table " + r.Table
	}
	switch {
	case r.Route != nil:
		fmt.Fprintf(stdout, "%s %s: %s\n", r.Action, name, strings.ReplaceAll(routeLine(*r.Route), "\n", " "))
	case r.Action == "reloaded":
		fmt.Fprintf(stdout, "%s: %d routes reloaded\n", name, r.Routes)
	default:
		fmt.Fprintf(stdout, "%s %s: %s\n", r.Action, name, r.Prefix)
	}
	return nil
}
