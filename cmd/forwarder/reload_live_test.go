package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// liveRoutesGraph is an IPLookup with the given routes and outputs 0..ports-1.
func liveRoutesGraph(routes string, ports int) string {
	links := `"FromDevice(a) -> rt"`
	for p := 0; p < ports; p++ {
		links += `, "rt[` + string(rune('0'+p)) + `] -> Discard"`
	}
	return "[devices.a]\ndriver = \"gen\"\nrate = 1000\n\n[elements.rt]\ntype = \"IPLookup\"\nroutes = [" + routes + "]\n\n[graph]\nlinks = [" + links + "]\n"
}

// TestReloadKeepsLiveRoutes: a reload that changes an IPLookup's routes
// builds its table from the file and applies the routes added live
// (forwarder route add) on top of them, except a prefix the file now
// routes itself and a route to a port the new IPLookup does not have;
// the report, dry or not, names each route kept and each dropped, and
// why.
func TestReloadKeepsLiveRoutes(t *testing.T) {
	dir := t.TempDir()
	v1 := filepath.Join(dir, "v1.toml")
	v2 := filepath.Join(dir, "v2.toml")
	src1 := liveRoutesGraph(`"10.1.0.0/24 out 0", "10.2.0.0/24 out 2", "0.0.0.0/0 via 10.2.0.2 out 1"`, 3)
	src2 := liveRoutesGraph(`"10.1.0.0/24 out 0", "10.8.0.0/16 via 10.2.0.8 out 1", "0.0.0.0/0 via 10.2.0.3 out 1"`, 2)
	os.WriteFile(v1, []byte(src1), 0o644)
	os.WriteFile(v2, []byte(src2), 0o644)
	sock := ctlRouterFile(t, v1, []byte(src1))
	for _, r := range [][]string{
		{"10.7.0.0/16", "via", "10.2.0.7", "out", "1"}, // kept
		{"10.8.0.0/16", "out", "1"},                    // the new file routes it
		{"10.9.0.0/16", "out", "2"},                    // rt has no port 2 any more
	} {
		if code, _, errs := ctl(t, sock, append([]string{"route", "add"}, r...)...); code != 0 {
			t.Fatalf("route add %v: exit %d: %s", r, code, errs)
		}
	}
	wantLines := []string{
		"live state             rt (IPLookup): live route kept: 10.7.0.0/16 via 10.2.0.7 out 1 (applied over the file's routes)",
		"live state             rt (IPLookup): live route dropped: 10.8.0.0/16 out 1: the file routes 10.8.0.0/16 itself (10.8.0.0/16 via 10.2.0.8 out 1)",
		"live state             rt (IPLookup): live route dropped: 10.9.0.0/16 out 2: out 2: the new configuration has output ports 0..1",
	}
	code, out, errs := ctl(t, sock, "reload", "-config", v2, "-dry-run")
	if code != 0 {
		t.Fatalf("dry run: exit %d: %s", code, errs)
	}
	for _, w := range wantLines {
		if !strings.Contains(out, w) {
			t.Errorf("the dry run does not say\n%s\nin\n%s", w, out)
		}
	}
	code, out, errs = ctl(t, sock, "reload", "-config", v2)
	if code != 0 {
		t.Fatalf("reload: exit %d: %s", code, errs)
	}
	for _, w := range wantLines {
		if !strings.Contains(out, w) {
			t.Errorf("the reload does not say\n%s\nin\n%s", w, out)
		}
	}
	_, routes, _ := ctl(t, sock, "show", "routes")
	want := "0.0.0.0/0 via 10.2.0.3 out 1\n10.1.0.0/24 connected out 0\n10.7.0.0/16 via 10.2.0.7 out 1  [live]\n10.8.0.0/16 via 10.2.0.8 out 1\nrt: 4 routes (source config)\n"
	if routes != want {
		t.Errorf("routes after the reload:\n%s\nwant\n%s", routes, want)
	}

	// The kept route is still live: a reload with the same routes keeps
	// the table as it is, and says so.
	code, out, _ = ctl(t, sock, "reload", "-config", v2)
	if code != 0 || !strings.Contains(out, "rt (IPLookup): live route kept: 10.7.0.0/16 via 10.2.0.7 out 1 (the table is kept as it is)") {
		t.Errorf("an unchanged reload: exit %d:\n%s", code, out)
	}
}
