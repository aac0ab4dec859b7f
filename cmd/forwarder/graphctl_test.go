package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestGraphControl: graph -control against a forwarder running the
// default graph (gen devices, one worker) with its control socket in a
// temporary directory: the counters come from the socket's snapshot
// command, with no stats endpoint, and are drawn as with -stats.
func TestGraphControl(t *testing.T) {
	path := ctlRouter(t)
	time.Sleep(200 * time.Millisecond)
	code, out, errs := forwarder(t, "graph", "-control", path, "-interval", "300ms")
	if code != 0 {
		t.Fatalf("graph -control: exit %d: %s", code, errs)
	}
	line := func(prefix string) string {
		for _, l := range strings.Split(out, "\n") {
			if strings.HasPrefix(strings.TrimSpace(l), prefix) {
				return l
			}
		}
		t.Errorf("no line %s in\n%s", prefix, out)
		return ""
	}
	rate := regexp.MustCompile(`[0-9.]+ [kM]pps`)
	if rt := line(`"rt" [`); !rate.MatchString(rt) || !strings.Contains(rt, "ns/pkt") {
		t.Errorf("rt without its rate and ns/packet: %s", rt)
	}
	if l := line(`"ttl" -> "rt"`); !rate.MatchString(l) || !strings.Contains(l, "penwidth=") {
		t.Errorf("the link into rt without its rate: %s", l)
	}
	if !regexp.MustCompile(`packets/s over 3[0-9]{2}ms from ` + regexp.QuoteMeta(path)).MatchString(out) {
		t.Errorf("the caption does not name %s and the interval:\n%s", path, out)
	}

	// The snapshot command takes no arguments.
	if code, _, errs := ctl(t, path, "show", "snapshot"); code != 2 {
		t.Errorf("show snapshot: exit %d, %s", code, errs)
	}
	// -live looks for the socket -config names (no forwarder runs there).
	cfg := filepath.Join(t.TempDir(), "junction-test-none.toml")
	if err := os.WriteFile(cfg, defaultGraph, 0o644); err != nil {
		t.Fatal(err)
	}
	// Another graph's counters are refused; a missing socket is named;
	// one source of counters at a time.
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"graph", "-config", "../../configs/nat-gateway.toml", "-control", path, "-interval", "0"}, 1, "(it runs " + defaultGraphName + ": give -config with that file, or -control SOCKET without -config to draw the graph it runs)"},
		{[]string{"graph", "-control", filepath.Join(t.TempDir(), "none.sock")}, 1, "no forwarder at"},
		{[]string{"graph", "-live", "-config", cfg}, 1, "no forwarder at /run/junction/junction-test-none.sock"},
		{[]string{"graph", "-control", path, "-stats", "127.0.0.1:1"}, 2, "give one"},
		{[]string{"graph", "-control", path, "-live"}, 2, "give one"},
		{[]string{"graph", "-control", path, "-plain"}, 2, "-plain draws no counters"},
	} {
		code, _, errs := forwarder(t, c.args...)
		if code != c.code || !strings.Contains(errs, c.want) {
			t.Errorf("%v: exit %d, stderr %q; want %d and %q", c.args, code, errs, c.code, c.want)
		}
	}
}

// TestGraphControlRunningGraph: graph -control without -config draws the
// graph the forwarder runs (here not the embedded default: graph without
// -config must not load that one and then refuse it as "another graph"),
// with its counters, and after a reload the new one.
func TestGraphControlRunningGraph(t *testing.T) {
	src := "[devices.a]\ndriver = \"gen\"\nrate = 10000\n\n[graph]\nlinks = [\"FromDevice(a) -> mine :: Counter -> Discard\"]\n"
	path := ctlRouterGraph(t, src)
	code, out, errs := forwarder(t, "graph", "-control", path, "-interval", "200ms")
	if code != 0 {
		t.Fatalf("graph -control: exit %d: %s", code, errs)
	}
	if !regexp.MustCompile(`"mine" \[[^\n]*pps`).MatchString(out) {
		t.Errorf("the running graph's element mine is not drawn with its rate:\n%s", out)
	}
	if !strings.Contains(out, "from "+path) || !strings.Contains(out, "test.toml") {
		t.Errorf("the caption names neither the graph nor the socket:\n%s", out)
	}
	if strings.Contains(out, `"rt"`) {
		t.Errorf("the embedded default graph drawn:\n%s", out)
	}
	// -interval 0: averages since start.
	if code, out, errs := forwarder(t, "graph", "-control", path, "-interval", "0"); code != 0 || !strings.Contains(out, `"mine"`) {
		t.Errorf("-interval 0: exit %d: %s%s", code, out, errs)
	}

	other := filepath.Join(t.TempDir(), "other.toml")
	if err := os.WriteFile(other, []byte(strings.Replace(src, "mine :: Counter", "theirs :: Counter", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, _, errs := ctl(t, path, "reload", "-config", other); code != 0 {
		t.Fatalf("reload: exit %d: %s", code, errs)
	}
	code, out, errs = forwarder(t, "graph", "-control", path, "-interval", "0")
	if code != 0 || !strings.Contains(out, `"theirs"`) || strings.Contains(out, `"mine"`) {
		t.Errorf("after the reload: exit %d: %s%s", code, out, errs)
	}
}
