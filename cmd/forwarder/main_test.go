package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/junction-dataplane/junction/pipeline"
	"github.com/junction-dataplane/junction/pipeline/statshttp"
)

// forwarder runs the command line in-process.
func forwarder(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = Main(args, &out, &errb)
	return code, out.String(), errb.String()
}

func writeFile(t *testing.T, name, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// The contract element names (docs/elements.md).
var contractElements = []string{"FromDevice", "ToDevice", "Classifier", "CheckIPHeader", "DecTTL", "ICMPError",
	"IPLookup", "ARPResponder", "EtherRewrite", "Counter", "Discard", "Tee", "Print"}

func TestElementsList(t *testing.T) {
	code, out, errs := forwarder(t, "elements")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	for _, name := range contractElements {
		found := false
		for _, l := range lines {
			f := strings.Fields(l)
			if len(f) > 1 && f[0] == name {
				found = true
			}
		}
		if !found {
			t.Errorf("elements: no line for %s with a summary", name)
		}
	}
}

func TestElementsDoc(t *testing.T) {
	for _, name := range contractElements {
		code, out, errs := forwarder(t, "elements", name)
		if code != 0 {
			t.Errorf("elements %s: exit %d: %s", name, code, errs)
			continue
		}
		for _, section := range []string{"NAME\n    " + name + " - ", "SYNOPSIS\n", "PORTS\n", "KEYS\n", "EXAMPLE\n"} {
			if !strings.Contains(out, section) {
				t.Errorf("elements %s lacks %q:\n%s", name, section, out)
			}
		}
	}
	// Keys are listed with their type and default.
	_, out, _ := forwarder(t, "elements", "IPLookup")
	if !regexp.MustCompile(`(?m)^\s+miss\s+int\s+-1\s+no$`).MatchString(out) {
		t.Errorf("IPLookup keys table lacks the miss row:\n%s", out)
	}
}

func TestElementsUnknown(t *testing.T) {
	code, _, errs := forwarder(t, "elements", "DecTL")
	if code != 1 || !strings.Contains(errs, `unknown element type "DecTL", did you mean "DecTTL"?`) {
		t.Errorf("exit %d, stderr %q", code, errs)
	}
	if code, _, errs := forwarder(t, "frobnicate"); code != 2 || !strings.Contains(errs, "unknown command") {
		t.Errorf("unknown command: exit %d, stderr %q", code, errs)
	}
	if code, _, errs := forwarder(t, "chek"); code != 2 || !strings.Contains(errs, `did you mean "check"?`) {
		t.Errorf("typo command: exit %d, stderr %q", code, errs)
	}
}

func TestHelp(t *testing.T) {
	code, out, _ := forwarder(t, "help")
	if code != 0 || !strings.Contains(out, "forwarder run") || !strings.Contains(out, "forwarder stats") {
		t.Errorf("help: exit %d\n%s", code, out)
	}
	if code, _, _ := forwarder(t); code != 2 {
		t.Errorf("no arguments: exit %d, want 2", code)
	}
	if code, _, _ := forwarder(t, "run", "-nosuchflag"); code != 2 {
		t.Errorf("bad flag: exit %d, want 2", code)
	}
}

func TestDrivers(t *testing.T) {
	code, out, _ := forwarder(t, "drivers")
	if code != 0 || !strings.Contains(out, "gen") || !strings.Contains(out, "pcap") {
		t.Errorf("drivers: exit %d\n%s", code, out)
	}
	code, out, _ = forwarder(t, "drivers", "gen")
	if code != 0 || !strings.Contains(out, "flows") {
		t.Errorf("drivers gen: exit %d\n%s", code, out)
	}
	// The page has an element's sections, in order.
	rest := out
	for _, section := range []string{"NAME\n", "SYNOPSIS\n", "DESCRIPTION\n", "QUEUES\n", "KEYS\n", "STATS\n", "EXAMPLE\n"} {
		i := strings.Index(rest, section)
		if i < 0 {
			t.Errorf("drivers gen: section %q missing or out of order:\n%s", section, out)
			break
		}
		rest = rest[i:]
	}
	if code, _, errs := forwarder(t, "drivers", "gem"); code != 1 || !strings.Contains(errs, `did you mean "gen"?`) {
		t.Errorf("drivers gem: exit %d, %s", code, errs)
	}
}

var okLine = regexp.MustCompile(`^ok: (\d+) elements, (\d+) links, (\d+) devices\n$`)

func TestCheck(t *testing.T) {
	for _, args := range [][]string{
		{"check"}, // the embedded default graph
		{"check", "-config", "../../configs/bench-nat.toml"},
		{"check", "../../configs/bench-l3.toml"},
	} {
		code, out, errs := forwarder(t, args...)
		if code != 0 || !okLine.MatchString(out) {
			t.Errorf("%v: exit %d, stdout %q, stderr %q", args, code, out, errs)
		}
	}
	_, out, _ := forwarder(t, "check")
	g, err := pipeline.Parse(defaultGraphName, defaultGraph)
	if err != nil {
		t.Fatal(err)
	}
	m := okLine.FindStringSubmatch(out)
	if m == nil || m[1] != strconv.Itoa(len(g.Elements)) || m[2] != strconv.Itoa(len(g.Links)) || m[3] != "2" {
		t.Errorf("check of the default graph: %q (graph has %d elements, %d links)", out, len(g.Elements), len(g.Links))
	}
}

func TestCheckBad(t *testing.T) {
	bad := `[devices.lan]
driver = "gen"

[elements.rt]
type   = "IPLokup"

[graph]
links = ["FromDevice(lan) -> Discard"]
`
	path := writeFile(t, "bad.toml", bad)
	code, out, errs := forwarder(t, "check", "-config", path)
	if code != 1 {
		t.Errorf("exit %d, want 1", code)
	}
	if out != "" {
		t.Errorf("stdout %q on error", out)
	}
	for _, want := range []string{"bad.toml:5", `"rt"`, `did you mean "IPLookup"?`} {
		if !strings.Contains(errs, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errs)
		}
	}
	if code, _, errs := forwarder(t, "check", "-config", filepath.Join(t.TempDir(), "missing.toml")); code != 1 || !strings.Contains(errs, "missing.toml") {
		t.Errorf("missing file: exit %d, %s", code, errs)
	}
}

