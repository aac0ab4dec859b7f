package afxdp

import (
	"errors"
	"github.com/junction-dataplane/junction/drivers/kfeature"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/junction-dataplane/junction/drivers/afxdp/fastpath"
	"github.com/junction-dataplane/junction/internal/netns"
)

// testFastTable is a watching fastTable over new tables of four entries
// each, and a buffer for the logs of its outputs (logBuffer.devLog).
func testFastTable(t *testing.T) (*fastTable, *logBuffer) {
	t.Helper()
	kfeature.Require(t, fastpath.Features...)
	tables, err := fastpath.NewTables(4, 4, 4)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tables.Close() })
	return &fastTable{t: tables, outs: map[int]*egressOut{}, watching: true}, new(logBuffer)
}

// TestEgressStates drives one output's state machine (fastTable.step)
// with a clock of its own: a refused frame (the kernel watcher's mark,
// set here by hand) turns it off, logged once and counted; it is probed
// again after 1 s, then after 2 s when refused again, and confirmed
// after 1 s on; GRO turned off at the veth's peer turns it off without
// any refused frame, and on again when GRO is back.
func TestEgressStates(t *testing.T) {
	netns.RequireRoot(t)
	netns.RequireTool(t, "ethtool")
	env := netns.New(t)
	ns := env.NS("fpst")
	env.Veth(ns, "out0", ns, "out1", 1)
	ns.MustRun("ethtool", "-K", "out1", "gro", "on")

	f, logs := testFastTable(t)
	tables := f.t

	var o *egressOut
	if err := ns.Do(func() error {
		ifi, err := net.InterfaceByName("out0")
		if err != nil {
			return err
		}
		o, err = f.addOut(ifi.Index, logs.devLog("wan", "out0"), fastpath.ViaXDP)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	defer f.removeOut(o)
	if o.probe == nil {
		t.Skip("the kernel does not report XDP features")
	}

	t0 := time.Now()
	at := func(d time.Duration) { f.mu.Lock(); f.step(o, t0.Add(d)); f.mu.Unlock() }
	want := func(when string, off bool, disabled uint64) {
		t.Helper()
		if o.isOff.Load() != off || o.disabled.Load() != disabled {
			t.Errorf("%s: off %v, disabled %d; want %v, %d", when, o.isOff.Load(), o.disabled.Load(), off, disabled)
		}
		s, err := tables.Egress(o.ifindex)
		if err != nil {
			t.Fatal(err)
		}
		if s.Disabled != off {
			t.Errorf("%s: the kernel's flag says disabled %v, the driver off %v", when, s.Disabled, off)
		}
	}
	refuse := func() {
		t.Helper()
		if err := tables.SetEgress(o.ifindex, false); err != nil { // as the watcher does
			t.Fatal(err)
		}
	}
	want("after addOut (GRO on at the peer)", false, 0)

	refuse()
	at(10 * time.Millisecond)
	want("refused", true, 1)
	at(500 * time.Millisecond)
	want("0.5 s later", true, 1)
	at(1010 * time.Millisecond)
	want("1 s later: probing", false, 1)
	refuse()
	at(1020 * time.Millisecond)
	want("refused while probing", true, 2)
	at(2500 * time.Millisecond)
	want("1.5 s later: backing off 2 s", true, 2)
	at(3030 * time.Millisecond)
	want("2 s later: probing", false, 2)
	at(4100 * time.Millisecond)
	want("confirmed", false, 2)
	if n := strings.Count(logs.String(), "refused a frame"); n != 1 {
		t.Errorf("the outage was logged %d times, want once:\n%s", n, logs.String())
	}
	if n := strings.Count(logs.String(), "offloading to this device again"); n != 1 {
		t.Errorf("the end of the outage was logged %d times, want once:\n%s", n, logs.String())
	}

	ns.MustRun("ethtool", "-K", "out1", "gro", "off")
	at(4300 * time.Millisecond)
	want("GRO off at the peer", true, 3)
	if !strings.Contains(logs.String(), "lack ndo_xdp_xmit") {
		t.Errorf("no log line for the missing ndo_xdp_xmit:\n%s", logs.String())
	}
	at(4500 * time.Millisecond)
	want("GRO still off", true, 3)
	ns.MustRun("ethtool", "-K", "out1", "gro", "on")
	at(4700 * time.Millisecond)
	want("GRO on again", false, 3)
	at(5800 * time.Millisecond)
	want("confirmed again", false, 3)
	// A new outage after a confirmed probe backs off 1 s again, not 4.
	refuse()
	at(5810 * time.Millisecond)
	want("refused after the confirmation", true, 4)
	at(6820 * time.Millisecond)
	want("1 s later: probing", false, 4)
	if s, _ := tables.Egress(o.ifindex); s.Errors != 0 {
		t.Errorf("%d refused frames counted; none was sent", s.Errors)
	}
}

// TestTCOutputs: outputs reached through TC. With GRO off at the veth's
// peer (no ndo_xdp_xmit) a TC output stays on, where an XDP one is turned
// off; when a device's TC program could not be attached (tcFailed),
// every output, present and later, is reached by XDP again, and the
// kernel's entry says so.
func TestTCOutputs(t *testing.T) {
	netns.RequireRoot(t)
	netns.RequireTool(t, "ethtool")
	env := netns.New(t)
	ns := env.NS("fptc")
	env.Veth(ns, "out0", ns, "out1", 1)
	env.Veth(ns, "out2", ns, "out3", 1)
	ns.MustRun("ethtool", "-K", "out1", "gro", "off")
	ns.MustRun("ethtool", "-K", "out3", "gro", "off")

	f, logs := testFastTable(t)
	tables := f.t

	add := func(name string, via fastpath.Via) *egressOut {
		t.Helper()
		var o *egressOut
		if err := ns.Do(func() error {
			ifi, err := net.InterfaceByName(name)
			if err != nil {
				return err
			}
			o, err = f.addOut(ifi.Index, logs.devLog("dev", name), via)
			return err
		}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.removeOut(o) })
		return o
	}
	state := func(o *egressOut) fastpath.EgressState {
		t.Helper()
		s, err := tables.Egress(o.ifindex)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	tc := add("out0", redirectVia("auto", "veth"))
	if s := state(tc); tc.isOff.Load() || s.Disabled || s.Via != fastpath.ViaTCPeer {
		t.Errorf("TC output, GRO off at its peer: off %v, kernel %+v; want on, via tc-peer", tc.isOff.Load(), s)
	}
	xdp := add("out2", redirectVia("xdp", "veth"))
	if xdp.probe != nil && !xdp.isOff.Load() {
		t.Errorf("XDP output, GRO off at its peer: on, want off")
	}
	f.tcFailed(logs.devLog("dev", "x"), errors.New("no tcx"), false)
	if s := state(tc); tc.via != fastpath.ViaXDP || s.Via != fastpath.ViaXDP || s.Disabled != tc.isOff.Load() {
		t.Errorf("after tcFailed: driver via %v, kernel %+v, off %v; want xdp", tc.via, s, tc.isOff.Load())
	}
	f.mu.Lock()
	f.step(tc, time.Now().Add(time.Second)) // past the 100 ms feature poll
	f.mu.Unlock()
	if tc.probe != nil && !tc.isOff.Load() {
		t.Errorf("after tcFailed, GRO off at the peer: on, want off as any XDP output")
	}
	later := add("out1", redirectVia("auto", "veth"))
	if later.via != fastpath.ViaXDP || state(later).Via != fastpath.ViaXDP {
		t.Errorf("an output added after tcFailed: via %v, want xdp", later.via)
	}
	if n := strings.Count(logs.String(), "every output is reached by XDP"); n != 1 {
		t.Errorf("tcFailed logged %d times, want once:\n%s", n, logs.String())
	}
	for _, c := range []struct {
		key, kind string
		want      fastpath.Via
	}{
		{"auto", "veth", fastpath.ViaTCPeer}, {"auto", "", fastpath.ViaXDP}, {"tc", "", fastpath.ViaTC},
		{"tc", "veth", fastpath.ViaTCPeer}, {"xdp", "veth", fastpath.ViaXDP}, {"", "veth", fastpath.ViaTCPeer},
	} {
		if v := redirectVia(c.key, c.kind); v != c.want {
			t.Errorf("redirectVia(%q, %q) = %v, want %v", c.key, c.kind, v, c.want)
		}
	}
}
