package main

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/junction-dataplane/junction/pipeline/statstable"
)

// TestShowRuntimeTable: show runtime prints the exit table (statstable.Render:
// graph order, totals, the busy/CPU legend, device auto names) with the
// graph's generation; -workers keeps its per-worker rows in JSON; after
// clear counters the snapshot's interval is the time since the clear, so
// busy and CPU shares are of that interval.
func TestShowRuntimeTable(t *testing.T) {
	path := ctlRouter(t)
	time.Sleep(200 * time.Millisecond)
	code, out, errs := ctl(t, path, "show", "runtime")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	lines := strings.Split(out, "\n")
	if len(lines) < 4 || !strings.HasPrefix(lines[0], "uptime ") || !strings.HasPrefix(lines[1], "graph ") ||
		!strings.Contains(lines[1], "generation 1") || !strings.HasPrefix(lines[2], "element") {
		t.Fatalf("head of the table:\n%s", out)
	}
	if !strings.HasPrefix(lines[3], "FromDevice(in)") {
		t.Errorf("first row %q, want the source FromDevice(in) (graph order)", lines[3])
	}
	if !strings.Contains(out, statstable.BusyLegend) || !strings.Contains(out, "worker 0 (unpinned): busy ") || !strings.Contains(out, "total: rx ") {
		t.Errorf("no busy legend, worker line or totals:\n%s", out)
	}
	// One order for both: the table's rows and the JSON rows follow the
	// graph order pipeline.GraphOrder gives.
	var r runtimeResult
	ctlJSON(t, path, &r, "show", "runtime", "-workers")
	if r.Snapshot == nil || !r.PerWorker || r.Graph.Generation != 1 {
		t.Fatalf("json: snapshot %v, per_worker %v, graph %+v", r.Snapshot != nil, r.PerWorker, r.Graph)
	}
	var totals []string
	for _, e := range r.Elements {
		if e.Worker < 0 {
			totals = append(totals, e.Element)
		} else if e.Worker != 0 {
			t.Errorf("row of worker %d on a one-worker router", e.Worker)
		}
	}
	if len(totals) == 0 || len(r.Elements) != 2*len(totals) {
		t.Errorf("%d rows for %d elements: want a total and a worker row each", len(r.Elements), len(totals))
	}
	var rendered []string
	for _, l := range lines[3:min(len(lines), 3+len(totals))] {
		rendered = append(rendered, strings.Fields(l)[0])
	}
	if strings.Join(rendered, " ") != strings.Join(totals, " ") {
		t.Errorf("table order %v, JSON order %v", rendered, totals)
	}

	if code, _, _ := ctl(t, path, "clear", "counters"); code != 0 {
		t.Fatal("clear counters failed")
	}
	time.Sleep(100 * time.Millisecond)
	ctlJSON(t, path, &r, "show", "runtime")
	if r.Snapshot.Uptime != r.Since || r.Since >= r.Uptime || r.Since <= 0 {
		t.Errorf("after clear: snapshot over %v, since %v, uptime %v", r.Snapshot.Uptime, r.Since, r.Uptime)
	}
	for _, w := range r.Snapshot.Workers {
		if w.CPUNanos > uint64(r.Since)+uint64(50*time.Millisecond) {
			t.Errorf("worker %d: cpu %v over an interval of %v", w.Worker, time.Duration(w.CPUNanos), r.Since)
		}
	}
}

// TestShowErrorsTable: show errors lists drop counters in graph order,
// totals first with -workers rows under them, in pipeline's table layout.
func TestShowErrorsTable(t *testing.T) {
	path := ctlRouterGraph(t, dualStackGraph) // Conntrack counts "new"
	time.Sleep(200 * time.Millisecond)
	var r errorsResult
	ctlJSON(t, path, &r, "show", "errors", "-all", "-workers")
	if len(r.Rows) == 0 {
		t.Fatal("no counters with -all")
	}
	seen := map[string]bool{}
	for i, e := range r.Rows {
		if e.Worker >= 0 && (i == 0 || r.Rows[i-1].Counter != e.Counter) {
			t.Errorf("row %d: worker row %+v not under its total", i, e)
		}
		if e.Worker < 0 {
			key := e.Element + "/" + e.Counter
			if seen[key] {
				t.Errorf("total %s twice", key)
			}
			seen[key] = true
		}
	}
	code, out, errs := ctl(t, path, "show", "errors", "-all")
	if code != 0 || !strings.HasPrefix(out, "count  element") || !strings.Contains(out, "(not a drop)") || !strings.Contains(out, "total drops 0 (elements 0, devices 0), consumed ") {
		t.Errorf("table: exit %d %q %q", code, out, errs)
	}
	code, out, _ = ctl(t, path, "show", "errors", "-format", "json")
	var plain errorsResult
	if code != 0 || json.Unmarshal([]byte(out), &plain) != nil {
		t.Errorf("json: exit %d %q", code, out)
	}
	for _, e := range plain.Rows {
		if !e.Drop {
			t.Errorf("without -all: %+v is not a drop", e)
		}
	}
}
