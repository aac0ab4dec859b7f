package ip

import (
	"net/netip"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/junction-dataplane/junction/elements"
	"github.com/junction-dataplane/junction/elements/elementtest"
	"github.com/junction-dataplane/junction/elements/ip/route"
	"github.com/junction-dataplane/junction/elements/ip/tables"
)

// mainTable validates a [tables.main] config with routes.
func mainTable(t *testing.T, routes ...string) *tables.Config {
	t.Helper()
	tc := &tables.Config{Name: tables.Main, Routes: routes}
	if err := tc.Validate(); err != nil {
		t.Fatal(err)
	}
	return tc
}

// reader is an IPLookup config reading tc.
func reader(tc *tables.Config, miss int) *IPLookupConfig {
	c := &IPLookupConfig{Miss: miss, Unreachable: -1, Prohibit: -1}
	c.UseTable(tc)
	return c
}

// TestSharedTable: two lookups reading one table share one route.Table; a
// route added through either is forwarded by both at once; the last
// close forgets the table.
func TestSharedTable(t *testing.T) {
	tc := mainTable(t, "10.1.0.0/24 out 0", "10.2.0.0/24 out 1")
	state := elements.NewGraphState()
	a := elementtest.New(t, "IPLookup", reader(tc, -1), &elementtest.Options{State: state})
	b := elementtest.New(t, "IPLookup", reader(tc, 2), &elementtest.Options{State: state})
	ea, eb := a.Element.(*IPLookup), b.Element.(*IPLookup)
	if ea.Table() != eb.Table() {
		t.Fatal("two lookups of table main have two tables")
	}
	if got := eb.RouteTableName(); got != "main" {
		t.Errorf("RouteTableName %q", got)
	}
	// b has 3 outputs (miss 2), a 2: a route out 2 would be "no such port"
	// for a, so it is refused.
	if _, err := eb.SetRoute("10.7.0.0/16 out 2", false); err == nil || !strings.Contains(err.Error(), "the IPLookups reading table main have output ports 0..1") {
		t.Errorf("a route to a port one reader lacks: %v", err)
	}
	if _, err := ea.SetRoute("10.7.0.0/16 via 10.2.0.7 out 1", false); err != nil {
		t.Fatal(err)
	}
	r, ok := eb.RouteFor(netip.MustParseAddr("10.7.1.1"))
	if !ok || r.Source != "live" || r.Hops[0].Out != 1 {
		t.Errorf("b sees %+v, %v", r, ok)
	}
	b.Push(0, mkFrame(t, frameOpts{dst: "10.7.1.1"}))
	if len(b.Outs[1].Pkts) != 1 || b.Outs[1].Pkts[0].NextHop != netip.MustParseAddr("10.2.0.7") {
		t.Errorf("b did not forward by the route added through a: %d packets on port 1", len(b.Outs[1].Pkts))
	}
	set := elements.StateValue(state, tableSetKey{}, newTableSet)
	if n := len(set.gens[tableKey{name: "main"}]); n != 1 {
		t.Fatalf("%d generations of main, want 1", n)
	}
	ea.Close()
	if n := len(set.gens[tableKey{name: "main"}]); n != 1 {
		t.Errorf("main forgotten while b reads it")
	}
	eb.Close()
	if _, ok := set.gens[tableKey{name: "main"}]; ok {
		t.Errorf("main kept after its last reader closed")
	}
}

// TestSharedTableReload: a reload whose table config is unchanged (another
// Config of the same contents) keeps the running table with its live
// routes; a changed one builds a new table with them applied on top; the
// old one serves until its readers close.
func TestSharedTableReload(t *testing.T) {
	state := elements.NewGraphState()
	old := elementtest.New(t, "IPLookup", reader(mainTable(t, "10.1.0.0/24 out 0", "10.2.0.0/24 out 1"), -1), &elementtest.Options{State: state})
	eo := old.Element.(*IPLookup)
	if _, err := eo.SetRoute("10.7.0.0/16 out 1", false); err != nil {
		t.Fatal(err)
	}
	same := elementtest.New(t, "IPLookup", reader(mainTable(t, "10.1.0.0/24 out 0", "10.2.0.0/24 out 1"), 1), &elementtest.Options{State: state})
	if same.Element.(*IPLookup).Table() != eo.Table() {
		t.Error("an unchanged table was rebuilt")
	}
	if lines := eo.ReloadPlan(reader(mainTable(t, "10.1.0.0/24 out 0", "10.2.0.0/24 out 1"), -1), true); len(lines) != 1 || !strings.Contains(lines[0], "kept as it is") {
		t.Errorf("plan for an unchanged table: %q", lines)
	}
	next := reader(mainTable(t, "10.1.0.0/24 out 0", "10.3.0.0/24 out 1"), -1)
	if lines := eo.ReloadPlan(next, true); len(lines) != 1 || !strings.Contains(lines[0], "live route kept: 10.7.0.0/16") {
		t.Errorf("plan for a changed table: %q", lines)
	}
	changed := elementtest.New(t, "IPLookup", next, &elementtest.Options{State: state})
	ec := changed.Element.(*IPLookup)
	if ec.Table() == eo.Table() {
		t.Fatal("a changed table was kept")
	}
	if r, ok := ec.RouteExact(netip.MustParsePrefix("10.7.0.0/16")); !ok || r.Source != "live" {
		t.Errorf("live route not carried: %+v %v", r, ok)
	}
	if _, ok := eo.Table().Exact(netip.MustParsePrefix("10.3.0.0/24")); ok {
		t.Error("the old graph's table changed")
	}
}

