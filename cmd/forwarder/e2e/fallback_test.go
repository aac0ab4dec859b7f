package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/junction-dataplane/junction/internal/netns"
	"github.com/junction-dataplane/junction/pipeline"
)

// The contract configs ship with the in-kernel fast path on. Into a veth
// the driver forwards through TC by default (fastpath_redirect = "auto"),
// which any veth takes (TestFastPathPlainHosts). With fastpath_redirect
// = "xdp" it redirects with XDP as it does to a NIC, and on veths as `ip
// link add` leaves them (GRO off) the kernel refuses such frames, so the
// driver must not offload to them: these tests check, on the contract
// configs with fastpath_redirect = "xdp", that such hosts work through
// the graph, that the driver says so once per device and in its
// counters, and that the fast path engages once the hosts turn GRO on.

// offloadLog is the driver's log line when it stops offloading to a
// device, and offloadBackLog when it resumes.
const (
	offloadOffLog  = "fast path: not offloading to this device"
	offloadBackLog = "fast path: offloading to this device again"
)

// xdpRedirectConfig is the config at path with fastpath_redirect = "xdp"
// on every fast-path device, in a temporary file.
func xdpRedirectConfig(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	cfg := strings.ReplaceAll(string(data), "fastpath  = true\n", "fastpath  = true\nfastpath_redirect = \"xdp\"\n")
	if strings.Count(cfg, "fastpath_redirect = \"xdp\"") != 2 {
		t.Fatalf("%s: not two devices with fastpath  = true", path)
	}
	out := filepath.Join(t.TempDir(), "xdp-"+filepath.Base(path))
	if err := os.WriteFile(out, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	return out
}

// fallbackIperf runs iperf3 TCP for 3 s from cli to the server address
// srvAddr in srv (extra: more client arguments, e.g. -P 8) and returns the
// received rate in bit/s; a run that could not start is retried.
func fallbackIperf(t *testing.T, cli, srv *netns.NS, srvAddr string, extra ...string) float64 {
	t.Helper()
	// A connection whose packets are lost stalls iperf3 forever:
	// timeout(1) ends it, and the run fails.
	rep, out := iperfTo(t, cli, srv, srvAddr, true, append([]string{"timeout", "-s", "INT", "-k", "2", "15",
		"iperf3", "-c", srvAddr, "-t", "3", "-J", "--connect-timeout", "3000"}, extra...)...)
	bps := rep.End.SumReceived.BitsPerSecond
	if bps <= 0 {
		t.Errorf("iperf3 to %s: no throughput (error %q)\n%.2000s", srvAddr, rep.Error, out)
	}
	return bps
}

// wantOffloadOff checks that the driver does not offload to either
// device, counted once and with nothing lost.
func wantOffloadOff(t *testing.T, s *pipeline.Snapshot) {
	t.Helper()
	for _, dev := range []string{"lan", "wan"} {
		off := deviceCounter(s, dev, "fastpath_egress_off")
		dis := deviceCounter(s, dev, "fastpath_egress_disabled")
		lost := deviceCounter(s, dev, "fastpath_redirect_errors")
		fwd := deviceCounter(s, dev, "fastpath_forwarded")
		if off != 1 || dis != 1 || lost != 0 || fwd != 0 {
			t.Errorf("%s with GRO off at its peer: fastpath_egress_off %d, fastpath_egress_disabled %d, fastpath_redirect_errors %d, fastpath_forwarded %d; want 1, 1, 0, 0",
				dev, off, dis, lost, fwd)
		}
	}
}

// wantLoggedOnce checks that the forwarder's output has the line once
// per device (a driver's message names the interface: "lan: afpacket
// (lan0): fast path: ...").
func wantLoggedOnce(t *testing.T, out, line string) {
	t.Helper()
	for _, dev := range []string{"(lan0)", "(wan0)"} {
		if n := strings.Count(out, dev+": "+line); n != 1 {
			t.Errorf("%q logged %d times for %s, want once:\n%s", line, n, dev, out)
		}
	}
}

// TestFallbackRouter: configs/router-veth.toml (fast path on, XDP redirects)
// between hosts with GRO off: ping, curl and iperf3 work through the
// graph, the driver logs once per device that it does not offload to it
// and counts it; with GRO turned on at both hosts, the fast path engages
// (fastpath_forwarded grows) and iperf3 still works.
func TestFallbackRouter(t *testing.T) {
	netns.RequireTool(t, "curl")
	netns.RequireTool(t, "iperf3")
	netns.RequireTool(t, "timeout")
	tp := newTopo(t, 1)
	p := tp.start(t, xdpRedirectConfig(t, fastPathConfig(t, tp.config)))
	stopped := false
	defer func() {
		if !stopped {
			out := tp.stop(t, p)
			if t.Failed() {
				t.Logf("forwarder output:\n%s", out)
			}
		}
	}()
	const body = "hello through the fallback\n"
	httpServer(t, tp.srv, body)

	pingOK(t, tp.cli, "10.2.0.2")
	pingOK(t, tp.srv, "10.1.0.2")
	curlOK(t, tp, body)
	bps := fallbackIperf(t, tp.cli, tp.srv, "10.2.0.2")
	t.Logf("GRO off: iperf3 %.0f Mbit/s through the graph", bps/1e6)
	wantOffloadOff(t, tp.snapshot(t))
	wantLoggedOnce(t, p.Output(), offloadOffLog)

	groOnResumes(t, tp)
	before := tp.snapshot(t)
	bps = fallbackIperf(t, tp.cli, tp.srv, "10.2.0.2")
	after := tp.snapshot(t)
	fwd := deviceCounter(after, "lan", "fastpath_forwarded") - deviceCounter(before, "lan", "fastpath_forwarded")
	t.Logf("GRO on: iperf3 %.0f Mbit/s, lan's fast path forwarded %d frames", bps/1e6, fwd)
	if fwd < 1000 {
		t.Errorf("GRO on: the fast path forwarded %d frames of an iperf3 run", fwd)
	}
	for _, dev := range []string{"lan", "wan"} {
		if n := deviceCounter(after, dev, "fastpath_redirect_errors"); n != 0 {
			t.Errorf("%s: %d redirected frames refused", dev, n)
		}
	}
	curlOK(t, tp, body)

	stopped = true
	out := tp.stop(t, p)
	wantLoggedOnce(t, out, offloadOffLog)
	wantLoggedOnce(t, out, offloadBackLog)
	if t.Failed() {
		t.Logf("forwarder output:\n%s", out)
	}
	tp.noXDP(t)
}

// TestFallbackNAT: configs/nat-gateway.toml (FastTrack offloaded, XDP
// redirects) between hosts with GRO off: DNAT'd curl and SNAT'd iperf3
// work, FastTrack handling the flows in the graph, and the driver does
// not offload to either device.
func TestFallbackNAT(t *testing.T) {
	netns.RequireTool(t, "curl")
	netns.RequireTool(t, "iperf3")
	netns.RequireTool(t, "timeout")
	tp := newNATTopo(t)
	tp.config = xdpRedirectConfig(t, natFastPathConfig(t, tp.config))
	p := tp.start(t)
	fw := &topo{fwd: tp.fwd}
	defer func() {
		out := fw.stop(t, p)
		if t.Failed() {
			t.Logf("forwarder output:\n%s", out)
		}
		fw.noXDP(t)
	}()
	pingOK(t, tp.in, natOutside)
	natDNATCurl(t, tp, "inside web server via dnat, fallback\n")
	before := fw.snapshot(t)
	bps := fallbackIperf(t, tp.in, tp.ot, natOutside)
	after := fw.snapshot(t)
	t.Logf("GRO off: iperf3 through SNAT %.0f Mbit/s", bps/1e6)
	wantOffloadOff(t, after)
	if n := counter(after, "FastTrack", "fasttracked packets") - counter(before, "FastTrack", "fasttracked packets"); n < 1000 {
		t.Errorf("FastTrack fast-tracked %d packets of an iperf3 run in the graph", n)
	}
	wantLoggedOnce(t, p.Output(), offloadOffLog)
}

// groOnResumes turns GRO on at both hosts (their veths take redirected
// frames then) and waits until the fast path offloads to both devices
// again: it should resume within 100 ms, 2 s fail the test.
func groOnResumes(t *testing.T, tp *topo) {
	t.Helper()
	for _, ns := range []*netns.NS{tp.cli, tp.srv} {
		ns.MustRun("ethtool", "-K", "eth0", "gro", "on")
	}
	deadline := time.Now().Add(2 * time.Second)
	for s := tp.snapshot(t); deviceCounter(s, "lan", "fastpath_egress_off")+deviceCounter(s, "wan", "fastpath_egress_off") != 0; s = tp.snapshot(t) {
		if time.Now().After(deadline) {
			t.Fatalf("offloading still off 2 s after GRO was turned on (it should resume within 100 ms)")
		}
		time.Sleep(20 * time.Millisecond)
	}
}
