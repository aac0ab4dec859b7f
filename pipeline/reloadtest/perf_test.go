package reloadtest

import (
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/junction-dataplane/junction/elements/ip"
	"github.com/junction-dataplane/junction/pipeline"
)

// perfGraph is a 30-element graph: a numbered gen source handed between
// two workers, header checks, 24 counters, an IPLookup of the routes in
// routesFile, the sequence checker and a sink. last names the last counter
// (two graphs that differ only there reload one element and two links).
func perfGraph(t testing.TB, dir, routesFile string, count int64, last string) string {
	t.Helper()
	var chain []string
	for i := 1; i <= 23; i++ {
		chain = append(chain, fmt.Sprintf("c%d :: Counter", i))
	}
	chain = append(chain, last+" :: Counter")
	src := fmt.Sprintf(`[forwarder]
workers = 2

[devices.g]
driver   = "gen"
queues   = 2
flows    = %d
count    = %d
sequence = true

[elements.rt]
type        = "IPLookup"
routes_file = %q

[elements.chk]
type = "TestSeqCheck"

[graph]
links = ["FromDevice(g, on) -> CheckIPHeader -> DecTTL -> %s -> rt -> chk -> Discard"]
`, seqFlows, count, routesFile, strings.Join(chain, " -> "))
	path := filepath.Join(dir, last+".toml")
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// millionRoutes writes a routes file of a million generated routes and a
// default route (millionRoutesN in all) into dir and returns its path.
func millionRoutes(t *testing.T, dir string) string {
	t.Helper()
	routes := filepath.Join(dir, "full.routes")
	rs := ip.GenerateRoutes(ip.GenOptions{Seed: 1, Routes: 1_000_000, NextHops: 300, Ports: 1})
	rs = append(rs, ip.Route{Prefix: netip.MustParsePrefix("0.0.0.0/0"), NextHop: netip.MustParseAddr("10.2.0.2")})
	f, err := os.Create(routes)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := ip.WriteRoutes(f, rs); err != nil {
		t.Fatal(err)
	}
	return routes
}

const millionRoutesN = 1_000_001

// TestReloadTiming measures reloads of a 30-element graph holding a
// million routes while two workers forward numbered packets at full load:
// the time to load and validate the file, to build the new pipelines and
// to switch every worker, and the packets lost (must be 0). Heavy (a
// million routes are generated and parsed): it runs only with
// JUNCTION_RELOAD_PERF=1; benchmarks/reload.md has the figures.
func TestReloadTiming(t *testing.T) {
	if os.Getenv("JUNCTION_RELOAD_PERF") == "" {
		t.Skip("set JUNCTION_RELOAD_PERF=1 to measure reload times (benchmarks/reload.md)")
	}
	dir := t.TempDir()
	routes := millionRoutes(t, dir)

	const perQueue = 8_000_000
	l := newSeqLog(2, perQueue)
	pathA := perfGraph(t, dir, routes, 2*perQueue, "c24")
	pathB := perfGraph(t, dir, routes, 2*perQueue, "c24b")
	t0 := time.Now()
	g, err := pipeline.Load(pathA)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("graph of %d elements, %d routes: loaded in %s", len(g.Elements), millionRoutesN, time.Since(t0).Round(time.Millisecond))
	r, err := pipeline.Start(g, pipeline.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var loads []time.Duration
	for i := 0; i < 5; i++ {
		t1 := time.Now()
		if _, err := pipeline.LoadFor(pathB, r.State()); err != nil {
			t.Fatal(err)
		}
		loads = append(loads, time.Since(t1))
	}
	var prep, swap, ready, total []time.Duration
	for i := 0; i < 10; i++ {
		time.Sleep(100 * time.Millisecond)
		select {
		case <-r.Done():
			t.Fatalf("the traffic ended after %d reloads: raise perQueue", i)
		default:
		}
		p := pathB
		if i%2 == 1 {
			p = pathA
		}
		rep, err := r.Reload(p, false)
		if err != nil {
			t.Fatal(err)
		}
		if len(rep.KeptWithState) == 0 || !slices.ContainsFunc(rep.KeptWithState, func(s string) bool { return strings.HasPrefix(s, "rt ") }) {
			t.Fatalf("rt not kept: %+v", rep)
		}
		prep = append(prep, rep.Prepare)
		swap = append(swap, rep.Swap)
		ready = append(ready, rep.Prepare+rep.Swap)
		total = append(total, rep.Total)
	}
	rx := r.Snapshot().Totals.RX
	// Drained, not stopped: every packet sent must reach the checker.
	if err := r.Wait(); err != nil {
		t.Fatal(err)
	}
	med := func(d []time.Duration) time.Duration {
		s := slices.Clone(d)
		slices.Sort(s)
		return s[len(s)/2]
	}
	mx := func(d []time.Duration) time.Duration { return slices.Max(d) }
	t.Logf("10 reloads under load (%d packets forwarded meanwhile): median / max", rx)
	t.Logf("  load and validate the file alone (routes unchanged), before the reloads: %s / %s", med(loads).Round(time.Microsecond), mx(loads).Round(time.Microsecond))
	t.Logf("  prepare (load, validate, build): %s / %s", med(prep).Round(time.Microsecond), mx(prep).Round(time.Microsecond))
	t.Logf("  swap (every worker switched):    %s / %s", med(swap).Round(time.Microsecond), mx(swap).Round(time.Microsecond))
	t.Logf("  reload call to new graph on all: %s / %s", med(ready).Round(time.Microsecond), mx(ready).Round(time.Microsecond))
	t.Logf("  with the old graph closed:       %s / %s", med(total).Round(time.Microsecond), mx(total).Round(time.Microsecond))
	lost := 0
	for q := range l.seen {
		for s := 0; s < perQueue; s++ {
			if l.seen[q][s].Load() != 1 {
				lost++
			}
		}
	}
	t.Logf("  packets lost or duplicated: %d", lost)
	if lost != 0 || l.misorder.Load() != 0 {
		t.Errorf("%d packets lost or duplicated, %d out of order", lost, l.misorder.Load())
	}
}
