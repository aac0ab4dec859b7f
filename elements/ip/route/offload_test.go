package route

import (
	"errors"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/junction-dataplane/junction/drivers"
	"github.com/junction-dataplane/junction/elements"
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

func TestOffloadMirrorsRoutes(t *testing.T) {
	ff := &fakeFast{routes: map[netip.Prefix]offloadRoute{}, fail: map[netip.Prefix]bool{}}
	lan, wan := &fastDev{name: "lan", ft: ff}, &fastDev{name: "wan", ft: ff}
	ports, fp, err := resolveOffload(t, []string{"lan", "wan"}, devMap{"lan": lan, "wan": wan})
	if err != nil {
		t.Fatal(err)
	}
	tab, err := NewTable(mustRoutes(t,
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
	s, err := startOffload(tab, fp, ports, st)
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

// TestChangesSince: the journal a mirror follows names every prefix a
// version changed, with its route now; a rebuild or an overflow makes older
// versions unanswerable (the mirror then walks the table), and versions
// never go back, rebuilds included.
func TestChangesSince(t *testing.T) {
	pf := netip.MustParsePrefix
	tab, err := NewTable(mustRoutes(t, "10.0.0.0/8 out 0", "10.1.0.0/16 out 1"))
	if err != nil {
		t.Fatal(err)
	}
	tab.startJournal()
	v0 := tab.Version()
	if err := tab.Insert(mustRoutes(t, "192.0.2.0/24 via 10.1.0.7 out 0")...); err != nil {
		t.Fatal(err)
	}
	if _, err := tab.Delete(pf("10.1.0.0/16")); err != nil {
		t.Fatal(err)
	}
	if err := tab.Insert(mustRoutes(t, "10.0.0.0/8 out 1")...); err != nil {
		t.Fatal(err)
	}
	ch, v, ok := tab.changesSince(v0)
	if !ok || v != tab.Version() || v != v0+3 || len(ch) != 3 {
		t.Fatalf("changesSince(%d) = %v, %d, %v; want 3 prefixes up to %d", v0, ch, v, ok, v0+3)
	}
	if r := ch[pf("10.1.0.0/16")]; r != nil {
		t.Errorf("deleted prefix reported as %v", r)
	}
	if r := ch[pf("10.0.0.0/8")]; r == nil || r.Out != 1 {
		t.Errorf("10.0.0.0/8 reported as %v, want its latest route (out 1)", r)
	}
	if ch2, _, ok := tab.changesSince(v0 + 2); !ok || len(ch2) != 1 {
		t.Errorf("changesSince(v0+2) = %v, %v: want only the last change", ch2, ok)
	}
	if ch3, _, ok := tab.changesSince(v); !ok || len(ch3) != 0 {
		t.Errorf("changesSince(now) = %v, %v", ch3, ok)
	}
	// A rebuild: older versions are unanswerable; the version still grows.
	if err := tab.Replace(mustRoutes(t, "10.0.0.0/8 out 0")); err != nil {
		t.Fatal(err)
	}
	if tab.Version() <= v {
		t.Fatalf("version went from %d to %d across Replace", v, tab.Version())
	}
	if _, _, ok := tab.changesSince(v); ok {
		t.Error("changesSince answered across a Replace")
	}
	// An overflow: the oldest versions are dropped.
	vr := tab.Version()
	var rs []Route
	for i := 0; i < maxJournal/2+10; i++ {
		rs = append(rs, Route{Prefix: netip.PrefixFrom(netip.AddrFrom4([4]byte{100, byte(i >> 8), byte(i), 0}), 24), Out: 0})
	}
	// Five versions of ~16k changes: more records than maxJournal.
	for _, half := range [][]Route{rs[:len(rs)/2], rs[len(rs)/2:], rs[:len(rs)/2], rs[len(rs)/2:], rs[:len(rs)/2]} {
		if err := tab.Insert(half...); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, ok := tab.changesSince(vr); ok {
		t.Error("changesSince answered for versions the journal dropped")
	}
	if ch, _, ok := tab.changesSince(tab.Version() - 1); !ok || len(ch) != len(rs)/2 {
		t.Errorf("the last version: %d prefixes, %v; want %d", len(ch), ok, len(rs)/2)
	}
}

// TestOffloadFollowsReplace: a rebuild of the table (which restarts the
// writer's internal epoch) still reaches the fast path.
func TestOffloadFollowsReplace(t *testing.T) {
	ff := &fakeFast{routes: map[netip.Prefix]offloadRoute{}, fail: map[netip.Prefix]bool{}}
	lan := &fastDev{name: "lan", ft: ff}
	ports, fp, err := resolveOffload(t, []string{"lan"}, devMap{"lan": lan})
	if err != nil {
		t.Fatal(err)
	}
	tab, err := NewTable(mustRoutes(t, "10.1.0.0/24 out 0"))
	if err != nil {
		t.Fatal(err)
	}
	s, err := startOffload(tab, fp, ports, &elements.Stats{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
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
