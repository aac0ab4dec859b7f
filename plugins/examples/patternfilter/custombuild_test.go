package patternfilter_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/junction-dataplane/junction/plugins/examples/internal/extest"
)

// TestCustomBuild follows the in-process recipe: a forwarder build that
// adds one file with one blank import of this package (here through
// go build -overlay, so the tree is not touched) lists PatternFilter among
// its elements and runs a graph that uses it in process.
func TestCustomBuild(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a forwarder")
	}
	dir := t.TempDir()
	root := extest.Root(t)
	imp := filepath.Join(dir, "custom.go")
	os.WriteFile(imp, []byte("package main\n\nimport _ \"github.com/junction-dataplane/junction/plugins/examples/patternfilter\"\n"), 0o644)
	overlay := filepath.Join(dir, "overlay.json")
	target := filepath.Join(root, "cmd", "forwarder", "zz_custom_elements.go")
	os.WriteFile(overlay, []byte(`{"Replace":{"`+target+`":"`+imp+`"}}`), 0o644)
	fwd := filepath.Join(dir, "forwarder")
	cmd := exec.Command("go", "build", "-overlay", overlay, "-o", fwd, "./cmd/forwarder")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("custom build: %v\n%s", err, out)
	}
	out, err := exec.Command(fwd, "elements", "PatternFilter").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "PatternFilter(patterns, [scope])") {
		t.Fatalf("forwarder elements PatternFilter: %v\n%s", err, out)
	}
	// A graph with the in-process element, over pcap.
	var frames [][]byte
	for i := 0; i < 40; i++ {
		p := "hello"
		if i%4 == 0 {
			p = "an attack"
		}
		frames = append(frames, extest.UDP(t, "10.0.0.1", "10.0.0.2", 1000, 9999, []byte(p)))
	}
	extest.WritePcap(t, filepath.Join(dir, "in.pcap"), frames)
	graph := filepath.Join(dir, "g.toml")
	os.WriteFile(graph, []byte(`
[devices.in]
driver = "pcap"
read   = "in.pcap"

[devices.out]
driver = "pcap"
write  = "out.pcap"

[graph]
links = ["FromDevice(in) -> f :: PatternFilter(attack)", "f[0] -> ToDevice(out)", "f[1] -> Discard"]
`), 0o644)
	run := exec.Command(fwd, "run", "-config", graph, "-quiet", "-nopin", "-stats", "off")
	if out, err := run.CombinedOutput(); err != nil {
		t.Fatalf("forwarder run: %v\n%s", err, out)
	}
	if n := len(extest.ReadPcap(t, filepath.Join(dir, "out.pcap"))); n != 30 {
		t.Fatalf("out.pcap: %d packets, want 30", n)
	}
}
