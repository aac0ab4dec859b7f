package ndp_test

import (
	"testing"
	"time"

	"github.com/junction-dataplane/junction/elements"
	"github.com/junction-dataplane/junction/elements/ndp"
)

// TestNeighbors lists the cache as show neighbors prints it: a static
// entry permanent, a resolved one reachable with its MAC and age, then
// stale, delay and probe as it ages, an unanswered one incomplete with no
// MAC; every row names the device.
func TestNeighbors(t *testing.T) {
	h := newQuerier(t, querierCfg("2001:db8:2::7 02:00:00:00:02:07"))
	clk := useClock(h)
	var q elements.NeighborLister = h.Element.(*ndp.Querier)
	na := ndFrame{typ: 136, src: peerIP.String(), dst: ourIP.String(), target: peerIP.String(), flags: 0x60, lla: peerMAC}.bytes(t)
	byAddr := func() map[string]elements.Neighbor {
		m := map[string]elements.Neighbor{}
		for _, n := range q.Neighbors() {
			if n.Device != "wan" {
				t.Errorf("%v: device %q, want wan", n.Addr, n.Device)
			}
			m[n.Addr.String()] = n
		}
		return m
	}

	h.PushVia(0, peerIP.String(), ip6Frame(t, "2001:db8:16::5"))
	h.PushVia(0, "2001:db8:2::9", ip6Frame(t, "2001:db8:16::6"))
	h.Push(1, na)
	clk.add(2 * time.Second)
	m := byAddr()
	if len(m) != 3 {
		t.Fatalf("%d neighbours, want 3: %+v", len(m), m)
	}
	if s := m["2001:db8:2::7"]; s.State != "permanent" || s.MAC != "02:00:00:00:02:07" {
		t.Errorf("static: %+v", s)
	}
	if p := m[peerIP.String()]; p.State != "reachable" || p.MAC != peerMAC.String() || p.Age != 2*time.Second {
		t.Errorf("resolved: %+v", p)
	}
	if u := m["2001:db8:2::9"]; u.State != "incomplete" || u.MAC != "" {
		t.Errorf("unanswered: %+v", u)
	}

	clk.add(30 * time.Second)
	if p := byAddr()[peerIP.String()]; p.State != "reachable" && p.State != "stale" {
		t.Errorf("after the reachable time: %+v", p)
	}
	h.PushVia(0, peerIP.String(), ip6Frame(t, "2001:db8:16::5"))
	if p := byAddr()[peerIP.String()]; p.State != "delay" || p.MAC != peerMAC.String() {
		t.Errorf("a packet to a stale entry: %+v, want delay", p)
	}
	clk.add(5 * time.Second)
	h.PushVia(0, peerIP.String(), ip6Frame(t, "2001:db8:16::5"))
	if p := byAddr()[peerIP.String()]; p.State != "probe" || p.MAC != peerMAC.String() {
		t.Errorf("after the delay: %+v, want probe", p)
	}
}
