package main

import (
	"strings"
	"testing"
	"time"
)

// ctlRouterGraph runs graph text (gen devices: no root needed) on one
// worker with its control socket in a temporary directory.
func ctlRouterGraph(t *testing.T, text string) string {
	t.Helper()
	return ctlRouterFile(t, "test.toml", []byte(text))
}

// dualStackGraph tracks IPv4 and IPv6 flows from two gen devices and
// resolves next hops with an ARPQuerier and an NDPQuerier (one static
// entry each, one dynamic IPv6 next hop that nothing answers).
const dualStackGraph = `
[devices.wan6]
driver    = "gen"
src       = "2001:2::/120"
dst       = "2001:db8:1::10"
flows     = 4
proto     = "udp"
addresses = ["2001:db8:2::1/64"]
mac       = "02:00:00:00:02:01"

[devices.wan4]
driver    = "gen"
src       = "10.9.0.0/30"
dst       = "10.1.0.10"
flows     = 4
addresses = ["10.9.0.1/24"]
mac       = "02:00:00:00:03:01"

[devices.lan]
driver    = "gen"
addresses = ["2001:db8:1::1/64", "10.1.0.1/24"]
mac       = "02:00:00:00:01:01"

[elements.ct]
type = "Conntrack"

[elements.rt]
type   = "IPLookup"
routes = ["2001:db8:1::10/128 out 0", "2001:db8:1::/64 via 2001:db8:1::99 out 0", "10.1.0.0/24 out 1"]

[elements.nq]
type      = "NDPQuerier"
device    = "lan"
neighbors = ["2001:db8:1::10 02:00:00:00:01:10"]

[elements.aq]
type      = "ARPQuerier"
device    = "lan"
neighbors = ["10.1.0.10 02:00:00:00:01:11"]

[graph]
links = [
  "FromDevice(wan6) -> ct",
  "FromDevice(wan4) -> ct",
  "ct -> rt",
  "rt[0] -> nq -> ToDevice(lan)",
  "rt[1] -> aq -> ToDevice(lan)",
]
`

// TestShowFlowsIPv6 lists IPv6 flows beside IPv4 ones, filters them with
// the Classifier's IPv6 syntax, and prints them in both formats.
func TestShowFlowsIPv6(t *testing.T) {
	path := ctlRouterGraph(t, dualStackGraph)
	var all flowsResult
	deadline := time.Now().Add(5 * time.Second)
	for {
		ctlJSON(t, path, &all, "show", "flows", "-n", "0")
		if all.Total >= 8 || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	v6 := 0
	for _, f := range all.Flows {
		if !f.Orig.Src.Is4() {
			v6++
			if f.Proto != "udp" || f.Orig.Dst.String() != "2001:db8:1::10" || f.Reply.Src.String() != "2001:db8:1::10" || f.Packets[0] == 0 {
				t.Errorf("IPv6 flow %+v", f)
			}
		}
	}
	if all.Total != 8 || v6 != 4 {
		t.Fatalf("%d flows (%d IPv6), want 8 (4 IPv6): %+v", all.Total, v6, all.Flows)
	}
	for filter, want := range map[string]int{
		"ip6":                        4,
		"ip":                         4,
		"ip6 and udp":                4,
		"src net 2001:2::/120":       4,
		"dst host 2001:db8:1::10":    4,
		"dst host 2001:db8:1::11":    0,
		"ip6 and src host 2001:2::1": 1,
		"ip6 and tcp":                0,
		"dst host 10.1.0.10":         4,
		"dst host 10.1.0.10 or ip6":  8,
	} {
		var r flowsResult
		ctlJSON(t, path, &r, "show", "flows", "-count", filter)
		if r.Matched != want || !r.Count || r.Total != 8 {
			t.Errorf("show flows -count %q: %d of %d, want %d of 8", filter, r.Matched, r.Total, want)
		}
	}
	code, out, errs := ctl(t, path, "show", "flows", "ip6")
	if code != 0 || !strings.Contains(out, "[2001:2::1]:") || !strings.Contains(out, "> [2001:db8:1::10]:") || !strings.Contains(out, "4 of 8 flows match") {
		t.Errorf("table: exit %d, %q %q", code, out, errs)
	}
	if code, _, errs := ctl(t, path, "show", "flows", "ip6 and src host 2001:db8::zz"); code != 2 || strings.Count(strings.TrimSpace(errs), "\n") != 0 || !strings.Contains(errs, "col") {
		t.Errorf("malformed IPv6 filter: exit %d, %q", code, errs)
	}
}

// TestShowNeighborsNDP lists the NDPQuerier's cache beside the
// ARPQuerier's, and chooses one with -element.
func TestShowNeighborsNDP(t *testing.T) {
	path := ctlRouterGraph(t, dualStackGraph)
	var rows []neighborRow
	deadline := time.Now().Add(5 * time.Second)
	for {
		ctlJSON(t, path, &rows, "show", "neighbors")
		if len(rows) >= 2 || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	got := map[string]neighborRow{}
	for _, r := range rows {
		got[r.Addr.String()] = r
	}
	if n := got["2001:db8:1::10"]; n.Element != "nq" || n.State != "permanent" || n.MAC != "02:00:00:00:01:10" || n.Device != "lan" {
		t.Errorf("static IPv6 neighbour: %+v", n)
	}
	if n := got["10.1.0.10"]; n.Element != "aq" || n.State != "permanent" {
		t.Errorf("static IPv4 neighbour: %+v", n)
	}
	if len(rows) != 2 {
		t.Errorf("%d neighbours, want 2: %+v", len(rows), rows)
	}
	ctlJSON(t, path, &rows, "show", "neighbors", "-element", "nq")
	if len(rows) != 1 || rows[0].Element != "nq" {
		t.Errorf("-element nq: %+v", rows)
	}
	code, out, _ := ctl(t, path, "show", "neighbors")
	if code != 0 || !strings.Contains(out, "2001:db8:1::10") || !strings.Contains(out, "permanent") || !strings.Contains(out, "nq") {
		t.Errorf("table: exit %d, %q", code, out)
	}
	if code, _, errs := ctl(t, path, "show", "neighbors", "-element", "rt"); code != 2 || !strings.Contains(errs, "nq, aq") || strings.Count(strings.TrimSpace(errs), "\n") != 0 {
		t.Errorf("-element rt: exit %d, %q", code, errs)
	}
}
