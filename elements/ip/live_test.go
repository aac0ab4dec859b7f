package ip

import (
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/junction-dataplane/junction/elements"
)

func liveLookup(t *testing.T, cfg *IPLookupConfig) *IPLookup {
	t.Helper()
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	tab, err := NewTable(cfg.tbl.Parsed())
	if err != nil {
		t.Fatal(err)
	}
	sh := &sharedTable{table: tab, cfg: cfg.tbl, key: tableKey{name: "rt", own: true}}
	sh.minOuts.Store(int32(cfg.outs))
	return &IPLookup{table: tab, sh: sh, ctl: sh, outs: make([]*elements.Output, cfg.outs)}
}

func TestLiveRoutes(t *testing.T) {
	file := filepath.Join(t.TempDir(), "routes")
	os.WriteFile(file, []byte("10.0.0.0/8 via 10.1.0.2 out 0\n"), 0o644)
	e := liveLookup(t, &IPLookupConfig{Routes: []string{"192.168.1.0/24 out 1"}, RoutesFile: file, Miss: -1})

	if _, err := e.SetRoute("10.9.0.0/16 via 10.1.0.3 via 10.1.0.4 out 0 out 1", false); err != nil {
		t.Fatal(err)
	}
	r, ok := e.RouteFor(netip.MustParseAddr("10.9.1.1"))
	if !ok || r.Prefix.String() != "10.9.0.0/16" || r.Source != "live" || len(r.Hops) != 2 || r.Hops[1].Out != 1 {
		t.Errorf("ECMP live route: %+v", r)
	}
	if r, _ := e.RouteFor(netip.MustParseAddr("10.8.1.1")); r.Source != "config" || r.Prefix.String() != "10.0.0.0/8" {
		t.Errorf("config route: %+v", r)
	}
	for _, c := range []struct {
		text    string
		replace bool
		want    string
	}{
		{"10.9.0.0/16 out 0", false, "exists (use route replace)"},
		{"10.77.0.0/16 out 0", true, "no route for this prefix to replace"},
		{"10.5.0.0/16 out 2", false, "out 2: this IPLookup has output ports 0..1"},
		{"10.5.0.0/16 via 10.1.0.2", false, `"10.5.0.0/16 via 10.1.0.2"`},
	} {
		if _, err := e.SetRoute(c.text, c.replace); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("SetRoute(%q, %v): %v, want %q", c.text, c.replace, err, c.want)
		}
	}
	if err := e.DeleteRoute(netip.MustParsePrefix("10.77.0.0/16")); err == nil || !strings.Contains(err.Error(), "no such route") {
		t.Errorf("delete of a missing route: %v", err)
	}

	os.WriteFile(file, []byte("10.0.0.0/8 via 10.1.0.9 out 0\n172.16.0.0/12 out 1\n"), 0o644)
	if n, err := e.ReloadRoutes(); err != nil || n != 3 {
		t.Fatalf("reload: %d, %v", n, err)
	}
	if _, ok := e.RouteExact(netip.MustParsePrefix("10.9.0.0/16")); ok {
		t.Error("a live route survived the reload")
	}
	os.WriteFile(file, []byte("172.16.0.0/12 out 5\n"), 0o644)
	if _, err := e.ReloadRoutes(); err == nil || !strings.Contains(err.Error(), "out 5") {
		t.Errorf("reload with a port the element lacks: %v", err)
	}
	if got := len(e.RouteList()); got != 3 {
		t.Errorf("%d routes after a refused reload, want 3", got)
	}

	kc := &IPLookupConfig{Source: "kernel", Interfaces: []string{"a"}}
	if err := kc.Validate(); err != nil {
		t.Fatal(err)
	}
	k := &IPLookup{table: e.table, ctl: &sharedTable{cfg: kc.tbl}}
	if _, err := k.SetRoute("10.5.0.0/16 out 0", false); err == nil || !strings.Contains(err.Error(), "kernel") {
		t.Errorf("route add on a kernel mirror: %v", err)
	}
}
