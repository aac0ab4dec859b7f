package fpmirror

import (
	"errors"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/junction-dataplane/junction/drivers"
	"github.com/junction-dataplane/junction/elements"
	"github.com/junction-dataplane/junction/elements/ip/route"
	"github.com/junction-dataplane/junction/elements/offloadkey"
)

// fakeFast records what a fast path was told.
type fakeFast struct {
	drivers.FastPathTable // neighbours and flows: not IPLookup's to call (nil: they panic)
	mu                    sync.Mutex
	routes                map[netip.Prefix]offloadRoute
	fail                  map[netip.Prefix]bool // SetRoute refuses these
	calls                 int
}

func (f *fakeFast) SetRoute(p netip.Prefix, gw netip.Addr, out drivers.Device) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	if f.fail[p] {
		return errors.New("refused")
	}
	f.routes[p] = offloadRoute{gw: gw, out: out}
	return nil
}

func (f *fakeFast) DeleteRoute(p netip.Prefix) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	delete(f.routes, p)
	return nil
}

// batchFast is a fakeFast that also takes routes in batches
// (drivers.FastPathRouteBatcher), each route as SetRoute or DeleteRoute
// would take it.
type batchFast struct {
	*fakeFast
	batches int
}

func (b *batchFast) SetRoutes(rs []drivers.FastRoute, errs []error) {
	b.mu.Lock()
	b.batches++
	b.mu.Unlock()
	for i, r := range rs {
		errs[i] = b.SetRoute(r.Prefix, r.Gw, r.Out)
	}
}

func (b *batchFast) DeleteRoutes(ps []netip.Prefix, errs []error) {
	b.mu.Lock()
	b.batches++
	b.mu.Unlock()
	for i, p := range ps {
		errs[i] = b.DeleteRoute(p)
	}
}

func (f *fakeFast) snapshot() map[netip.Prefix]offloadRoute {
	f.mu.Lock()
	defer f.mu.Unlock()
	m := make(map[netip.Prefix]offloadRoute, len(f.routes))
	for k, v := range f.routes {
		m[k] = v
	}
	return m
}

// fastDev is a device with (or, with ft nil, without) a fast path.
type fastDev struct {
	drivers.Device
	name string
	ft   drivers.FastPathTable
}

func (d *fastDev) FastPathTable() drivers.FastPathTable { return d.ft }

type plainDev struct{ drivers.Device }

type devMap map[string]drivers.Device

func (m devMap) Device(n string) (drivers.Device, int, bool) { d, ok := m[n]; return d, 0, ok }
func (m devMap) Queues(string, int) []int                    { return nil }

// resolveOffload resolves an offload key as IPLookup does.
func resolveOffload(t *testing.T, names []string, devs elements.DeviceSet) ([]drivers.Device, drivers.FastPathTable, error) {
	t.Helper()
	ports, _, fp, err := offloadkey.Resolve(devs, "offload", names)
	return ports, fp, err
}

// mustRoutes parses route strings or fails the test.
func mustRoutes(t *testing.T, ss ...string) []route.Route {
	t.Helper()
	var rs []route.Route
	for _, s := range ss {
		r, err := route.ParseRoute(s)
		if err != nil {
			t.Fatal(err)
		}
		rs = append(rs, r)
	}
	return rs
}

// startOnLAN starts a mirror of a table of routes into ft, the fast path
// of one device "lan" (port 0), with stats st; closed when the test ends.
func startOnLAN(t *testing.T, ft drivers.FastPathTable, st *elements.Stats, routes ...string) (*route.Table, *fastDev) {
	t.Helper()
	lan := &fastDev{name: "lan", ft: ft}
	ports, fp, err := resolveOffload(t, []string{"lan"}, devMap{"lan": lan})
	if err != nil {
		t.Fatal(err)
	}
	tab, err := route.NewTable(mustRoutes(t, routes...))
	if err != nil {
		t.Fatal(err)
	}
	s, err := Start(tab, fp, ports, st)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return tab, lan
}

// waitFor polls cond for up to 2 s (the mirror runs every 10 ms).
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for end := time.Now().Add(2 * time.Second); time.Now().Before(end); time.Sleep(5 * time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatalf("not within 2 s: %s", what)
}

