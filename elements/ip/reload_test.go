package ip

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/junction-dataplane/junction/elements"
)

// TestRoutesFileRemembered: validating a config whose routes_file did not
// change, for the same router (graph state), reuses the validated routes
// (the same slice); a file rewritten with other routes of the same size is
// parsed again; another router's state, or none, remembers nothing.
func TestRoutesFileRemembered(t *testing.T) {
	path := filepath.Join(t.TempDir(), "r.routes")
	write := func(s string) {
		if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	validate := func(s *elements.GraphState) *IPLookupConfig {
		c := &IPLookupConfig{RoutesFile: path, Source: "config"}
		var err error
		if s == nil {
			err = c.Validate()
		} else {
			err = c.ValidateState(s)
		}
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.ValueOf(c.own).FieldByName("cache").IsNil() {
			t.Fatal("the config keeps the cache after ValidateState")
		}
		return c
	}
	write("10.1.0.0/16 out 0\n10.2.0.0/16 out 1\n")
	router, other := elements.NewGraphState(), elements.NewGraphState()
	a, b := validate(router), validate(router)
	if &a.tbl.Parsed()[0] != &b.tbl.Parsed()[0] {
		t.Error("an unchanged routes_file was parsed again")
	}
	if b.outs != 2 {
		t.Errorf("remembered set: %d ports, want 2", b.outs)
	}
	if c := validate(other); &c.tbl.Parsed()[0] == &a.tbl.Parsed()[0] {
		t.Error("another router's state saw this router's routes")
	}
	if c := validate(nil); &c.tbl.Parsed()[0] == &a.tbl.Parsed()[0] {
		t.Error("a load for no router saw a router's routes")
	}
	write("10.3.0.0/16 out 0\n10.4.0.0/16 out 2\n") // same size
	c := validate(router)
	if got := c.tbl.Parsed()[0].Prefix.String(); got != "10.3.0.0/16" {
		t.Errorf("after a rewrite: first route %s, want 10.3.0.0/16 (stale routes remembered)", got)
	}
	if c.outs != 3 {
		t.Errorf("after a rewrite: %d ports, want 3", c.outs)
	}
}

// TestRoutesFileRememberedWhenBuilt: a graph loaded before its router
// existed (forwarder run) validated its routes without a cache; building
// its IPLookup remembers them in the router's state, so that the router's
// first reload of the unchanged file reuses them.
func TestRoutesFileRememberedWhenBuilt(t *testing.T) {
	path := filepath.Join(t.TempDir(), "r.routes")
	if err := os.WriteFile(path, []byte("10.1.0.0/16 out 0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	first := &IPLookupConfig{RoutesFile: path, Source: "config"}
	if err := first.Validate(); err != nil {
		t.Fatal(err)
	}
	router := elements.NewGraphState()
	ctx := elements.NewContext("rt", 0, 1, 64, []*elements.Output{{}}, &elements.Stats{}, nil, nil, nil).WithState(router)
	el, err := newIPLookup(first, ctx)
	if err != nil {
		t.Fatal(err)
	}
	if c, ok := el.(elements.Closer); ok {
		defer c.Close()
	}
	again := &IPLookupConfig{RoutesFile: path, Source: "config"}
	if err := again.ValidateState(router); err != nil {
		t.Fatal(err)
	}
	if &again.tbl.Parsed()[0] != &first.tbl.Parsed()[0] {
		t.Error("the router's reload parsed the routes its IPLookup was built with again")
	}
}