// TestRouteTypes: blackhole, unreachable and prohibit routes stop what
// they match under a covering unicast route: dropped with their reasons,
// or sent to the unreachable or prohibit port; the covering prefix still
// forwards; the types show in the route list.
func TestRouteTypes(t *testing.T) {
	cfg := &IPLookupConfig{Routes: []string{"10.100.0.0/16 via 10.2.0.2 out 0", "10.100.5.1 blackhole",
		"unreachable 10.100.6.0/24", "10.100.7.0/24 prohibit", "2001:db8:5::/48 out 0", "2001:db8:5:1::/64 blackhole"},
		Miss: -1, Unreachable: 1, Prohibit: -1}
	h := elementtest.New(t, "IPLookup", cfg, nil)
	if len(h.Outs) != 2 {
		t.Fatalf("%d outputs, want 2 (routes on 0, unreachable on 1)", len(h.Outs))
	}
	h.Push(0, mkFrame(t, frameOpts{dst: "10.100.5.1"}), mkFrame(t, frameOpts{dst: "10.100.5.2"}),
		mkFrame(t, frameOpts{dst: "10.100.6.9"}), mkFrame(t, frameOpts{dst: "10.100.7.9"}))
	if n0, n1 := len(h.Outs[0].Pkts), len(h.Outs[1].Pkts); n0 != 1 || n1 != 1 {
		t.Errorf("port 0: %d packets (want 1: the covering /16), port 1: %d (want 1: unreachable)", n0, n1)
	}
	for name, want := range map[string]uint64{"blackhole route": 1, "prohibit route": 1, "unreachable route answered": 1, "unreachable route": 0} {
		if got := h.Counter(name); got != want {
			t.Errorf("%s: %d, want %d", name, got, want)
		}
	}
	e := h.Element.(*IPLookup)
	r, ok := e.RouteFor(netip.MustParseAddr("10.100.5.1"))
	if !ok || r.Type != "blackhole" || len(r.Hops) != 0 {
		t.Errorf("route list: %+v", r)
	}
	if _, err := e.SetRoute("10.100.8.0/24 unreachable", false); err != nil {
		t.Fatal(err)
	}
	if r, _ := e.RouteFor(netip.MustParseAddr("10.100.8.1")); r.Type != "unreachable" || r.Source != "live" {
		t.Errorf("live unreachable route: %+v", r)
	}
	h.CheckNoLeak()
}

// TestRouteTypesAllocs: the types cost the unicast path nothing and the
// stopped path allocates nothing.
func TestRouteTypesAllocs(t *testing.T) {
	cfg := &IPLookupConfig{Routes: []string{"10.100.0.0/16 out 0", "10.100.5.1 blackhole"}, Miss: -1, Unreachable: -1, Prohibit: -1}
	h := elementtest.New(t, "IPLookup", cfg, &elementtest.Options{Sink: true})
	f := mkFrame(t, frameOpts{dst: "10.100.5.1"})
	g := mkFrame(t, frameOpts{dst: "10.100.5.2"})
	if a := h.AllocsPerBatch(100, f, g, f, g); a != 0 {
		t.Errorf("%.1f allocations per batch", a)
	}
}

