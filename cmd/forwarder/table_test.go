package main

import (
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/junction-dataplane/junction/pipeline"
)

// TestGraphOrder: the default graph's order lists the sources first and
// every element after all the elements that feed it.
func TestGraphOrder(t *testing.T) {
	g, err := pipeline.Parse(defaultGraphName, defaultGraph)
	if err != nil {
		t.Fatal(err)
	}
	order := pipeline.GraphOrder(g)
	if len(order) != len(g.Elements) {
		t.Fatalf("order has %d elements, graph %d", len(order), len(g.Elements))
	}
	pos := map[string]int{}
	for i, e := range order {
		pos[g.Elements[e].Name] = i
	}
	if first := g.Elements[order[0]]; !first.Type.Source {
		t.Errorf("first is %s, not a source", first.Name)
	}
	for _, l := range g.Links {
		if pos[l.From] >= pos[l.To] {
			t.Errorf("%s listed after %s, which it feeds", l.From, l.To)
		}
	}
}

var tableRow = regexp.MustCompile(`(?m)^(\S+)\s+(\S+)\s+(\d+)\s+(\d+)\s`)

// TestRunTable: run's exit table is in graph order with one row of
// totals per element, device names in auto names, and the busy legend;
// -per-worker adds the workers' rows.
func TestRunTable(t *testing.T) {
	code, out, errs := forwarder(t, "run", "-duration", "200ms", "-workers", "1", "-stats", "off", "-quiet")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	rows := tableRow.FindAllStringSubmatch(out, -1)
	if len(rows) < 3 || !strings.HasPrefix(out, "\nstopped after") || rows[0][1] != "FromDevice(in)@1" {
		t.Fatalf("table does not start with the source:\n%s", out)
	}
	seen := map[string]bool{}
	for _, r := range rows {
		if seen[r[1]] {
			t.Errorf("element %s listed twice without -per-worker", r[1])
		}
		seen[r[1]] = true
	}
	for _, w := range []string{"ToDevice(out)@3", "busy: share of the worker loop's wall time", "worker 0 (", "total: rx "} {
		if !strings.Contains(out, w) {
			t.Errorf("exit table lacks %q:\n%s", w, out)
		}
	}
	code, out, errs = forwarder(t, "run", "-duration", "200ms", "-workers", "2", "-nopin", "-stats", "off", "-quiet", "-per-worker")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if !regexp.MustCompile(`(?m)^\s+w1\s+\d+`).MatchString(out) {
		t.Errorf("-per-worker: no w1 rows:\n%s", out)
	}
}

// TestBenchConfigCounts: bench -config reports one packet count: the
// header's, the source's row and the total's are the same packets; no
// busy line for a worker bench drives itself.
func TestBenchConfigCounts(t *testing.T) {
	code, out, errs := forwarder(t, "bench", "-config", "../../configs/bench-l3.toml", "-duration", "200ms")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	head := regexp.MustCompile(`(?m)^(\d+) packets in`).FindStringSubmatch(out)
	src := regexp.MustCompile(`(?m)^FromDevice\(lan\)@1\s+FromDevice\s+(\d+)`).FindStringSubmatch(out)
	total := regexp.MustCompile(`(?m)^total: rx (\d+)`).FindStringSubmatch(out)
	if head == nil || src == nil || total == nil {
		t.Fatalf("output lacks a count:\n%s", out)
	}
	if head[1] != src[1] || head[1] != total[1] {
		t.Errorf("packet counts differ: header %s, source row %s, total %s\n%s", head[1], src[1], total[1], out)
	}
	if n, _ := strconv.Atoi(head[1]); n == 0 {
		t.Errorf("no packets:\n%s", out)
	}
	if strings.Contains(out, "busy 0.0%") || strings.Contains(out, "worker 0 (") {
		t.Errorf("bench prints a busy line for a worker it drives:\n%s", out)
	}
}
