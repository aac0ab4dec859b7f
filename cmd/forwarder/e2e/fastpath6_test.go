package e2e

import (
	"strings"
	"testing"
	"time"

	"github.com/junction-dataplane/junction/internal/netns"
)

// IPv6 through the in-kernel XDP fast path (configs/router-veth.toml's
// afxdp variant, xdpConfig: IPLookup mirrors its IPv6 routes, NDPQuerier
// its REACHABLE neighbours; TestTCFastPath runs IPv6 through the config
// as shipped, the fast path in TC). The hosts are TestIPv6Router's.

// fastPath6Hosts gives cli and srv their IPv6 addresses and keeps the
// forwarder namespace's kernel out of IPv6 (see TestIPv6Router).
func fastPath6Hosts(t *testing.T, tp *topo) {
	noKernelIPv6(tp.fwd)
	addr6(t, tp.cli, "2001:db8:1::2/64", "2001:db8:1::1")
	addr6(t, tp.srv, "2001:db8:2::2/64", "2001:db8:2::1")
}

// TestFastPath6: with GRO on at the hosts (see TestFastPath), iperf3 -6
// TCP runs through the XDP program: both devices' fastpath_forwarded
// grow by most of the run's frames and the graph decrements the hop
// limit of only a few; what the fast path leaves to the graph (ICMPv6
// echo and neighbour discovery, hop limit 1) still works.
func TestFastPath6(t *testing.T) {
	netns.RequireTool(t, "iperf3")
	netns.RequireTool(t, "timeout")
	tp := newTopo(t, 1)
	fastPath6Hosts(t, tp)
	for _, ns := range []*netns.NS{tp.cli, tp.srv} {
		ns.MustRun("ethtool", "-K", "eth0", "gro", "on")
	}
	p := tp.start(t, fastPathConfig(t, tp.config))
	defer func() {
		out := tp.stop(t, p)
		if t.Failed() {
			t.Logf("forwarder output:\n%s", out)
		}
		tp.noXDP(t)
	}()
	// ICMPv6 takes the graph, and resolves both hosts as neighbours.
	ping6OK(t, tp.cli, "2001:db8:1::1")
	ping6OK(t, tp.cli, "2001:db8:2::2")
	ping6OK(t, tp.srv, "2001:db8:1::2")
	out, _ := tp.cli.Run("ping", "-6", "-c1", "-W2", "-t1", "2001:db8:2::2")
	if !strings.Contains(out, "From 2001:db8:1::1") || !strings.Contains(strings.ToLower(out), "time exceeded") {
		t.Errorf("hop-limit-1 probe: no time exceeded from 2001:db8:1::1:\n%s", out)
	}

	// The router learnt cli from its solicitation (STALE, RFC 4861
	// 7.2.3); only a REACHABLE neighbour goes into the fast path, so the
	// replies' direction waits for the graph's NUD: DELAY (5 s), then a
	// unicast probe, whose answer makes it REACHABLE.
	time.Sleep(5500 * time.Millisecond)
	ping6OK(t, tp.srv, "2001:db8:1::2")
	ping6OK(t, tp.cli, "2001:db8:2::2")

	before := tp.snapshot(t)
	bps := fallbackIperf(t, tp.cli, tp.srv, "2001:db8:2::2", "-6")
	after := tp.snapshot(t)
	lan := deviceCounter(after, "lan", "fastpath_forwarded") - deviceCounter(before, "lan", "fastpath_forwarded")
	wan := deviceCounter(after, "wan", "fastpath_forwarded") - deviceCounter(before, "wan", "fastpath_forwarded")
	hl := typePackets(after, "DecHopLimit") - typePackets(before, "DecHopLimit")
	t.Logf("iperf3 -6: %.0f Mbit/s; fast path forwarded %d frames in on lan, %d in on wan; the graph decremented the hop limit of %d",
		bps/1e6, lan, wan, hl)
	if lan < 1000 || wan < 100 {
		t.Errorf("iperf3 -6: the fast path forwarded %d (lan) and %d (wan) frames", lan, wan)
	}
	if hl*10 > lan {
		t.Errorf("the graph decremented the hop limit of %d packets, the fast path forwarded %d: the fast path did not take most", hl, lan)
	}
	for _, dev := range []string{"lan", "wan"} {
		if n := deviceCounter(after, dev, "fastpath_redirect_errors"); n != 0 {
			t.Errorf("%s: %d redirected frames refused", dev, n)
		}
	}
	if n := counter(after, "IPLookup", "offload errors"); n != 0 {
		t.Errorf("IPLookup: %d offload errors", n)
	}
	if n := counter(after, "NDPQuerier", "fastpath errors"); n != 0 {
		t.Errorf("NDPQuerier: %d fastpath errors", n)
	}
}