// TestKernelRouteTypes: the kernel mirror copies blackhole, unreachable
// and prohibit routes as such, and counts routes of the types it does not
// mirror while the kernel holds them.
func TestKernelRouteTypes(t *testing.T) {
	ns, ip := kernelNS(t)
	ip("route", "add", "10.100.5.0/24", "via", "10.9.0.2")
	ip("route", "add", "blackhole", "10.100.5.1/32")
	cfg := &IPLookupConfig{Source: "kernel", Interfaces: []string{"d0", "d1"}, NetNS: ns, Miss: -1, Unreachable: -1, Prohibit: -1}
	h := elementtest.New(t, "IPLookup", cfg, nil)
	e := h.Element.(*IPLookup)
	waitType := func(dst string, want route.Type) {
		t.Helper()
		for t0 := time.Now(); ; {
			r, ok := e.Table().Route(netip.MustParseAddr(dst))
			if ok && r.Type == want {
				return
			}
			if time.Since(t0) > 2*time.Second {
				t.Fatalf("%s: route %+v (%v), want type %v", dst, r, ok, want)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	waitType("10.100.5.1", route.Blackhole) // from the dump
	waitType("10.100.5.2", route.Unicast)
	ip("route", "add", "unreachable", "10.100.6.0/24")
	ip("route", "add", "prohibit", "10.100.7.0/24")
	ip("route", "add", "throw", "10.100.8.0/24")
	waitType("10.100.6.1", route.Unreachable)
	waitType("10.100.7.1", route.Prohibit)
	for t0 := time.Now(); e.Unmirrored()["throw"] != 1; {
		if time.Since(t0) > 2*time.Second {
			t.Fatalf("unmirrored: %v, want throw 1", e.Unmirrored())
		}
		time.Sleep(5 * time.Millisecond)
	}
	h.Push(0, mkFrame(t, frameOpts{dst: "10.100.5.1"}), mkFrame(t, frameOpts{dst: "10.100.5.2"}))
	if len(h.Outs[0].Pkts) != 1 || h.Counter("blackhole route") != 1 {
		t.Errorf("blackholed: %d forwarded, %d counted", len(h.Outs[0].Pkts), h.Counter("blackhole route"))
	}
	// Routes through nexthop objects (ip nexthop, as FRR installs them):
	// the kernel's messages carry their paths too (nexthop_compat_mode,
	// on by default), so they are mirrored, a group as ECMP; with compat
	// mode off they carry none, and are counted as not mirrored.
	if out, err := exec.Command("ip", "-n", ns, "nexthop", "add", "id", "7", "via", "10.9.0.2", "dev", "d0").CombinedOutput(); err != nil {
		t.Logf("no nexthop objects in this kernel (%v: %s): that case untested", err, out)
	} else {
		ip("nexthop", "add", "id", "8", "via", "10.9.1.2", "dev", "d1")
		ip("nexthop", "add", "id", "9", "group", "7/8")
		ip("route", "add", "10.100.9.0/24", "nhid", "7")
		ip("route", "add", "10.100.10.0/24", "nhid", "9")
		waitHops := func(dst string, n int) {
			t.Helper()
			for t0 := time.Now(); ; time.Sleep(5 * time.Millisecond) {
				if r, ok := e.Table().Route(netip.MustParseAddr(dst)); ok && r.Prefix.Bits() == 24 && len(r.Hops()) == n {
					return
				}
				if time.Since(t0) > 2*time.Second {
					r, _ := e.Table().Route(netip.MustParseAddr(dst))
					t.Fatalf("%s: %v, want a /24 with %d paths", dst, r, n)
				}
			}
		}
		waitHops("10.100.9.1", 1)
		waitHops("10.100.10.1", 2)
		if out, err := exec.Command("ip", "netns", "exec", ns, "sysctl", "-qw", "net.ipv4.nexthop_compat_mode=0").CombinedOutput(); err != nil {
			t.Logf("nexthop_compat_mode: %v: %s: that case untested", err, out)
		} else {
			ip("route", "add", "10.100.11.0/24", "nhid", "7")
			for t0 := time.Now(); e.Unmirrored()["nexthop object"] != 1; time.Sleep(5 * time.Millisecond) {
				if time.Since(t0) > 2*time.Second {
					t.Fatalf("unmirrored: %v, want nexthop object 1", e.Unmirrored())
				}
			}
			ip("route", "del", "10.100.11.0/24")
		}
		ip("route", "del", "10.100.9.0/24")
		ip("route", "del", "10.100.10.0/24")
	}
	ip("route", "del", "throw", "10.100.8.0/24")
	ip("route", "del", "blackhole", "10.100.5.1/32")
	waitType("10.100.5.1", route.Unicast)
	for t0 := time.Now(); len(e.Unmirrored()) != 0; {
		if time.Since(t0) > 2*time.Second {
			t.Fatalf("unmirrored after the delete: %v", e.Unmirrored())
		}
		time.Sleep(5 * time.Millisecond)
	}
}
