package main

import (
	"bytes"
	"encoding/json"
	"regexp"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/junction-dataplane/junction/benchmarks/result"
)

// TestBenchOriginText: bench's text starts with the machine, the commit
// and the load average, one line each.
func TestBenchOriginText(t *testing.T) {
	for _, args := range [][]string{
		{"bench", "-element", "DecTTL", "-duration", "50ms"},
		{"bench", "-config", "../../configs/bench-l3.toml", "-duration", "50ms"},
	} {
		code, out, errs := forwarder(t, args...)
		if code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, errs)
		}
		for _, re := range []string{
			`(?m)^machine  .+, \d+ cores?, \S+ \S+, go\S+$`,
			`(?m)^commit   (unknown \(|[0-9a-f]{7,}(, modified)? \(from )`,
			`(?m)^load     \d+\.\d\d \(one-minute load average at the start\)$`,
		} {
			if !regexp.MustCompile(re).MatchString(out) {
				t.Errorf("%v: no line matching %s:\n%s", args, re, out)
			}
		}
	}
}

// TestBenchOriginJSON: bench -json carries the same as machine's fields.
func TestBenchOriginJSON(t *testing.T) {
	code, out, errs := forwarder(t, "bench", "-element", "DecTTL", "-duration", "50ms", "-json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var doc struct {
		Machine map[string]any `json:"machine"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	want := []string{"cpu", "cores", "kernel", "go", "load1"}
	if result.ThisMachine().Commit != "" { // known here: from the build or from git
		want = append(want, "commit")
	}
	for _, k := range want {
		if v, ok := doc.Machine[k]; !ok || v == "" {
			t.Errorf("machine.%s missing: %v", k, doc.Machine)
		}
	}
}

// TestOriginFrom: the commit comes from the build information where it
// has one, as in forwarder version; git's answer is used, and labelled,
// only where it has none.
func TestOriginFrom(t *testing.T) {
	m := result.Machine{CPU: "Test CPU", Cores: 2, Kernel: "Linux 6.18", Go: "go1.26.0", Load1: 1.5,
		Commit: "fromgit0123456", Modified: false}
	stamped := &debug.BuildInfo{Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "abc1234def"}, {Key: "vcs.modified", Value: "true"}}}
	for _, c := range []struct {
		name string
		m    result.Machine
		bi   *debug.BuildInfo
		ok   bool
		want []string
	}{
		{"stamped", m, stamped, true, []string{"commit   abc1234def, modified (from build information)"}},
		{"git", m, &debug.BuildInfo{}, true, []string{"commit   fromgit0123456 (from git in the working directory"}},
		{"none", result.Machine{Cores: 1}, nil, false, []string{"commit   unknown (", "machine  unknown CPU, 1 core,"}},
	} {
		o := originFrom(c.m, c.bi, c.ok)
		var b bytes.Buffer
		o.write(&b)
		for _, w := range append(c.want, "load     ") {
			if !strings.Contains(b.String(), w) {
				t.Errorf("%s: lacks %q:\n%s", c.name, w, b.String())
			}
		}
		if strings.Count(b.String(), "\n") != 3 {
			t.Errorf("%s: want three lines:\n%s", c.name, b.String())
		}
	}
	if o := originFrom(m, stamped, true); o.machine.Commit != "abc1234def" || !o.machine.Modified {
		t.Errorf("stamped: %+v", o.machine)
	}
}
