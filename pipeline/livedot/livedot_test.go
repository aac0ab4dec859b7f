package livedot

import (
	"strings"
	"testing"
	"time"

	"github.com/junction-dataplane/junction/pipeline"
)

// TestDOTLinks: link rates come from the element counters where
// they settle them (a destination's only input; a source's remaining
// output) and are drawn unknown where they do not (two links between the
// same pair of elements, into two ports); drops are drawn by reason.
func TestDOTLinks(t *testing.T) {
	g := mustParse(t, `[devices.lan]
driver = "testld"
[elements.f]
type = "TestLdFilter"
[graph]
links = [
  "src :: TestLdSource(lan) -> f[1] -> [0]j :: TestLdJoin -> sink :: TestLdSink(lan)",
  "f -> [1]j",
]
`)
	at := func(up time.Duration, src, f, j, sink, drops uint64) *pipeline.Snapshot {
		return &pipeline.Snapshot{Uptime: up, Elements: []pipeline.ElementStats{
			{Element: "src", Packets: src},
			{Element: "f", Packets: f, TimedNanos: 10 * f, TimedPackets: f},
			{Element: "j", Packets: j, Counters: []pipeline.Counter{{Name: "too late", Drop: true, Value: drops}, {Name: "never", Drop: true}}},
			{Element: "sink", Packets: sink},
		}}
	}
	st := &Stats{Before: at(time.Second, 1000, 1000, 1000, 900, 100), After: at(3*time.Second, 3000, 3000, 3000, 2700, 300), Source: "test"}
	got := DOT(g, st)
	want := []string{
		`"src" -> "f" [penwidth=6.00, label="1 kpps"]`,
		`"f" -> "j" [taillabel="[1]", style=dashed, label="?"]`,
		`"f" -> "j" [taillabel="[0]", headlabel="[1]", style=dashed, label="?"]`,
		`label="j: TestLdJoin\n1 kpps\ndrop too late: 100 pps", fillcolor="white", color="#b00000"`,
		`label="f: TestLdFilter\n1 kpps, 10 ns/pkt", fillcolor="#ffeda0"`,
		`"j" -> "sink" [penwidth=5.72, label="900 pps"]`,
		"packets/s over 2s from test",
	}
	for _, w := range want {
		if !strings.Contains(got, w) {
			t.Errorf("no %s in\n%s", w, got)
		}
	}
	if strings.Contains(got, "never") {
		t.Error("a drop reason that did not happen is drawn")
	}
}

// TestDOTConsumed: what an element consumes by design is drawn by
// reason as consumed, without the red outline that marks losses.
func TestDOTConsumed(t *testing.T) {
	g := mustParse(t, `[devices.lan]
driver = "testld"
[elements.f]
type = "TestLdFilter"
[graph]
links = [
  "src :: TestLdSource(lan) -> f[1] -> [0]j :: TestLdJoin -> sink :: TestLdSink(lan)",
  "f -> [1]j",
]
`)
	at := func(up time.Duration, n, consumed uint64) *pipeline.Snapshot {
		return &pipeline.Snapshot{Uptime: up, Elements: []pipeline.ElementStats{
			{Element: "src", Packets: n},
			{Element: "f", Packets: n},
			{Element: "j", Packets: n, Consumed: consumed, Counters: []pipeline.Counter{{Name: "by design", Consumed: true, Value: consumed}}},
			{Element: "sink", Packets: n - consumed},
		}}
	}
	got := DOT(g, &Stats{Before: at(time.Second, 1000, 100), After: at(3*time.Second, 3000, 300)})
	want := `label="j: TestLdJoin\n1 kpps\nconsumed by design: 100 pps", fillcolor="white"];`
	if !strings.Contains(got, want) {
		t.Errorf("no %s in\n%s", want, got)
	}
	if strings.Contains(got, "#b00000") || strings.Contains(got, "drop by design") {
		t.Errorf("a consumption drawn as a drop:\n%s", got)
	}
}
