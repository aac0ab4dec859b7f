package drivers

import (
	"os"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
)

// TestLossesScript: benchmarks/e2e-drops.sh sums the forwarder's drops
// from the stats endpoint's JSON, where device counters carry no
// classification, so it repeats IsLoss's: the same loss words and the same
// event counters.
func TestLossesScript(t *testing.T) {
	src, err := os.ReadFile("../benchmarks/e2e-drops.sh")
	if err != nil {
		t.Fatal(err)
	}
	s := string(src)
	set := regexp.MustCompile(`(?s)NOT_LOSSES = \{(.*?)\}`).FindStringSubmatch(s)
	words := regexp.MustCompile(`re\.search\("([a-z|]+)", c\["name"\]\)`).FindStringSubmatch(s)
	if set == nil || words == nil {
		t.Fatal("e2e-drops.sh: no NOT_LOSSES set or no re.search of the loss words")
	}
	var script []string
	for _, n := range regexp.MustCompile(`"([a-z_]+)"`).FindAllStringSubmatch(set[1], -1) {
		script = append(script, n[1])
	}
	var ours []string
	for n := range notLosses {
		ours = append(ours, n)
	}
	sort.Strings(script)
	sort.Strings(ours)
	if !slices.Equal(script, ours) {
		t.Errorf("e2e-drops.sh's NOT_LOSSES %v, IsLoss's %v", script, ours)
	}
	sw := strings.Split(words[1], "|")
	lw := slices.Clone(lossWords)
	sort.Strings(sw)
	sort.Strings(lw)
	if !slices.Equal(sw, lw) {
		t.Errorf("e2e-drops.sh's loss words %v, IsLoss's %v", sw, lw)
	}
}
