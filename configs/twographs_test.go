package configs_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/junction-dataplane/junction/elements"
	"github.com/junction-dataplane/junction/elements/conntrack"
	ct "github.com/junction-dataplane/junction/elements/conntrack/cttest"
	"github.com/junction-dataplane/junction/elements/flowsteer"
	"github.com/junction-dataplane/junction/elements/ip/route"
	"github.com/junction-dataplane/junction/pipeline"
)

// natGraph is a two-worker NAT graph whose one DNAT rule sends
// 203.0.113.1:8080 to backend:80.
func natGraph(t *testing.T, name, backend string) *pipeline.Router {
	t.Helper()
	g, err := pipeline.Parse(name, []byte(`
[forwarder]
workers = 2

[devices.wan]
driver = "gen"
count = 1

[devices.lan]
driver = "gen"

[elements.dn]
type  = "DNAT"
rules = ["tcp 203.0.113.1:8080 -> `+backend+`:80"]

[graph]
links = ["FromDevice(wan) -> Conntrack -> dn -> FastTrackLearn(1) -> ToDevice(lan)"]
`))
	if err != nil {
		t.Fatal(err)
	}
	r, err := pipeline.Build(g, pipeline.Options{Workers: 2, NoPin: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

// TestTwoGraphsShareNothing builds two graphs in one process with
// different DNAT rules: each graph's steering follows its own rules only,
// and the graphs' workers have flow tables and fast-path generations of
// their own. (Before state went through the Context, DNAT steering was one
// process-wide table, flow tables were found by pool in a process-wide
// registry and the generation was one process-wide counter.)
func TestTwoGraphsShareNothing(t *testing.T) {
	a := natGraph(t, "a.toml", "192.168.1.10")
	b := natGraph(t, "b.toml", "192.168.1.20")
	ctx := func(r *pipeline.Router, worker int) *elements.Context {
		return elements.NewContext("test", worker, 2, 64, nil, &elements.Stats{}, nil, nil, nil).WithState(r.State())
	}
	req := ct.Frame(ct.F{Proto: "tcp", Src: "198.51.100.7", Dst: "203.0.113.1", Sport: 40001, Dport: 8080, Flags: ct.SYN})
	repA := ct.Frame(ct.F{Proto: "tcp", Src: "192.168.1.10", Dst: "198.51.100.7", Sport: 80, Dport: 40001, Flags: ct.SYN | ct.ACK})
	repB := ct.Frame(ct.F{Proto: "tcp", Src: "192.168.1.20", Dst: "198.51.100.7", Sport: 80, Dport: 40001, Flags: ct.SYN | ct.ACK})
	sa, sb := flowsteer.Of(ctx(a, 0)), flowsteer.Of(ctx(b, 0))
	if sa == sb {
		t.Fatal("two graphs share one steering table")
	}
	if sa.Hash(repA, 14) != sa.Hash(req, 14) || sb.Hash(repB, 14) != sb.Hash(req, 14) {
		t.Error("a graph's steering does not follow its own DNAT rule")
	}
	if sa.Hash(repB, 14) == sa.Hash(req, 14) || sb.Hash(repA, 14) == sb.Hash(req, 14) {
		t.Error("a graph's steering follows the other graph's DNAT rule")
	}

	ta0, ta1, tb0 := conntrack.Acquire(ctx(a, 0)), conntrack.Acquire(ctx(a, 1)), conntrack.Acquire(ctx(b, 0))
	defer ta0.Release()
	defer ta1.Release()
	defer tb0.Release()
	if ta0 == tb0 {
		t.Error("worker 0 of two graphs shares one flow table")
	}
	if ta0 == ta1 {
		t.Error("two workers of one graph share one flow table")
	}
	ga, gb := conntrack.GenerationOf(ctx(a, 0)), conntrack.GenerationOf(ctx(b, 1))
	if ga != conntrack.GenerationOf(ctx(a, 1)) || ga != ta0.Generation() {
		t.Error("the workers of one graph do not share its generation")
	}
	before := gb.Current()
	ga.Invalidate()
	if gb.Current() != before {
		t.Error("invalidating one graph's fast path moved the other's generation")
	}
}

// TestTwoGraphsRouteSets: two routers built from graphs with the same
// routes_file each remember the routes their IPLookup validated, in their
// own graph state: loading the file for one finds that router's routes,
// never the other's, and a load for no router finds none. (They were one
// process-wide cache before.)
func TestTwoGraphsRouteSets(t *testing.T) {
	dir := t.TempDir()
	routes := filepath.Join(dir, "r.routes")
	if err := os.WriteFile(routes, []byte("10.1.0.0/16 out 0\n0.0.0.0/0 out 0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	build := func(name string) *pipeline.Router {
		g, err := pipeline.Parse(filepath.Join(dir, name), []byte(`
[devices.lan]
driver = "gen"
count = 1

[elements.rt]
type = "IPLookup"
routes_file = "`+routes+`"

[graph]
links = ["FromDevice(lan) -> rt -> Discard"]
`))
		if err != nil {
			t.Fatal(err)
		}
		r, err := pipeline.Build(g, pipeline.Options{Workers: 1, NoPin: true})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { r.Close() })
		return r
	}
	a, b := build("a.toml"), build("b.toml")
	load := func(s *elements.GraphState) ([]route.Route, bool) {
		var c *route.SetCache
		if s != nil {
			c = route.CacheOf(s)
		}
		set, hit, err := route.LoadSet(c, nil, routes, 0)
		if err != nil {
			t.Fatal(err)
		}
		return set.Routes(), hit
	}
	ra, hitA := load(a.State())
	rb, hitB := load(b.State())
	if !hitA || !hitB {
		t.Fatalf("a router does not remember the routes its IPLookup was built with (hits %v, %v)", hitA, hitB)
	}
	if &ra[0] == &rb[0] {
		t.Error("two routers share one remembered route set")
	}
	if again, _ := load(a.State()); &again[0] != &ra[0] {
		t.Error("a router's second load did not find its remembered set")
	}
	if _, hit := load(nil); hit {
		t.Error("a load for no router found a remembered set")
	}
}
