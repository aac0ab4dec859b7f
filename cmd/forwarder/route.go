package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/junction-dataplane/junction/elements"
	"github.com/junction-dataplane/junction/elements/ip"
	"github.com/junction-dataplane/junction/internal/control"
	"github.com/junction-dataplane/junction/pipeline"
)

// routeResult is what `route …` answers.
type routeResult struct {
	Element string              `json:"element"`
	Action  string              `json:"action"` // added, replaced, deleted, reloaded
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
	el := fs.String("element", "", "the IPLookup (when the graph has several)")
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
		res, err = cs.routeVerb(verb, *el, pos)
		return err
	})
	if err != nil {
		return nil, err
	}
	return res, nil
}

// routeVerb carries out route VERB on the element named el (or the only
// IPLookup) with the positional arguments pos.
func (cs *ctlServer) routeVerb(verb, elName string, pos []string) (any, error) {
	el := &elName
	switch verb {
	case "add", "replace", "change":
		if len(pos) == 0 {
			return nil, control.Usagef("route %s: want PREFIX [via NEXTHOP]... out PORT...", verb)
		}
		if _, _, err := parseAddrOrPrefix(pos[0]); err != nil {
			return nil, control.Usagef("route %s: %v", verb, err)
		}
		i, rt, err := pickElement[elements.RouteTable](cs, "IPLookup", *el)
		if err != nil {
			return nil, fmt.Errorf("route %s: %w", verb, err)
		}
		name := cs.graph().Elements[i].Name
		words, err := resolveOutNames(cs.graph(), name, pos) // routedev.go: "out wan"
		if err != nil {
			return nil, control.Usagef("route %s: %v", verb, err)
		}
		r, err := rt.SetRoute(strings.Join(words, " "), verb != "add")
		if err != nil {
			return nil, control.Usagef("route %s: %v", verb, err)
		}
		action := "added"
		if verb != "add" {
			action = "replaced"
		}
		rs := []elements.LiveRoute{r}
		nameHops(cs.graph(), name, rs)
		return &routeResult{Element: name, Action: action, Route: &rs[0]}, nil
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
		i, rt, err := pickElement[elements.RouteTable](cs, "IPLookup", *el)
		if err != nil {
			return nil, fmt.Errorf("route del: %w", err)
		}
		if err := rt.DeleteRoute(p); err != nil {
			return nil, fmt.Errorf("route del: %w", err)
		}
		return &routeResult{Element: cs.graph().Elements[i].Name, Action: "deleted", Prefix: p.String()}, nil
	case "reload":
		if len(pos) > 0 {
			return nil, control.Usagef("route reload: unexpected arguments %q", strings.Join(pos, " "))
		}
		i, rt, err := pickElement[elements.RouteTable](cs, "IPLookup", *el)
		if err != nil {
			return nil, fmt.Errorf("route reload: %w", err)
		}
		n, err := rt.ReloadRoutes()
		if err != nil {
			return nil, fmt.Errorf("route reload: %w", err)
		}
		return &routeResult{Element: cs.graph().Elements[i].Name, Action: "reloaded", Routes: n}, nil
	}
	msg := fmt.Sprintf("route %q: want add, del, replace or reload", verb)
	if s := nearest(verb, []string{"add", "del", "replace", "reload"}); s != "" {
		msg += fmt.Sprintf(" (did you mean %q?)", s)
	}
	return nil, control.Usagef("%s", msg)
}

// routesFileElements lists the IPLookups of g that read a routes_file.
func routesFileElements(g *pipeline.Graph) []int {
	var out []int
	for i, e := range g.Elements {
		if c, ok := e.Config.(*ip.IPLookupConfig); ok && c.RoutesFile != "" && c.Source != "kernel" {
			out = append(out, i)
		}
	}
	return out
}

// ReloadRoutesFiles re-reads the routes_file of every IPLookup of r that
// has one and publishes each as one new table version (what SIGHUP does
// when the graph has routes files). It reports one line per element.
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
		n, err := rt.ReloadRoutes()
		if err != nil {
			errs = append(errs, fmt.Sprintf("%s: %v (the table is unchanged)", g.Elements[i].Name, err))
			continue
		}
		lines = append(lines, fmt.Sprintf("%s: %d routes reloaded", g.Elements[i].Name, n))
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
	switch {
	case r.Route != nil:
		fmt.Fprintf(stdout, "%s %s: %s\n", r.Action, r.Element, strings.ReplaceAll(routeLine(*r.Route), "\n", " "))
	case r.Action == "reloaded":
		fmt.Fprintf(stdout, "%s: %d routes reloaded\n", r.Element, r.Routes)
	default:
		fmt.Fprintf(stdout, "%s %s: %s\n", r.Action, r.Element, r.Prefix)
	}
	return nil
}
