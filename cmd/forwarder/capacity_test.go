package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/junction-dataplane/junction/elements"
	"github.com/junction-dataplane/junction/elements/conntrack"
)

// TestCapacityCheckedAsRunWould: a Conntrack capacity that fits one
// worker's table in memory but not every worker's, 2^30 (the documented
// maximum), and more than one Conntrack: check refuses each with a located
// error, and run refuses it the same way before it allocates anything
// (allocating would end in "fatal error: runtime: out of memory").
func TestCapacityCheckedAsRunWould(t *testing.T) {
	budget, _ := elements.MemoryBudget()
	if budget == 0 {
		t.Skip("no /proc/meminfo")
	}
	per := conntrack.TableBytes(1<<20, true) >> 20
	dir := t.TempDir()
	write := func(name, elems string, links string) string {
		p := filepath.Join(dir, name)
		src := "[forwarder]\nworkers = 4\n\n[devices.in]\ndriver = \"gen\"\n\n" + elems + "\n[graph]\nlinks = [" + links + "]\n"
		if err := os.WriteFile(p, []byte(src), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	fits := budget / per / 3 // one worker's fits, four do not
	for _, c := range []struct {
		name, file, want string
	}{
		{"workers", write("w.toml", fmt.Sprintf("[elements.ct]\ntype = \"Conntrack\"\ncapacity = %d\n", fits), `"FromDevice(in) -> ct -> Discard"`),
			`w.toml:7: element "ct" (Conntrack): key "capacity": `},
		{"max", write("max.toml", fmt.Sprintf("[elements.ct]\ntype = \"Conntrack\"\ncapacity = %d\n", conntrack.MaxCapacity), `"FromDevice(in) -> ct -> Discard"`),
			`max.toml:9: element "ct" (Conntrack): key "capacity": 1073741824 flows take`},
		{"two", write("two.toml", "", `"FromDevice(in) -> a :: Conntrack -> b :: Conntrack -> Discard"`),
			`element "b" (Conntrack): a worker has one flow table: only one Conntrack per graph (the first is "a"`},
	} {
		code, out, errs := forwarder(t, "check", c.file)
		if code != 1 || !strings.Contains(errs, c.want) {
			t.Fatalf("%s: check: exit %d %q %q, want 1 and %q", c.name, code, out, errs, c.want)
		}
		code, out, errs = forwarder(t, "run", "-config", c.file, "-nopin", "-duration", "1s", "-stats", "off", "-control", "off", "-quiet")
		if code != 1 || !strings.Contains(errs, c.want) {
			t.Errorf("%s: run: exit %d %q %q, want 1 and %q", c.name, code, out, errs, c.want)
		}
	}
	// 2,000 Conntracks: one error for each beyond the first, quickly.
	var b strings.Builder
	chain := "FromDevice(in)"
	for i := range 2000 {
		fmt.Fprintf(&b, "[elements.ct%d]\ntype = \"Conntrack\"\n", i)
		chain += fmt.Sprintf(" -> ct%d", i)
	}
	many := write("many.toml", b.String(), `"`+chain+` -> Discard"`)
	if code, _, errs := forwarder(t, "check", many); code != 1 || !strings.Contains(errs, "only one Conntrack per graph") {
		t.Errorf("2,000 Conntracks: check: exit %d %.300q", code, errs)
	}
}