func TestGraph(t *testing.T) {
	code, out, errs := forwarder(t, "graph")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if !strings.HasPrefix(strings.TrimSpace(out), "digraph") || !strings.Contains(out, "->") ||
		!strings.Contains(out, "cls") || !strings.Contains(out, "IPLookup") {
		t.Errorf("not the default graph's DOT:\n%s", out)
	}
	code, out, _ = forwarder(t, "graph", "-config", "../../configs/router.toml")
	if code != 0 || !strings.Contains(out, "digraph") {
		t.Errorf("graph router.toml: exit %d\n%s", code, out)
	}
}

// TestRunDefault runs the embedded default graph for a moment: it forwards,
// stops at the duration, and prints the table.
func TestRunDefault(t *testing.T) {
	// A loaded machine may not give the worker its CPU within a short run:
	// a run that forwarded nothing is tried again, longer.
	var out string
	for _, d := range []string{"300ms", "1s", "3s"} {
		code, o, errs := forwarder(t, "run", "-duration", d, "-workers", "1", "-stats", "off")
		if code != 0 {
			t.Fatalf("exit %d: %s\n%s", code, errs, o)
		}
		out = o
		if !strings.Contains(out, "total: rx 0 ") {
			break
		}
		t.Logf("a %s run forwarded nothing; trying a longer one", d)
	}
	for _, want := range []string{"junction: " + defaultGraphName, "1 worker,", "(duration reached)", "ns/pkt",
		"IPLookup", "CheckIPHeader", "worker 0", "busy", "device out (gen)", "total: rx"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	m := regexp.MustCompile(`total: rx (\d+)  tx (\d+)  drops (\d+)`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no total line:\n%s", out)
	}
	rx, _ := strconv.Atoi(m[1])
	tx, _ := strconv.Atoi(m[2])
	drops, _ := strconv.Atoi(m[3])
	if rx == 0 || rx != tx+drops {
		t.Errorf("rx %d tx %d drops %d", rx, tx, drops)
	}
}

// finiteGraph is the default router on a gen device with a count: the run
// ends by itself when the count is sent.
const finiteGraph = `
[forwarder]
workers = 2

[devices.in]
driver    = "gen"
count     = 10000
src       = "10.1.0.0/24"
dst       = "10.0.0.0/16"
flows     = 16
addresses = ["10.1.0.1/24"]

[devices.out]
driver = "gen"

[graph]
links = [
  "FromDevice(in) -> cls :: Classifier(ip, -)",
  "cls[0] -> CheckIPHeader -> DecTTL -> rt :: IPLookup(10.0.0.0/16 via 10.2.0.2 out 0) -> ToDevice(out)",
  "cls[1] -> Discard",
]
`

func TestRunFinite(t *testing.T) {
	path := writeFile(t, "finite.toml", finiteGraph)
	code, out, errs := forwarder(t, "run", "-config", path, "-stats", "off", "-quiet")
	if code != 0 {
		t.Fatalf("exit %d: %s\n%s", code, errs, out)
	}
	if strings.Contains(out, "junction:") || strings.Contains(out, "Mpps") {
		t.Errorf("-quiet printed the banner or rate lines:\n%s", out)
	}
	for _, want := range []string{"(every source drained)", "total: rx 10000  tx 10000  drops 0", "tx_packets 10000"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

func TestRunErrors(t *testing.T) {
	// A device that cannot open: the error names it and its line.
	bad := strings.Replace(finiteGraph, `driver    = "gen"`, `driver    = "pcap"
read      = "no-such-file.pcap"`, 1)
	bad = strings.Replace(bad, "count     = 10000\n", "", 1)
	bad = regexp.MustCompile(`(?m)^(src|dst|flows|addresses) .*\n`).ReplaceAllString(bad, "")
	path := writeFile(t, "badopen.toml", bad)
	if _, err := pipeline.Parse(path, []byte(bad)); err != nil {
		t.Fatalf("test config does not parse: %v", err)
	}
	code, _, errs := forwarder(t, "run", "-config", path, "-stats", "off")
	if code != 1 || !strings.Contains(errs, `device "in"`) || !strings.Contains(errs, "badopen.toml:") {
		t.Errorf("open failure: exit %d, stderr %q", code, errs)
	}
	// A bad graph never starts.
	path = writeFile(t, "badgraph.toml", "[graph]\nlinks = [\"FromDevice(nowhere) -> Discard\"]\n")
	if code, _, errs := forwarder(t, "run", "-config", path, "-stats", "off"); code != 1 || !strings.Contains(errs, "badgraph.toml:2") {
		t.Errorf("bad graph: exit %d, stderr %q", code, errs)
	}
	// An explicit stats address that cannot be bound is an error.
	if code, _, errs := forwarder(t, "run", "-duration", "1s", "-stats", "256.0.0.1:1"); code != 1 || !strings.Contains(errs, "stats endpoint") {
		t.Errorf("bad stats address: exit %d, stderr %q", code, errs)
	}
	// A CPU list that does not parse: a usage error.
	if code, _, errs := forwarder(t, "run", "-cpus", "1,x", "-stats", "off"); code != 2 || !strings.Contains(errs, `-cpus: "x"`) {
		t.Errorf("bad -cpus: exit %d, stderr %q", code, errs)
	}
}

func TestParseCPUList(t *testing.T) {
	for in, want := range map[string]string{"": "[]", "3": "[3]", "0,2": "[0 2]", "2-4,7": "[2 3 4 7]", " 1 , 0": "[1 0]"} {
		got, err := parseCPUList(in)
		if err != nil || fmt.Sprint(got) != want {
			t.Errorf("parseCPUList(%q) = %v, %v; want %s", in, got, err, want)
		}
	}
	for _, in := range []string{"x", "3-1", "-1", "1,", "70000"} {
		if got, err := parseCPUList(in); err == nil {
			t.Errorf("parseCPUList(%q) = %v, want an error", in, got)
		}
	}
}

// notifyBuffer is a goroutine-safe buffer that reports its first write.
type notifyBuffer struct {
	mu    sync.Mutex
	buf   bytes.Buffer
	first chan struct{}
	once  sync.Once
}

func (b *notifyBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.once.Do(func() { close(b.first) })
	return b.buf.Write(p)
}

func (b *notifyBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// TestRunSignal: SIGTERM stops an endless run cleanly, exit status 0.
func TestRunSignal(t *testing.T) {
	out := &notifyBuffer{first: make(chan struct{})}
	var errs bytes.Buffer
	done := make(chan int)
	go func() { done <- Main([]string{"run", "-workers", "1", "-stats", "off"}, out, &errs) }()
	select {
	case <-out.first: // the banner: the signal handler is installed
	case <-time.After(10 * time.Second):
		t.Fatal("no banner")
	}
	time.Sleep(100 * time.Millisecond)
	syscall.Kill(os.Getpid(), syscall.SIGTERM)
	select {
	case code := <-done:
		if code != 0 {
			t.Errorf("exit %d: %s", code, errs.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("did not stop on SIGTERM")
	}
	if s := out.String(); !strings.Contains(s, "(signal)") || !strings.Contains(s, "total: rx") {
		t.Errorf("output:\n%s", s)
	}
}

// TestRunRateLines: the rate line is printed every interval.
func TestRunRateLines(t *testing.T) {
	g, err := pipeline.Parse(defaultGraphName, defaultGraph)
	if err != nil {
		t.Fatal(err)
	}
	var out, errs bytes.Buffer
	err = run(context.Background(), g, runOptions{duration: 350 * time.Millisecond, workers: 1, stats: "off",
		every: 100 * time.Millisecond}, &out, &errs)
	if err != nil {
		t.Fatal(err)
	}
	lines := regexp.MustCompile(`(?m)^\S+  rx [\d.]+ [kM]?pps  tx [\d.]+ [kM]?pps  drops \d+ pps  busy w0 \d+%$`).FindAllString(out.String(), -1)
	if len(lines) < 2 {
		t.Errorf("%d rate lines:\n%s", len(lines), out.String())
	}
}

// TestStatsCommand reads a running router's endpoint in each format.
func TestStatsCommand(t *testing.T) {
	g, err := pipeline.Parse(defaultGraphName, defaultGraph)
	if err != nil {
		t.Fatal(err)
	}
	r, err := pipeline.Start(g, pipeline.Options{Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { r.Stop(); r.Wait() }()
	a, err := statshttp.Serve(r, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := a.String()
	// Wait until the worker has published traffic: on a loaded machine
	// (the other packages' tests run alongside) 50 ms was not always
	// enough for it to run at all.
	for deadline := time.Now().Add(10 * time.Second); r.Snapshot().Totals.RX == 0; {
		if time.Now().After(deadline) {
			t.Fatal("the router published no traffic in 10 s")
		}
		time.Sleep(10 * time.Millisecond)
	}

	code, out, errs := forwarder(t, "stats", "-addr", addr)
	if code != 0 || !strings.Contains(out, "ns/pkt") || !strings.Contains(out, "IPLookup") || !strings.Contains(out, "uptime") {
		t.Errorf("table: exit %d %s\n%s", code, errs, out)
	}
	code, out, _ = forwarder(t, "stats", "-addr", addr, "-format", "json")
	var s pipeline.Snapshot
	if code != 0 || json.Unmarshal([]byte(out), &s) != nil || s.Totals.RX == 0 {
		t.Errorf("json: exit %d\n%s", code, out)
	}
	code, out, _ = forwarder(t, "stats", "-addr", addr, "-format", "prom")
	if code != 0 || !strings.Contains(out, `junction_element_packets_total{element="rt",type="IPLookup",worker="0"}`) {
		t.Errorf("prom: exit %d\n%s", code, out)
	}
	if code, _, _ := forwarder(t, "stats", "-addr", addr, "-format", "xml"); code != 2 { // a usage error
		t.Errorf("bad format: exit %d", code)
	}
	r.Stop()
	r.Wait()
	if code, _, errs := forwarder(t, "stats", "-addr", addr); code != 1 || !strings.Contains(errs, "stats endpoint") {
		t.Errorf("stopped forwarder: exit %d, %s", code, errs)
	}
}
