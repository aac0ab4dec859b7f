package host_test

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"

	_ "github.com/junction-dataplane/junction/drivers/all"
	"github.com/junction-dataplane/junction/elements/elementtest"
	"github.com/junction-dataplane/junction/pipeline"
	"github.com/junction-dataplane/junction/plugins/host"
)

// graph is a one-plugin graph; extra goes into the plugin's table.
func graph(path, element, extra string) string {
	return `[devices.in]
driver = "gen"
count  = 100

[elements.p]
type    = "Plugin"
path    = "` + path + `"
element = "` + element + `"
` + extra + `

[graph]
links = ["FromDevice(in) -> p", "p[0] -> Discard", "p[1] -> Discard"]
`
}

func fileSum(t *testing.T, p string) string {
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// TestLoadErrors: handshake failures and bad plugin configs are refused at
// load, with the file, line, element and key.
func TestLoadErrors(t *testing.T) {
	dir := t.TempDir()
	script := filepath.Join(dir, "notaplugin")
	if err := os.WriteFile(script, []byte("#!/bin/sh\necho hello, I am not a plugin\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	ww := filepath.Join(dir, "worldwritable")
	data, _ := os.ReadFile(pluginPath("faulty"))
	os.WriteFile(ww, data, 0o755)
	os.Chmod(ww, 0o777)
	faulty := pluginPath("faulty")
	cases := []struct {
		name, path, element, extra string
		want                       []string
	}{
		{"not a plugin", script, "X", "", []string{`test.toml:7: element "p" (Plugin): key "path"`, "not a Junction plugin", "handshake"}},
		{"wrong protocol version", pluginPath("wrongversion"), "X", "", []string{`key "path"`, "wrong plugin protocol version", "rebuild the plugin"}},
		{"sha256 mismatch", faulty, "Mangle", `sha256 = "` + strings.Repeat("ab", 32) + `"`, []string{`test.toml:9: element "p" (Plugin): key "sha256"`, "has SHA-256 " + fileSum(t, faulty), "refusing to start it"}},
		{"bad sha256", faulty, "Mangle", `sha256 = "xyz"`, []string{`key "sha256"`, "64 hexadecimal digits"}},
		{"missing", filepath.Join(dir, "nope"), "X", "", []string{`key "path"`, "no such file"}},
		{"world-writable", ww, "Mangle", "", []string{`key "path"`, "world-writable"}},
		{"unknown element", faulty, "Mangel", "", []string{`test.toml:8: element "p" (Plugin): key "element"`, `"Mangel": not served`, "Mangle"}},
		{"plugin config invalid", faulty, "Mangle", "config = { min = 0 }", []string{`test.toml:9: element "p" (Plugin): key "config.min": 0: must be at least 1`}},
		{"plugin config unknown key", faulty, "Mangle", "config = { mni = 3 }", []string{`test.toml:9: element "p" (Plugin): key "config.mni": unknown, did you mean "min"?`}},
		{"plugin config wrong type", faulty, "Mangle", "[elements.p.config]\nmin = \"x\"", []string{`test.toml:10: element "p" (Plugin): key "config.min":`}},
		{"bad on_failure", faulty, "Mangle", `on_failure = "ignore"`, []string{`key "on_failure"`, `want "bypass" or "drop"`}},
		{"bad timeout", faulty, "Mangle", `timeout = "-1s"`, []string{`key "timeout"`}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := pipeline.Parse("test.toml", []byte(graph(c.path, c.element, c.extra)))
			if err == nil {
				t.Fatal("loaded")
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error lacks %q:\n%v", w, err)
				}
			}
		})
	}
}

// TestLoadAndRun loads a valid graph and runs it to the end: every packet
// accounted for, on the plugin's two outputs.
func TestLoadAndRun(t *testing.T) {
	g, err := pipeline.Parse("test.toml", []byte(graph(pluginPath("faulty"), "Mangle", "config = { min = 20, trim = 1 }\nsha256 = \""+fileSum(t, pluginPath("faulty"))+"\"")))
	if err != nil {
		t.Fatal(err)
	}
	r, err := pipeline.Start(g, pipeline.Options{Workers: 1, NoPin: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Wait(); err != nil {
		t.Fatal(err)
	}
	s := r.Snapshot()
	var p uint64
	for _, e := range s.Elements {
		if e.Element == "p" {
			p = e.Packets
		}
	}
	if p != 100 {
		t.Fatalf("plugin element saw %d packets, want 100", p)
	}
}

// TestNoAllocs: the host's per-batch path allocates nothing.
func TestNoAllocs(t *testing.T) {
	cfg := &host.Config{Path: pluginPath("faulty"), Element: "Mangle", OnFailure: "drop", Timeout: slackTimeout}
	h := elementtest.New(t, "Plugin", cfg, &elementtest.Options{Sink: true})
	if a := h.AllocsPerBatch(200, testFrames(8)...); a != 0 {
		t.Fatalf("%v allocations per batch", a)
	}
}
