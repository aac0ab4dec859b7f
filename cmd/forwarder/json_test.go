package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/junction-dataplane/junction/pipeline"
)

// TestControlJSON: every control command's -format json output decodes
// into the type the table format reads it as, with the fields it should
// have (show flows, neighbors, interfaces, runtime, errors and trace are
// decoded in their own tests).
func TestControlJSON(t *testing.T) {
	path := ctlRouter(t)

	var all routesResult
	ctlJSON(t, path, &all, "show", "routes")
	if all.Element != "rt" || all.Source == "" || len(all.Routes) != 3 || all.Query != "" || !all.Found {
		t.Errorf("show routes: %+v", all)
	}
	var exact routesResult
	ctlJSON(t, path, &exact, "show", "routes", "10.0.0.0/16")
	if !exact.Found || len(exact.Routes) != 1 || exact.Routes[0].Hops[0].Via.String() != "10.2.0.2" || exact.Routes[0].Hops[0].Out != 1 {
		t.Errorf("show routes 10.0.0.0/16: %+v", exact)
	}
	var none routesResult
	ctlJSON(t, path, &none, "show", "routes", "10.77.0.0/16")
	if none.Found || len(none.Routes) != 0 || none.Query != "10.77.0.0/16" {
		t.Errorf("show routes of a prefix not in the table: %+v", none)
	}

	for _, c := range []struct {
		args   []string
		action string
		check  func(r routeResult) bool
	}{
		{[]string{"route", "add", "10.9.0.0/16", "via", "10.2.0.7", "out", "1"}, "added",
			func(r routeResult) bool {
				return r.Route != nil && r.Route.Prefix.String() == "10.9.0.0/16" && r.Route.Source == "live"
			}},
		{[]string{"route", "replace", "10.9.0.0/16", "out", "0"}, "replaced",
			func(r routeResult) bool {
				return r.Route != nil && r.Route.Hops[0].Out == 0 && !r.Route.Hops[0].Via.IsValid()
			}},
		{[]string{"route", "del", "10.9.0.0/16"}, "deleted",
			func(r routeResult) bool { return r.Prefix == "10.9.0.0/16" || r.Route != nil }},
		{[]string{"route", "reload"}, "reloaded", func(r routeResult) bool { return r.Routes == 3 }},
	} {
		var r routeResult
		ctlJSON(t, path, &r, c.args...)
		if r.Element != "rt" || r.Action != c.action || !c.check(r) {
			t.Errorf("%v: %+v", c.args, r)
		}
	}

	var cleared map[string]string
	ctlJSON(t, path, &cleared, "clear", "counters")
	if cleared["cleared"] != "counters" {
		t.Errorf("clear counters: %v", cleared)
	}

	file := filepath.Join(t.TempDir(), "c.pcap")
	var cap traceResult
	ctlJSON(t, path, &cap, "capture", "-element", "rt", "-port", "1", "-n", "2", "-w", file)
	if len(cap.Packets) != 2 || cap.Requested != 2 || len(cap.Packets[0].Frame) == 0 {
		t.Errorf("capture: %d packets of %d requested", len(cap.Packets), cap.Requested)
	}

	// reload -dry-run of a copy of the running graph: nothing changes.
	g := writeFile(t, "same.toml", string(defaultGraph))
	code, out, errs := ctl(t, path, "reload", "-config", g, "-dry-run", "-format", "json")
	var rep pipeline.ReloadReport
	if code != 0 || json.Unmarshal([]byte(out), &rep) != nil {
		t.Fatalf("reload -dry-run -format json: exit %d %q %q", code, out, errs)
	}
	if !rep.DryRun || rep.File != g {
		t.Errorf("reload report: %+v", rep)
	}
}

// TestControlBadInput: malformed commands, filters, prefixes and unknown
// elements get a one-line error (and at most the usage line) naming what
// is wrong, and exit status 2.
func TestControlBadInput(t *testing.T) {
	path := ctlRouterGraph(t, dualStackGraph)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"show", "flows", "tcp and"}, `filter "tcp and": col 8: missing operand`},
		{[]string{"show", "flows", "dst port 99999"}, `filter "dst port 99999": col 10`},
		{[]string{"show", "flows", "src net 2001:db8::/129"}, `filter "src net 2001:db8::/129"`},
		{[]string{"show", "flows", "-n", "-1"}, "-n -1: want ≥ 0"},
		{[]string{"show", "flows", "-n", "many"}, `invalid value "many" for flag -n`},
		{[]string{"show", "routes", "10.0.0.0/33"}, `"10.0.0.0/33": not a prefix`},
		{[]string{"show", "routes", "10.1.0.0/8"}, "host bits set"},
		{[]string{"show", "routes", "2001:db8::1/200"}, "not a prefix"},
		{[]string{"show", "routes", "10.1.0.1", "10.1.0.2"}, "one address or prefix at a time"},
		{[]string{"show", "routes", "-element", "nosuch"}, "-element nosuch: no IPLookup of that name (this graph has: rt)"},
		{[]string{"show", "neighbors", "-element", "ct"}, "-element ct: no neighbour table (ARPQuerier, NDPQuerier) of that name (this graph has: nq, aq)"},
		{[]string{"show", "neighbors", "extra"}, `show neighbors: unexpected arguments "extra"`},
		{[]string{"show", "interfaces", "eth9"}, `no device "eth9" (this graph has: wan6, wan4, lan)`},
		{[]string{"show", "runtime", "extra"}, `show runtime: unexpected arguments "extra"`},
		{[]string{"show", "errors", "-bogus"}, "flag provided but not defined: -bogus"},
		{[]string{"show", "neighbours", "-element"}, "flag needs an argument"},
		{[]string{"show", "flwos"}, `did you mean "flows"`},
		{[]string{"clear", "errors"}, `want "clear counters"`},
		{[]string{"route", "add", "10.5.0.0/16", "out", "1", "-element", "nq"}, "-element nq: no IPLookup of that name (this graph has: rt)"},
		{[]string{"route", "del", "banana"}, `"banana"`},
		{[]string{"route", "add", "2001:db8::/129", "out", "0"}, "not a prefix"},
		{[]string{"trace", "ip6 and src host 2001:db8::zz"}, `filter "ip6 and src host 2001:db8::zz"`},
		{[]string{"trace", "-n", "100000"}, "want 1..10000"},
		{[]string{"capture", "-element", "cq", "-w", filepath.Join(t.TempDir(), "x.pcap")}, "no such element"},
		{[]string{"capture", "-element", "ct", "-port", "-2", "-w", filepath.Join(t.TempDir(), "x.pcap")}, "-port -2: ct has output ports 0..1"},
		{[]string{"reload", "extra"}, "unexpected arguments"},
		{[]string{"show", "runtime", "-format", "yaml"}, `-format "yaml": want table or json`},
	} {
		code, out, errs := ctl(t, path, c.args...)
		first, _, _ := strings.Cut(strings.TrimSpace(errs), "\n")
		if code != 2 || out != "" || !strings.Contains(first, c.want) {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want 2 and %q on the first line", c.args, code, out, errs, c.want)
		}
		if strings.Count(strings.TrimSpace(errs), "\n") > 1 {
			t.Errorf("%v: more than a message and a usage line: %q", c.args, errs)
		}
	}
}
