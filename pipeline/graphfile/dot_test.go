package graphfile

import (
	"os/exec"
	"strings"
	"testing"
)

func TestDOT(t *testing.T) {
	g := mustParse(t, `[devices.lan]
driver = "testld"
[elements.f]
type = "TestLdFilter"
[graph]
links = [
  "TestLdSource(lan) -> f[1] -> [0]j :: TestLdJoin -> TestLdSink(lan)",
  "f -> [1]j",
]
`)
	g.File = `dir/we"ird.toml`
	want := `digraph "dir/we\"ird.toml" {
	rankdir=LR;
	node [shape=box, fontname="Helvetica"];
	edge [fontname="Helvetica", fontsize=10];
	"device lan" [shape=note, style=dashed, label="lan (testld)"];
	"f" [label="f :: TestLdFilter"];
	"TestLdSource(lan)@1" [label="TestLdSource"];
	"j" [label="j :: TestLdJoin"];
	"TestLdSink(lan)@1" [label="TestLdSink"];
	"device lan" -> "TestLdSource(lan)@1" [style=dashed, arrowhead=none];
	"TestLdSink(lan)@1" -> "device lan" [style=dashed, arrowhead=none];
	"TestLdSource(lan)@1" -> "f" [label="[0] -> [0]"];
	"f" -> "j" [label="[1] -> [0]"];
	"j" -> "TestLdSink(lan)@1" [label="[0] -> [0]"];
	"f" -> "j" [label="[0] -> [1]"];
}
`
	got := g.DOT()
	if got != want {
		t.Errorf("DOT:\n%s\nwant:\n%s", got, want)
	}
	dotAccepts(t, got)
}

// dotAccepts checks, when Graphviz is installed, that dot takes the text
// without an error or a warning.
func dotAccepts(t *testing.T, text string) {
	t.Helper()
	dot, err := exec.LookPath("dot")
	if err != nil {
		return
	}
	cmd := exec.Command(dot, "-Tcanon")
	cmd.Stdin = strings.NewReader(text)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil || stderr.Len() > 0 {
		t.Errorf("dot: %v\n%s", err, stderr.String())
	}
}
