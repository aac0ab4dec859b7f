package e2e

import (
	"github.com/junction-dataplane/junction/drivers/kfeature"
	"strings"
	"testing"
	"time"

	"github.com/junction-dataplane/junction/internal/netns"
	"github.com/junction-dataplane/junction/pipeline"
)

// plainIperfCases are the iperf3 runs through the fast path with ordinary
// hosts: one and eight streams, both directions.
var plainIperfCases = [][]string{nil, {"-R"}, {"-P", "8"}, {"-P", "8", "-R"}}

// wantForwardedByKernel checks that the fast path carried a run: the
// device the data entered by forwarded at least 1000 frames of it, and no
// output refused a frame or was turned off.
func wantForwardedByKernel(t *testing.T, what, in string, before, after *pipeline.Snapshot) {
	t.Helper()
	if fwd := deviceCounter(after, in, "fastpath_forwarded") - deviceCounter(before, in, "fastpath_forwarded"); fwd < 1000 {
		t.Errorf("%s: %s's fast path forwarded %d frames of the run", what, in, fwd)
	}
	for _, dev := range []string{"lan", "wan"} {
		for _, c := range []string{"fastpath_redirect_errors", "fastpath_egress_disabled", "fastpath_egress_off"} {
			if n := deviceCounter(after, dev, c); n != 0 {
				t.Errorf("%s: %s %s = %d, want 0", what, dev, c, n)
			}
		}
	}
}

// stopOffloading stops the forwarder p of tp's namespace; it fails the
// test if the driver logged that it stopped offloading to a device, and
// checks that no XDP program is left.
func stopOffloading(t *testing.T, tp *topo, p *netns.Proc) {
	t.Helper()
	out := tp.stop(t, p)
	if strings.Contains(out, offloadOffLog) {
		t.Errorf("the driver stopped offloading:\n%s", out)
	}
	if t.Failed() {
		t.Logf("forwarder output:\n%s", out)
	}
	tp.noXDP(t)
}

// TestFastPathPlainHosts: the contract configs' afxdp variants (the XDP
// fast path, xdpConfig) between hosts as `ip link add` leaves them (GRO
// off, no XDP on them). The driver
// reaches their veths through TC (fastpath_redirect = "auto"), which
// needs nothing of the receiving veth, so the in-kernel fast path
// forwards their traffic: ping and curl work, and iperf3 TCP with one
// and eight streams in both directions (and over IPv6 through the
// router) is carried by the kernel, with no output refused or turned
// off and nothing logged about offloading.
func TestFastPathPlainHosts(t *testing.T) {
	kfeature.Require(t, handOff...)
	netns.RequireTool(t, "curl")
	netns.RequireTool(t, "iperf3")
	netns.RequireTool(t, "timeout")
	t.Run("router", func(t *testing.T) {
		plainHostsRouter(t, fastPathConfig, append(plainIperfCases, []string{"-6"}), nil)
	})
	t.Run("nat", func(t *testing.T) {
		plainHostsNAT(t, natFastPathConfig, plainIperfCases, nil)
	})
}

// TestFastPathOutputDown: router-veth.toml's afxdp variant, ordinary hosts.
// The kernel drops without a trace what the fast path sends through TC
// into a veth whose peer is down, so the driver watches its outputs' link
// state: with the server's eth0 down, wan is turned off within the
// 100 ms poll (counted, logged once), and on again once eth0 is back up,
// when the fast path carries the traffic again.
func TestFastPathOutputDown(t *testing.T) {
	kfeature.Require(t, handOff...)
	netns.RequireTool(t, "iperf3")
	netns.RequireTool(t, "timeout")
	tp := newTopo(t, 1)
	p := tp.start(t, fastPathConfig(t, tp.config))
	stopped := false
	defer func() {
		if !stopped {
			out := tp.stop(t, p)
			if t.Failed() {
				t.Logf("forwarder output:\n%s", out)
			}
		}
		tp.noXDP(t)
	}()
	pingOK(t, tp.cli, "10.2.0.2")
	waitOff := func(want uint64) time.Duration {
		t.Helper()
		start := time.Now()
		for deviceCounter(tp.snapshot(t), "wan", "fastpath_egress_off") != want {
			if time.Since(start) > 2*time.Second {
				t.Fatalf("wan's fastpath_egress_off still not %d after 2 s", want)
			}
			time.Sleep(10 * time.Millisecond)
		}
		return time.Since(start)
	}
	waitOff(0)
	tp.srv.MustRun("ip", "link", "set", "eth0", "down")
	t.Logf("server's eth0 down: wan turned off after %v", waitOff(1))
	if n := deviceCounter(tp.snapshot(t), "wan", "fastpath_egress_disabled"); n != 1 {
		t.Errorf("fastpath_egress_disabled %d, want 1", n)
	}
	tp.srv.MustRun("ip", "link", "set", "eth0", "up")
	// The server's kernel dropped its default route with the link.
	tp.srv.MustRun("ip", "route", "replace", "default", "via", "10.2.0.1")
	t.Logf("server's eth0 up: wan on again after %v", waitOff(0))
	pingOK(t, tp.cli, "10.2.0.2")
	before := tp.snapshot(t)
	bps := fallbackIperf(t, tp.cli, tp.srv, "10.2.0.2")
	after := tp.snapshot(t)
	t.Logf("iperf3 after: %.0f Mbit/s", bps/1e6)
	if fwd := deviceCounter(after, "lan", "fastpath_forwarded") - deviceCounter(before, "lan", "fastpath_forwarded"); fwd < 1000 {
		t.Errorf("after eth0 came back, the fast path forwarded %d frames of an iperf3 run", fwd)
	}
	stopped = true
	out := tp.stop(t, p)
	if n := strings.Count(out, "(wan0): "+offloadOffLog); n != 1 {
		t.Errorf("%q logged %d times for wan, want once:\n%s", offloadOffLog, n, out)
	}
	if strings.Contains(out, "(lan0): "+offloadOffLog) {
		t.Errorf("lan was turned off too:\n%s", out)
	}
}