// TestFallbackRouter6: router-veth.toml with XDP redirects
// (fastpath_redirect = "xdp", see fallback_test.go) between hosts with
// GRO off: iperf3 -6 works through the graph and nothing is redirected
// (or lost); with GRO turned on, the IPv6 fast path engages.
func TestFallbackRouter6(t *testing.T) {
	netns.RequireTool(t, "iperf3")
	netns.RequireTool(t, "timeout")
	tp := newTopo(t, 1)
	fastPath6Hosts(t, tp)
	p := tp.start(t, xdpRedirectConfig(t, fastPathConfig(t, tp.config)))
	defer func() {
		out := tp.stop(t, p)
		if t.Failed() {
			t.Logf("forwarder output:\n%s", out)
		}
		tp.noXDP(t)
	}()
	ping6OK(t, tp.cli, "2001:db8:2::2")
	ping6OK(t, tp.srv, "2001:db8:1::2")
	bps := fallbackIperf(t, tp.cli, tp.srv, "2001:db8:2::2", "-6")
	t.Logf("GRO off: iperf3 -6 %.0f Mbit/s through the graph", bps/1e6)
	wantOffloadOff(t, tp.snapshot(t))
	wantLoggedOnce(t, p.Output(), offloadOffLog)

	groOnResumes(t, tp)
	// The neighbours may have gone STALE meanwhile: a ping through makes
	// the graph confirm them (and copy them into the fast path again).
	ping6OK(t, tp.cli, "2001:db8:2::2")
	before := tp.snapshot(t)
	bps = fallbackIperf(t, tp.cli, tp.srv, "2001:db8:2::2", "-6")
	after := tp.snapshot(t)
	fwd := deviceCounter(after, "lan", "fastpath_forwarded") - deviceCounter(before, "lan", "fastpath_forwarded")
	t.Logf("GRO on: iperf3 -6 %.0f Mbit/s, lan's fast path forwarded %d frames", bps/1e6, fwd)
	if fwd < 1000 {
		t.Errorf("GRO on: the fast path forwarded %d frames of an iperf3 -6 run", fwd)
	}
	for _, dev := range []string{"lan", "wan"} {
		if n := deviceCounter(after, dev, "fastpath_redirect_errors"); n != 0 {
			t.Errorf("%s: %d redirected frames refused", dev, n)
		}
	}
}

// TestNATGatewayFastPath6: nat-gateway.toml's afxdp variant, hosts with GRO on:
// the inside host's iperf3 -6 TCP flow is fast-tracked and handed to the
// kernel (FastTrack's "offloaded packets" and lan's fastpath_forwarded
// grow), and simple security still refuses inbound connections meanwhile
// (the gateway's IPv6 routes are not offloaded: only flows the graph
// admitted are).
func TestNATGatewayFastPath6(t *testing.T) {
	netns.RequireTool(t, "iperf3")
	netns.RequireTool(t, "timeout")
	netns.RequireTool(t, "curl")
	tp := newNATTopo(t)
	noKernelIPv6(tp.fwd)
	addr6(t, tp.in, "2001:db8:1::10/64", "2001:db8:1::1")
	addr6(t, tp.ot, "2001:db8:2::2/64", "")
	tp.ot.MustRun("ip", "-6", "route", "add", "2001:db8:1::/64", "via", "2001:db8:2::1")
	for _, ns := range []*netns.NS{tp.in, tp.ot} {
		ns.MustRun("ethtool", "-K", "eth0", "gro", "on") // see TestFastPath
	}
	tp.config = natFastPathConfig(t, tp.config)
	p := tp.start(t)
	fw := &topo{fwd: tp.fwd}
	defer func() {
		out := fw.stop(t, p)
		if t.Failed() {
			t.Logf("forwarder output:\n%s", out)
		}
		fw.noXDP(t)
	}()
	httpServer6(t, tp.in, "2001:db8:1::10", 8081, "inside\n")
	ping6OK(t, tp.in, "2001:db8:2::2")

	before := fw.snapshot(t)
	bps := fallbackIperf(t, tp.in, tp.ot, "2001:db8:2::2", "-6")
	after := fw.snapshot(t)
	off := counter(after, "FastTrack", "offloaded packets") - counter(before, "FastTrack", "offloaded packets")
	lan := deviceCounter(after, "lan", "fastpath_forwarded") - deviceCounter(before, "lan", "fastpath_forwarded")
	t.Logf("iperf3 -6 out: %.0f Mbit/s; FastTrack offloaded %d packets; lan's fast path forwarded %d", bps/1e6, off, lan)
	if off < 1000 || lan < 1000 {
		t.Errorf("iperf3 -6 out: %d packets offloaded, lan's fast path forwarded %d", off, lan)
	}
	for _, name := range []string{"offload errors"} {
		if n := counter(after, "FastTrack", name); n != 0 {
			t.Errorf("FastTrack: %d %s", n, name)
		}
	}
	if out, err := tp.ot.Run("curl", "-6", "-sf", "--max-time", "2", "http://[2001:db8:1::10]:8081/"); err == nil {
		t.Errorf("an outside host opened a connection to the inside with the fast path on: %q", out)
	}
}