// TestOffloadMirrorsRoutes: the table's routes reach the fast path at
// start and as they change, with a table that takes one route a call and
// with one that takes them in batches.
func TestOffloadMirrorsRoutes(t *testing.T) {
	t.Run("one by one", func(t *testing.T) {
		ff := &fakeFast{routes: map[netip.Prefix]offloadRoute{}, fail: map[netip.Prefix]bool{}}
		offloadMirrorsRoutes(t, ff, ff)
	})
	t.Run("batches", func(t *testing.T) {
		ff := &fakeFast{routes: map[netip.Prefix]offloadRoute{}, fail: map[netip.Prefix]bool{}}
		bf := &batchFast{fakeFast: ff}
		offloadMirrorsRoutes(t, ff, bf)
		if bf.batches == 0 {
			t.Error("the mirror never gave the batching table a batch")
		}
	})
}

// offloadMirrorsRoutes is TestOffloadMirrorsRoutes with the devices'
// table ft, which records into ff.
func offloadMirrorsRoutes(t *testing.T, ff *fakeFast, ft drivers.FastPathTable) {
	lan, wan := &fastDev{name: "lan", ft: ft}, &fastDev{name: "wan", ft: ft}
	ports, fp, err := resolveOffload(t, []string{"lan", "wan"}, devMap{"lan": lan, "wan": wan})
	if err != nil {
		t.Fatal(err)
	}
	tab, err := route.NewTable(mustRoutes(t,
		"10.1.0.0/24 out 0",
		"10.2.0.0/24 out 1",
		"10.16.0.0/12 via 10.2.0.2 out 1",
		"0.0.0.0/0 via 10.3.0.1 out 2",                      // a port without a device: stays in the graph
		"10.8.0.0/16 via 10.1.0.9 via 10.2.0.9 out 0 out 1", // ECMP: stays in the graph
		"2001:db8::/32 via 2001:db8:1::1 out 1",             // IPv6: mirrored too
	))
	if err != nil {
		t.Fatal(err)
	}
	st := &elements.Stats{}
	s, err := Start(tab, fp, ports, st)
	if err != nil {
		t.Fatal(err)
	}
	pf := netip.MustParsePrefix
	want := map[netip.Prefix]offloadRoute{
		pf("10.1.0.0/24"):   {out: lan},
		pf("10.2.0.0/24"):   {out: wan},
		pf("10.16.0.0/12"):  {gw: netip.MustParseAddr("10.2.0.2"), out: wan},
		pf("0.0.0.0/0"):     {},
		pf("10.8.0.0/16"):   {},
		pf("2001:db8::/32"): {gw: netip.MustParseAddr("2001:db8:1::1"), out: wan},
	}
	check := func(want map[netip.Prefix]offloadRoute) func() bool {
		return func() bool {
			got := ff.snapshot()
			if len(got) != len(want) {
				return false
			}
			for p, w := range want {
				if g, ok := got[p]; !ok || g != w {
					return false
				}
			}
			return true
		}
	}
	if !check(want)() {
		t.Fatalf("after start the fast path holds %v, want %v", ff.snapshot(), want)
	}

	// Live changes reach it; an unchanged table costs no calls.
	if err := tab.Insert(mustRoutes(t, "192.0.2.0/24 via 10.1.0.7 out 0")...); err != nil {
		t.Fatal(err)
	}
	if _, err := tab.Delete(pf("10.16.0.0/12")); err != nil {
		t.Fatal(err)
	}
	want[pf("192.0.2.0/24")] = offloadRoute{gw: netip.MustParseAddr("10.1.0.7"), out: lan}
	delete(want, pf("10.16.0.0/12"))
	waitFor(t, "insert and delete mirrored", check(want))
	if n := st.Counter("offload routes applied").Load(); n != 8 {
		t.Errorf("offload routes applied = %d, want 6 at start + 2 changes", n)
	}
	ff.mu.Lock()
	calls := ff.calls
	ff.mu.Unlock()
	time.Sleep(5 * offloadInterval)
	ff.mu.Lock()
	if ff.calls != calls {
		t.Errorf("%d fast-path calls while the table did not change", ff.calls-calls)
	}
	ff.mu.Unlock()

	// A route the fast path refuses is not left there in its old form,
	// and is retried until it goes in.
	ff.mu.Lock()
	ff.fail[pf("10.2.0.0/24")] = true
	ff.mu.Unlock()
	if err := tab.Insert(mustRoutes(t, "10.2.0.0/24 via 10.1.0.8 out 0")...); err != nil { // replaces
		t.Fatal(err)
	}
	waitFor(t, "refused route withdrawn", func() bool { _, ok := ff.snapshot()[pf("10.2.0.0/24")]; return !ok })
	waitFor(t, "offload errors counted", func() bool { return st.Counter("offload errors").Load() > 0 })
	ff.mu.Lock()
	ff.fail = map[netip.Prefix]bool{}
	ff.mu.Unlock()
	want[pf("10.2.0.0/24")] = offloadRoute{gw: netip.MustParseAddr("10.1.0.8"), out: lan}
	waitFor(t, "refused route retried", check(want))

	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if got := ff.snapshot(); len(got) != 0 {
		t.Errorf("after Close the fast path still holds %v", got)
	}
}

