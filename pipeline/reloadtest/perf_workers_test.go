package reloadtest

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/junction-dataplane/junction/pipeline"
)

// perfGraphW is perfGraph with workers workers, the order check shared by
// all workers (TestSeqCheckAll: flows are followed across their changes
// of owner) and, beside it, a second gen device whose 100,000 UDP flows
// (200,000 packets/s for 15 s) a Conntrack tracks: the flows a change of workers
// moves to their new owners.
func perfGraphW(t testing.TB, dir, routesFile string, count int64, workers int) string {
	t.Helper()
	var chain []string
	for i := 1; i <= 24; i++ {
		chain = append(chain, fmt.Sprintf("c%d :: Counter", i))
	}
	src := fmt.Sprintf(`[forwarder]
workers = %d

[devices.g]
driver   = "gen"
queues   = 2
dst      = "198.19.0.1"
flows    = %d
count    = %d
sequence = true

[devices.f]
driver = "gen"
src    = "198.18.0.0/16"
dst    = "203.0.113.10"
flows  = 100000
rate   = 200000
count  = 3000000

[elements.rt]
type        = "IPLookup"
routes_file = %q

[elements.chk]
type = "TestSeqCheckAll"

[elements.ct]
type     = "Conntrack"
capacity = 262144

[graph]
links = [
  "FromDevice(g, on) -> CheckIPHeader -> DecTTL -> %s -> rt -> chk -> Discard",
  "FromDevice(f) -> ct -> Discard",
]
`, workers, seqFlows, count, routesFile, strings.Join(chain, " -> "))
	path := filepath.Join(dir, fmt.Sprintf("w%d.toml", workers))
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestReloadTimingWorkers measures reloads that change the number of
// workers (2 → 3 → 2 → 1 → 2 ...) of a graph holding a million routes and
// about 100,000 tracked flows while the workers forward numbered packets
// at full load: the time from the call to the new graph on every worker,
// how long every worker was parked (the flows moving), and the packets
// lost (must be 0). Runs only with JUNCTION_RELOAD_PERF=1;
// benchmarks/reload.md has the figures.
func TestReloadTimingWorkers(t *testing.T) {
	if os.Getenv("JUNCTION_RELOAD_PERF") == "" {
		t.Skip("set JUNCTION_RELOAD_PERF=1 to measure reload times (benchmarks/reload.md)")
	}
	dir := t.TempDir()
	routes := millionRoutes(t, dir)

	const perQueue = 8_000_000
	l := newSeqLog(2, perQueue)
	newFlowLast(2)
	paths := map[int]string{}
	for _, n := range []int{1, 2, 3} {
		paths[n] = perfGraphW(t, dir, routes, 2*perQueue, n)
	}
	g, err := pipeline.Load(paths[2])
	if err != nil {
		t.Fatal(err)
	}
	r, err := pipeline.Start(g, pipeline.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(20 * time.Second); counter(r.Snapshot(), "ct", "entries") < 90000; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("only %d flows tracked after 20 s", counter(r.Snapshot(), "ct", "entries"))
		}
	}
	cycle := []int{3, 2, 1, 2}
	var prep, swap, ready, total, parked, moving []time.Duration
	var moved []uint64
	var changes []string
	for i := 0; i < 12; i++ {
		time.Sleep(100 * time.Millisecond)
		select {
		case <-r.Done():
			t.Fatalf("the traffic ended after %d reloads: raise perQueue", i)
		default:
		}
		want := cycle[i%len(cycle)]
		rep, err := r.Reload(paths[want], false)
		if err != nil {
			t.Fatal(err)
		}
		wc := rep.WorkerChange
		if wc == nil || wc.To != want {
			t.Fatalf("reload %d to %d workers: %+v", i, want, wc)
		}
		if rep.Lost != 0 || len(wc.Dropped) != 0 {
			t.Errorf("reload %d (%d → %d): %d packets lost, flows dropped %v", i, wc.From, want, rep.Lost, wc.Dropped)
		}
		changes = append(changes, fmt.Sprintf("%d→%d", wc.From, want))
		prep = append(prep, rep.Prepare)
		swap = append(swap, rep.Swap)
		ready = append(ready, rep.Prepare+rep.Swap)
		total = append(total, rep.Total)
		parked = append(parked, wc.Parked)
		moving = append(moving, wc.Rebalance)
		moved = append(moved, wc.Moved)
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
	rd := func(d time.Duration) time.Duration { return d.Round(time.Microsecond) }
	slices.Sort(moved)
	t.Logf("12 reloads changing the workers (%s) under load (%d packets received meanwhile), %d-%d flows moved per reload: median / max",
		strings.Join(changes, " "), rx, moved[0], moved[len(moved)-1])
	t.Logf("  prepare (load, validate, open, build): %s / %s", rd(med(prep)), rd(mx(prep)))
	t.Logf("  swap (first worker told → last one on the new graph): %s / %s", rd(med(swap)), rd(mx(swap)))
	t.Logf("    of which every worker parked: %s / %s (moving the flows: %s / %s)", rd(med(parked)), rd(mx(parked)), rd(med(moving)), rd(mx(moving)))
	t.Logf("  reload call to new graph on all: %s / %s", rd(med(ready)), rd(mx(ready)))
	t.Logf("  with the old graph closed:       %s / %s", rd(med(total)), rd(mx(total)))
	t.Logf("  numbered packets: %d, out of order %d", 2*perQueue, l.misorder.Load())
	checkLog(t, l, perQueue)
}
