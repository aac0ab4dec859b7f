package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// tablesGraph: lookups rt and rte read table main (IPv4 and IPv6); v6 is
// a second table of IPv6 routes read by rt6, and own is an IPLookup with
// routes of its own.
const tablesGraph = `
[devices.lan]
driver    = "gen"
addresses = ["10.1.0.1/24", "2001:db8:1::1/64"]
mac       = "02:00:00:00:01:01"

[devices.wan]
driver    = "gen"
addresses = ["10.2.0.1/24", "2001:db8:2::1/64"]
mac       = "02:00:00:00:02:01"

[tables.main]
routes = ["10.1.0.0/24 out 0", "10.2.0.0/24 out 1"]

[tables.v6]
family = "ip6"
routes = ["2001:db8:1::/64 out 0", "2001:db8:2::/64 out 1"]

[elements.rt]
type = "IPLookup"

[elements.rte]
type = "IPLookup"

[elements.rt6]
type  = "IPLookup"
table = "v6"

[elements.own]
type   = "IPLookup"
routes = ["10.9.0.0/16 out 0"]

[graph]
links = [
  "FromDevice(lan) -> c :: Classifier(ip, ip6, -)",
  "FromDevice(wan) -> c2 :: Classifier(ip, -)",
  "c[0] -> rt",
  "c[1] -> rt6",
  "c[2] -> own",
  "c2[0] -> rte",
  "c2[1] -> Discard",
  "rt[0] -> ToDevice(lan)",
  "rt[1] -> ToDevice(wan)",
  "rte[0] -> ToDevice(lan)",
  "rte[1] -> ToDevice(wan)",
  "rt6[0] -> ToDevice(lan)",
  "rt6[1] -> ToDevice(wan)",
  "own[0] -> ToDevice(lan)",
]
`

// TestRouteTables: route add and show routes address a table by -table,
// by -element (the table it reads), or by the route's family; a route
// added through the table is seen by both its lookups; a blackhole route
// shows its type.
func TestRouteTables(t *testing.T) {
	sock := ctlRouterGraph(t, tablesGraph)
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		// No flag: main (table v6 holds IPv6 only, own is an element's).
		{[]string{"route", "add", "10.7.0.0/16", "via", "10.2.0.7", "out", "wan"}, 0, "added table main: 10.7.0.0/16 via 10.2.0.7 out wan  [live]"},
		// IPv6: the only table of that family.
		{[]string{"route", "add", "2001:db8:7::/48", "via", "2001:db8:2::7", "out", "1"}, 0, "added table v6: 2001:db8:7::/48 via 2001:db8:2::7 out wan  [live]"},
		{[]string{"route", "add", "blackhole", "10.7.5.1/32"}, 0, "added table main: 10.7.5.1/32 blackhole  [live]"},
		{[]string{"route", "add", "-element", "rte", "10.8.0.0/16", "out", "0"}, 0, "added table main: 10.8.0.0/16 connected out lan  [live]"},
		{[]string{"route", "add", "-table", "own", "10.10.0.0/16", "out", "0"}, 0, "added own: 10.10.0.0/16 connected out lan  [live]"},
		{[]string{"route", "add", "-table", "v6", "10.11.0.0/16", "out", "0"}, 2, "the table holds IPv6 routes only"},
		{[]string{"route", "add", "-table", "mian", "10.11.0.0/16", "out", "0"}, 2, `no route table of that name (this graph has: main, v6, own) (did you mean "main"?)`},
		{[]string{"route", "add", "-table", "main", "-element", "rt", "10.11.0.0/16", "out", "0"}, 2, "give one"},
		{[]string{"route", "del", "-element", "rt", "10.8.0.0/16"}, 0, "deleted table main: 10.8.0.0/16"},
	} {
		code, out, errs := ctl(t, sock, c.args...)
		if code != c.code || !strings.Contains(out+errs, c.want) {
			t.Errorf("%v: exit %d, %q %q; want %d and %q", c.args, code, out, errs, c.code, c.want)
		}
	}
	// One table: what rt's route add put in is rte's route.
	code, out, errs := ctl(t, sock, "show", "routes", "-element", "rte", "10.7.1.1")
	if code != 0 || !strings.Contains(out, "10.7.0.0/16 via 10.2.0.7 out wan  [live]") {
		t.Errorf("show routes -element rte: %d %q %q", code, out, errs)
	}
	code, out, errs = ctl(t, sock, "show", "routes")
	if code != 0 || !strings.Contains(out, "10.7.5.1/32 blackhole  [live]\n") || !strings.Contains(out, "table main: 4 routes (source config)") {
		t.Errorf("show routes: %d %q %q", code, out, errs)
	}
}

