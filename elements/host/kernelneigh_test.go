package host

import (
	"net/netip"
	"reflect"
	"testing"
	"time"

	"github.com/junction-dataplane/junction/drivers"
	"github.com/junction-dataplane/junction/elements"
	"github.com/junction-dataplane/junction/elements/elementtest"
	"github.com/junction-dataplane/junction/internal/netns"
	"github.com/junction-dataplane/junction/packet"

	_ "github.com/junction-dataplane/junction/elements/arp"
	_ "github.com/junction-dataplane/junction/elements/ndp"
)

// TestKernelNeighbors: the kernel's permanent entries on an interface
// (as an operator's `ip neigh add` makes them) come out as frames that
// ARPQuerier and NDPQuerier learn the neighbours from; entries on other
// interfaces and of the other family do not.
func TestKernelNeighbors(t *testing.T) {
	netns.RequireRoot(t)
	env := netns.New(t)
	ns := env.NS("kn")
	env.Veth(ns, "k0", ns, "k1", 1)
	ns.MustRun("ip", "neigh", "add", "10.9.0.7", "lladdr", "02:00:00:00:09:07", "dev", "k0", "nud", "permanent")
	ns.MustRun("ip", "neigh", "add", "10.9.0.8", "lladdr", "02:00:00:00:09:08", "dev", "k1", "nud", "permanent")
	ns.MustRun("ip", "-6", "neigh", "add", "2001:db8:9::7", "lladdr", "02:00:00:00:09:67", "dev", "k0", "nud", "permanent")
	dev := elementtest.Device{DevInfo: drivers.Info{Name: "wan", MAC: packet.MAC{2, 0, 0, 0, 9, 1},
		Addresses: []netip.Prefix{netip.MustParsePrefix("10.9.0.1/24"), netip.MustParsePrefix("2001:db8:9::1/64")}}}
	devs := elementtest.Devices{"wan": dev}

	for _, tc := range []struct {
		family, querier, want string
		mac, later            string // the entry the kernel gets later
	}{
		{"ipv4", "ARPQuerier", "10.9.0.7", "02:00:00:00:09:07", "10.9.0.9"},
		{"ipv6", "NDPQuerier", "2001:db8:9::7", "02:00:00:00:09:67", "2001:db8:9::9"},
	} {
		t.Run(tc.family, func(t *testing.T) {
			var h *elementtest.Harness
			if err := ns.Do(func() error {
				h = elementtest.New(t, "KernelNeighbors", &KernelNeighborsConfig{Interface: "k0", Device: "wan",
					Family: tc.family, Refresh: 10 * time.Second}, &elementtest.Options{Devices: devs})
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			k := h.Element.(*KernelNeighbors)
			now := int64(time.Hour)
			for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline) && len(h.Outs[0].Pkts) == 0; time.Sleep(10 * time.Millisecond) {
				k.Tick(now)
				now += int64(time.Millisecond)
			}
			frames := h.Outs[0].Pkts
			if len(frames) != 1 {
				t.Fatalf("%d frames from the kernel's table, want 1 (the %s entry on k0)", len(frames), tc.family)
			}
			// The querier learns the neighbour from it.
			qt, _ := elements.Lookup(tc.querier)
			qc := qt.NewConfig()
			setDevice(qc, "wan")
			q := elementtest.New(t, tc.querier, qc, &elementtest.Options{Devices: devs})
			p := q.Packet(frames[0].Data)
			q.PushBatch(1, p)
			if q.Counter("learned") != 1 {
				t.Fatalf("%s learned %d from the frame; counters %v", tc.querier, q.Counter("learned"), q.Stats.Counters())
			}
			lister, ok := q.Element.(elements.NeighborLister)
			if !ok {
				t.Fatalf("%s lists no neighbours", tc.querier)
			}
			found := false
			for _, n := range lister.Neighbors() {
				found = found || n.Addr.String() == tc.want && n.MAC == tc.mac
			}
			if !found {
				t.Errorf("%s has no %s at %s: %+v", tc.querier, tc.want, tc.mac, lister.Neighbors())
			}
			// A new entry arrives as the kernel announces it.
			h.Reset()
			ns.MustRun("ip", "neigh", "replace", tc.later, "lladdr", "02:00:00:00:09:09", "dev", "k0", "nud", "reachable")
			for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline) && len(h.Outs[0].Pkts) == 0; time.Sleep(10 * time.Millisecond) {
				k.Tick(now)
			}
			if len(h.Outs[0].Pkts) != 1 {
				t.Errorf("%d frames after a new reachable entry, want 1", len(h.Outs[0].Pkts))
			}
		})
	}
}

// setDevice sets a querier config's device key.
func setDevice(cfg any, dev string) {
	reflect.ValueOf(cfg).Elem().FieldByName("Device").SetString(dev)
}

func TestKernelNeighborsValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		c    KernelNeighborsConfig
		key  string
	}{
		{"no interface", KernelNeighborsConfig{Device: "wan", Family: "ipv4", Refresh: time.Second}, "interface"},
		{"no device", KernelNeighborsConfig{Interface: "wan0h", Family: "ipv4", Refresh: time.Second}, "device"},
		{"family", KernelNeighborsConfig{Interface: "wan0h", Device: "wan", Family: "inet", Refresh: time.Second}, "family"},
		{"refresh", KernelNeighborsConfig{Interface: "wan0h", Device: "wan", Family: "ipv6"}, "refresh"},
		{"ok", KernelNeighborsConfig{Interface: "wan0h", Device: "wan", Family: "ipv6", Refresh: time.Minute}, ""},
	} {
		wantKeyError(t, tc.name, tc.c.Validate(), tc.key)
	}
}
