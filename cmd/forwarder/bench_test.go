package main

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

func TestBenchElement(t *testing.T) {
	var out, errb bytes.Buffer
	code := Main([]string{"bench", "-element", "Classifier", "-set", `rules=["udp", "-"]`,
		"-traffic", "proto=tcp,flows=4", "-batch", "32", "-duration", "100ms"}, &out, &errb)
	if code != 0 {
		t.Fatalf("exit %d: %s%s", code, out.String(), errb.String())
	}
	s := out.String()
	for _, w := range []string{"ns/packet", "Mpps", "allocs/packet", "batch 32", "element bench (Classifier)", "output"} {
		if !strings.Contains(s, w) {
			t.Errorf("output lacks %q:\n%s", w, s)
		}
	}
	// TCP traffic: nothing matches "udp", everything goes to port 1.
	m := regexp.MustCompile(`(?m)^\s+0\s+(\d+)\s.*\n\s+1\s+(\d+)\s`).FindStringSubmatch(s)
	if m == nil {
		t.Fatalf("no per-port table:\n%s", s)
	}
	p0, _ := strconv.Atoi(m[1])
	p1, _ := strconv.Atoi(m[2])
	if p0 != 0 || p1 == 0 {
		t.Errorf("ports: %d, %d; want 0 and all", p0, p1)
	}
}

func TestBenchErrors(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"bench", "-element", "DecTLL"}, `did you mean "DecTTL"`},
		{[]string{"bench", "-element", "DecTTL", "-set", "nokey"}, "want key=value"},
		{[]string{"bench", "-element", "DecTTL", "-set", "foo=1"}, `key "foo": unknown`},
		{[]string{"bench", "-element", "DecTTL", "-batch", "1000"}, "want 1..256"},
		{[]string{"bench", "-config", "x.toml", "-element", "DecTTL"}, "do not apply"},
	} {
		var out, errb bytes.Buffer
		if code := Main(c.args, &out, &errb); code == 0 || !strings.Contains(errb.String(), c.want) {
			t.Errorf("%v: exit %d, stderr %q, want %q", c.args, code, errb.String(), c.want)
		}
	}
}

func TestBenchConfig(t *testing.T) {
	var out, errb bytes.Buffer
	if code := Main([]string{"bench", "-config", "../../configs/bench-l3.toml", "-duration", "100ms"}, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	for _, w := range []string{"ns/packet", "IPLookup", "ns/pkt"} {
		if !strings.Contains(out.String(), w) {
			t.Errorf("output lacks %q:\n%s", w, out.String())
		}
	}
}

// The elements' and drivers' messages reach bench's stderr: a Conntrack
// whose state file is not one says so while it starts.
func TestBenchLog(t *testing.T) {
	state := filepath.Join(t.TempDir(), "ct.state")
	// Worker 0's file (conntrack.StatePath).
	if err := os.WriteFile(state+".w0", []byte("not a state file"), 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	code := Main([]string{"bench", "-element", "Conntrack", "-set", "state_file=" + strconv.Quote(state),
		"-traffic", "proto=udp,flows=4", "-duration", "50ms"}, &out, &errb)
	if code != 0 {
		t.Fatalf("exit %d: %s%s", code, out.String(), errb.String())
	}
	if !strings.Contains(errb.String(), "flows restored") {
		t.Errorf("stderr lacks Conntrack's message about its state file:\n%s", errb.String())
	}
}
