package benchmarks

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/junction-dataplane/junction/elements/ip"
)

// TestWriteRoutes: the routing benchmarks' table holds the synthetic
// prefixes out of port 1 and bench-l3.toml's three routes once each, as
// the config has them.
func TestWriteRoutes(t *testing.T) {
	path := filepath.Join(t.TempDir(), "t.routes")
	if err := WriteRoutes(path, 1000); err != nil {
		t.Fatal(err)
	}
	rs, err := ip.ReadRoutesFile(path)
	if err != nil {
		t.Fatal(err)
	}
	fixed := map[string]string{"10.1.0.0/24": "out 0", "10.2.0.0/24": "out 1", "0.0.0.0/0": "out 1 via 10.2.0.2"}
	seen := map[string]int{}
	for _, r := range rs {
		p := r.Prefix.String()
		if want, ok := fixed[p]; ok {
			seen[p]++
			got := fmt.Sprintf("out %d", r.Out)
			if r.NextHop.IsValid() {
				got += " via " + r.NextHop.String()
			}
			if got != want {
				t.Errorf("%s: %s, want %s", p, got, want)
			}
			continue
		}
		if r.Out != 1 || !r.Prefix.Addr().Is4() || r.Prefix != r.Prefix.Masked() {
			t.Errorf("synthetic route %v out %d", r.Prefix, r.Out)
		}
	}
	for p := range fixed {
		if seen[p] != 1 {
			t.Errorf("%s listed %d times", p, seen[p])
		}
	}
	if len(rs) < 1000 || len(rs) > 1003 {
		t.Errorf("%d routes, want the 1000 synthetic ones and the 3 fixed (less any of the same prefix)", len(rs))
	}
}