func TestOffloadConfigErrors(t *testing.T) {
	ff := &fakeFast{routes: map[netip.Prefix]offloadRoute{}}
	devs := devMap{"lan": &fastDev{ft: ff}, "off": &fastDev{}, "plain": plainDev{}}
	for _, c := range []struct {
		names []string
		want  string
	}{
		{[]string{"nope"}, `no device "nope"`},
		{[]string{"plain"}, "has no fast path"},
		{[]string{"off"}, "has no fast path"},
		{[]string{"", ""}, "names no device"},
	} {
		_, _, err := resolveOffload(t, c.names, devs)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("offload %q: error %v, want %q", c.names, err, c.want)
		}
	}
}

// TestOffloadFollowsReplace: a rebuild of the table (which restarts the
// writer's internal epoch) still reaches the fast path.
func TestOffloadFollowsReplace(t *testing.T) {
	ff := &fakeFast{routes: map[netip.Prefix]offloadRoute{}, fail: map[netip.Prefix]bool{}}
	tab, _ := startOnLAN(t, ff, &elements.Stats{}, "10.1.0.0/24 out 0")
	if err := tab.Replace(mustRoutes(t, "10.9.0.0/24 out 0")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "Replace mirrored", func() bool {
		got := ff.snapshot()
		_, nw := got[netip.MustParsePrefix("10.9.0.0/24")]
		_, old := got[netip.MustParsePrefix("10.1.0.0/24")]
		return nw && !old && len(got) == 1
	})
}

// TestOffloadTypes: a blackhole (or unreachable, prohibit) route under an
// offloaded prefix is held in the fast path as "never forward here", so
// that its packets reach the graph instead of leaving by the covering
// route; deleting it hands its addresses back to the covering route.
func TestOffloadTypes(t *testing.T) {
	ff := &fakeFast{routes: map[netip.Prefix]offloadRoute{}, fail: map[netip.Prefix]bool{}}
	tab, lan := startOnLAN(t, ff, &elements.Stats{}, "10.16.0.0/12 via 10.2.0.2 out 0", "10.16.5.1 blackhole", "10.16.6.0/24 prohibit")
	got := ff.snapshot()
	for _, p := range []string{"10.16.5.1/32", "10.16.6.0/24"} {
		if r, ok := got[netip.MustParsePrefix(p)]; !ok || r.out != nil {
			t.Errorf("%s in the fast path: %+v %v, want held as never-forward", p, r, ok)
		}
	}
	if r := got[netip.MustParsePrefix("10.16.0.0/12")]; r.out != lan {
		t.Errorf("the covering prefix: %+v", r)
	}
	if err := tab.Insert(route.Route{Prefix: netip.MustParsePrefix("10.16.7.0/24"), Type: route.Unreachable}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the unreachable route held in the fast path", func() bool {
		r, ok := ff.snapshot()[netip.MustParsePrefix("10.16.7.0/24")]
		return ok && r.out == nil
	})
}

// usageFast is a fakeFast that says how much it left to the graph
// (drivers.FastPathRouteUse).
type usageFast struct {
	*fakeFast
	toGraph atomic.Uint64
}

func (u *usageFast) RoutesToGraph() uint64 { return u.toGraph.Load() }

// TestOffloadLeftToGraph: what the fast path says it left to the graph
// reaches the element's "offload left to graph" after the next round
// that changed a route.
func TestOffloadLeftToGraph(t *testing.T) {
	uf := &usageFast{fakeFast: &fakeFast{routes: map[netip.Prefix]offloadRoute{}, fail: map[netip.Prefix]bool{}}}
	uf.toGraph.Store(3)
	st := &elements.Stats{}
	tab, _ := startOnLAN(t, uf, st, "10.1.0.0/24 out 0")
	c := st.Counter("offload left to graph")
	if got := c.Load(); got != 3 {
		t.Errorf("after the first walk: %d left to graph, want 3", got)
	}
	uf.toGraph.Store(5)
	if err := tab.Replace(mustRoutes(t, "10.9.0.0/24 out 0")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the count after a change", func() bool { return c.Load() == 5 })
}
