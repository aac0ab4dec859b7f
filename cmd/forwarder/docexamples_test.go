package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/junction-dataplane/junction/internal/netns"
	"github.com/junction-dataplane/junction/internal/pcaptest"
)

// docExample is a TOML block of the documentation that is a whole graph
// (it has a [graph] table).
type docExample struct {
	file string // relative to the repository's root
	line int    // of the block's first line
	text string
}

// docExamples extracts the whole graphs from README.md and docs/*.md.
func docExamples(t *testing.T) []docExample {
	t.Helper()
	files, err := filepath.Glob("../../docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	files = append([]string{"../../README.md"}, files...)
	var out []docExample
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var block []string
		in, start := false, 0
		for i, l := range strings.Split(string(data), "\n") {
			switch {
			case !in && strings.TrimSpace(l) == "```toml":
				in, start, block = true, i+2, nil
			case in && strings.TrimSpace(l) == "```":
				in = false
				text := strings.Join(block, "\n") + "\n"
				if regexp.MustCompile(`(?m)^\[graph\]`).MatchString(text) {
					out = append(out, docExample{strings.TrimPrefix(f, "../../"), start, text})
				}
			case in:
				block = append(block, l)
			}
		}
	}
	return out
}

var (
	readKey      = regexp.MustCompile(`(?m)^read\s*=\s*"([^"]+)"`)
	interfaceKey = regexp.MustCompile(`(?m)^interface\s*=\s*"([^"]+)"`)
)

// TestDocExamples: every graph the documentation shows whole passes
// forwarder check -strict, environment included, as a reader who copies
// it would run it: the pcap files it reads are there (empty captures),
// and the interfaces it names exist (veth pairs of those names, in a
// namespace of the test's, when the test runs as root; without root
// those examples skip).
func TestDocExamples(t *testing.T) {
	exs := docExamples(t)
	seen := map[string]bool{}
	for _, ex := range exs {
		seen[ex.file] = true
	}
	// The graphs these pages are known to show: an extractor that
	// finds none would pass anything.
	for _, f := range []string{"README.md", "docs/graph-file.md"} {
		if !seen[f] {
			t.Errorf("no whole graph found in %s", f)
		}
	}
	for _, ex := range exs {
		name := strings.ReplaceAll(ex.file, "/", "_") + ":" + strconv.Itoa(ex.line)
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "example.toml")
			if err := os.WriteFile(path, []byte(ex.text), 0o644); err != nil {
				t.Fatal(err)
			}
			for _, m := range readKey.FindAllStringSubmatch(ex.text, -1) {
				pcaptest.Write(t, filepath.Join(dir, m[1]), nil)
			}
			check := func() error {
				code, out, errs := forwarder(t, "check", "-strict", path)
				if code != 0 || !strings.HasPrefix(out, "ok: ") {
					t.Errorf("%s:%d: forwarder check -strict: exit %d\n%s%s", ex.file, ex.line, code, out, errs)
				}
				return nil
			}
			ifs := interfaceKey.FindAllStringSubmatch(ex.text, -1)
			if len(ifs) == 0 {
				check()
				return
			}
			netns.RequireRoot(t)
			env := netns.New(t)
			ns := env.NS("docs")
			for i, m := range ifs {
				env.Veth(ns, m[1], ns, "peer"+strconv.Itoa(i), 2)
			}
			if err := ns.Do(check); err != nil {
				t.Fatal(err)
			}
		})
	}
}