// tableReloadGraph: rt and rte read table main, which holds routes.
func tableReloadGraph(routes string) string {
	return "[devices.a]\ndriver = \"gen\"\nrate = 1000\n\n[tables.main]\nroutes = [" + routes + "]\n\n" +
		"[elements.rt]\ntype = \"IPLookup\"\n\n[elements.rte]\ntype = \"IPLookup\"\n\n[graph]\nlinks = [\"FromDevice(a) -> c :: Classifier(ip, -)\", " +
		"\"c[0] -> rt\", \"c[1] -> rte\", \"rt[0] -> Discard\", \"rt[1] -> Discard\", \"rte[0] -> Discard\", \"rte[1] -> Discard\"]\n"
}

// TestReloadTable: a reload that changes table main's routes builds it
// anew with the routes added live on top, reported once (not per
// lookup), and both lookups read the new table; an unchanged reload keeps
// it as it is.
func TestReloadTable(t *testing.T) {
	dir := t.TempDir()
	v1, v2 := filepath.Join(dir, "v1.toml"), filepath.Join(dir, "v2.toml")
	src1 := tableReloadGraph(`"10.1.0.0/24 out 0", "0.0.0.0/0 via 10.2.0.2 out 1"`)
	src2 := tableReloadGraph(`"10.1.0.0/24 out 0", "0.0.0.0/0 via 10.2.0.3 out 1"`)
	os.WriteFile(v1, []byte(src1), 0o644)
	os.WriteFile(v2, []byte(src2), 0o644)
	sock := ctlRouterFile(t, v1, []byte(src1))
	if code, out, errs := ctl(t, sock, "route", "add", "10.7.0.0/16", "via", "10.2.0.7", "out", "1"); code != 0 || !strings.Contains(out, "added table main") {
		t.Fatalf("route add: exit %d: %s %s", code, out, errs)
	}
	code, out, errs := ctl(t, sock, "reload", "-config", v2)
	kept := "rt (IPLookup): live route kept: 10.7.0.0/16 via 10.2.0.7 out 1 (applied over the file's routes)"
	if code != 0 || !strings.Contains(out, kept) || strings.Contains(out, "rte (IPLookup): live route") {
		t.Fatalf("reload: exit %d: %s %s", code, out, errs)
	}
	for _, el := range []string{"rt", "rte"} {
		_, routes, _ := ctl(t, sock, "show", "routes", "-element", el)
		want := "0.0.0.0/0 via 10.2.0.3 out 1\n10.1.0.0/24 connected out 0\n10.7.0.0/16 via 10.2.0.7 out 1  [live]\ntable main: 3 routes (source config)\n"
		if routes != want {
			t.Errorf("%s's table after the reload:\n%s\nwant\n%s", el, routes, want)
		}
	}
	code, out, _ = ctl(t, sock, "reload", "-config", v2)
	if code != 0 || !strings.Contains(out, "rt (IPLookup): live route kept: 10.7.0.0/16 via 10.2.0.7 out 1 (the table is kept as it is)") {
		t.Errorf("an unchanged reload: exit %d:\n%s", code, out)
	}
}
