package e2e

import (
	"strings"
	"testing"
	"time"
)

// TestBGPRouterRestartPersist: with the tap driver's persist key the twins
// survive a forwarder restart: the same interfaces (ifindex), their
// addresses, and BIRD's BGP sessions over them (IPv4 and IPv6) stay
// established through the restart, with the learnt routes forwarded
// again once the new forwarder runs. BIRD's sessions have check link off
// and no BFD: between the two runs the twins have no carrier and nothing
// is forwarded, which a session with link checking or BFD would take for
// a failure (the BGP hold time, 9 s, covers the restart).
func TestBGPRouterRestartPersist(t *testing.T) {
	tp, _ := newBGPTopo(t, func(c string) string {
		for _, twin := range []string{"lan0", "wan0"} {
			c = strings.Replace(c, "twin      = \""+twin+"\"\n", "twin      = \""+twin+"\"\npersist   = true\n", 1)
		}
		if strings.Count(c, "persist   = true") != 2 {
			t.Fatal("bgp-router.toml: the twins' devices not found")
		}
		return c
	})
	bgpHosts(t, tp, "")
	router := startUplinks(t, tp.fwd, "", birdTimers+" check link off;")
	kernelRoute(t, tp, "10.16.0.0/12", true)
	kernelRoute(t, tp, "2001:db8:16::/48", true)
	routed(t, tp.cli, "10.16.0.5", true)
	ping6OK(t, tp.cli, "2001:db8:16::5")

	// A settled session's 'since' (BGP connection collisions settle
	// within the first seconds).
	var since, since6 string
	waitFor(t, 10*time.Second, "sessions settled", func() (bool, string) {
		s, _, out := router.session("uplink")
		s6, _, _ := router.session("uplink6")
		ok := s == since && s6 == since6
		since, since6 = s, s6
		if !ok {
			time.Sleep(2 * time.Second)
		}
		return ok, out
	})
	links := func() map[string]string {
		m := map[string]string{}
		for _, twin := range []string{"lan0h", "wan0h"} {
			out := tp.fwd.MustRun("ip", "-o", "link", "show", twin)
			idx, _, _ := strings.Cut(out, ":")
			m[twin] = idx
		}
		return m
	}
	before := links()

	t0 := time.Now()
	if out := tp.stop(t, tp.proc); t.Failed() {
		t.Fatalf("forwarder output:\n%s", out)
	}
	// Between the runs: the twins, their addresses and BIRD's listening
	// socket are there.
	for twin, addr := range map[string]string{"lan0h": "10.1.0.1/24", "wan0h": "10.2.0.1/24"} {
		out, err := tp.fwd.Run("ip", "-o", "addr", "show", twin)
		if err != nil || !strings.Contains(out, addr) {
			t.Errorf("%s after the forwarder's exit: %v\n%s", twin, err, out)
		}
	}
	if out := tp.fwd.MustRun("ss", "-Hltn", "sport", "= :179"); !strings.Contains(out, "LISTEN") {
		t.Errorf("BIRD's BGP socket after the forwarder's exit:\n%s", out)
	}
	p, _ := startCtl(t, tp.fwd, tp.bin, tp.config, tp.cli, "10.1.0.1")
	tp.proc = p
	t.Cleanup(func() {
		out := tp.stop(t, p)
		if t.Failed() {
			t.Logf("restarted forwarder's output:\n%s", out)
		}
	})
	t.Logf("forwarder restarted in %v", time.Since(t0).Round(time.Millisecond))
	if after := links(); after["lan0h"] != before["lan0h"] || after["wan0h"] != before["wan0h"] {
		t.Errorf("twins' ifindex %v after the restart, want the same as before %v", after, before)
	}
	for _, twin := range []string{"lan0h", "wan0h"} {
		waitFor(t, 5*time.Second, twin+" carrier back", func() (bool, string) {
			out, _ := tp.fwd.Run("ip", "-o", "link", "show", twin)
			return strings.Contains(out, "LOWER_UP"), out
		})
	}
	routed(t, tp.cli, "10.16.0.5", true)
	pingOK(t, tp.cli, "10.16.0.5")
	ping6OK(t, tp.cli, "2001:db8:16::5")
	// The sessions stayed up: still established, since the same time, 12 s
	// after the restart (past the hold time, counted from the last
	// keepalive before the exit).
	time.Sleep(time.Until(t0.Add(12 * time.Second)))
	for _, sess := range []struct{ name, since string }{{"uplink", since}, {"uplink6", since6}} {
		if now, up, st := router.session(sess.name); !up || !sameSince(now, sess.since) {
			t.Errorf("BGP session %s after the restart: established %v, since %q (was %q):\n%s", sess.name, up, now, sess.since, st)
		}
	}
}
