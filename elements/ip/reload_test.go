package ip

import (
	"os"
	"path/filepath"
	"testing"
)

// TestRoutesFileRemembered: validating a config whose routes_file did not
// change reuses the validated routes (the same slice); a file rewritten
// with other routes of the same size is parsed again.
func TestRoutesFileRemembered(t *testing.T) {
	path := filepath.Join(t.TempDir(), "r.routes")
	write := func(s string) {
		if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	validate := func() *IPLookupConfig {
		c := &IPLookupConfig{RoutesFile: path, Source: "config"}
		if err := c.Validate(); err != nil {
			t.Fatal(err)
		}
		return c
	}
	write("10.1.0.0/16 out 0\n10.2.0.0/16 out 1\n")
	a, b := validate(), validate()
	if &a.routes[0] != &b.routes[0] {
		t.Error("an unchanged routes_file was parsed again")
	}
	if b.outs != 2 {
		t.Errorf("remembered set: %d ports, want 2", b.outs)
	}
	write("10.3.0.0/16 out 0\n10.4.0.0/16 out 2\n") // same size
	c := validate()
	if got := c.routes[0].Prefix.String(); got != "10.3.0.0/16" {
		t.Errorf("after a rewrite: first route %s, want 10.3.0.0/16 (stale routes remembered)", got)
	}
	if c.outs != 3 {
		t.Errorf("after a rewrite: %d ports, want 3", c.outs)
	}
}
