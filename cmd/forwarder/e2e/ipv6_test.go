package e2e

import (
	"fmt"
	"net"
	"net/http"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/junction-dataplane/junction/internal/netns"
)

// IPv6 through the contract configs (addresses as configs/router-veth.toml
// and configs/nat-gateway.toml give them):
//
//	router-veth: cli (eth0 2001:db8:1::2) ── lan0 [fwd] wan0 ── (eth0 2001:db8:2::2) srv
//	nat-gateway: in (eth0 2001:db8:1::10) ── lan0 [fwd] wan0 ── (eth0 2001:db8:2::2) out
//
// The hosts' addresses are added without duplicate address detection (so
// they are usable at once) and their default routes point at the
// router's global addresses, which they resolve by neighbour discovery
// (the forwarder answers for them itself: the fwd namespace's kernel has
// IPv6 disabled, so that it neither sends its own neighbour discovery nor
// claims the router's link-local addresses).

// addr6 adds an IPv6 address and a default route to a host's eth0, and
// lifts the host's ICMPv6 error rate limit (1 a second per peer), which
// would otherwise answer only one of traceroute's probes.
func addr6(t *testing.T, ns *netns.NS, cidr, gw string) {
	t.Helper()
	ns.Sysctl("net.ipv6.icmp.ratelimit", "0")
	ns.MustRun("ip", "-6", "addr", "add", cidr, "dev", "eth0", "nodad")
	if gw != "" {
		ns.MustRun("ip", "-6", "route", "add", "default", "via", gw)
	}
}

// noKernelIPv6 keeps the forwarder namespace's kernel out of IPv6.
func noKernelIPv6(ns *netns.NS) {
	for _, k := range []string{"all", "default", "lan0", "wan0"} {
		ns.Sysctl("net.ipv6.conf."+k+".disable_ipv6", "1")
	}
}

// ping6OK pings dst over IPv6 (waiting for neighbour discovery the first
// time: up to 5 tries of 3 pings).
func ping6OK(t *testing.T, ns *netns.NS, dst string) {
	t.Helper()
	var out string
	var err error
	for i := 0; i < 5; i++ {
		out, err = ns.Run("ping", "-6", "-c3", "-i0.2", "-W2", "-w6", dst)
		if err == nil && strings.Contains(out, " 0% packet loss") {
			return
		}
	}
	t.Errorf("ping -6 %s from %s: %v\n%s", dst, ns.Name, err, out)
}

// httpServer6 serves body on [addr]:port inside ns.
func httpServer6(t *testing.T, ns *netns.NS, addr string, port int, body string) {
	t.Helper()
	var ln net.Listener
	if err := ns.Do(func() error {
		var err error
		ln, err = net.Listen("tcp6", fmt.Sprintf("[%s]:%d", addr, port))
		return err
	}); err != nil {
		t.Fatalf("listen in %s: %v", ns.Name, err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprint(w, body)
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
}

// iperf6 runs iperf3 TCP over IPv6 from cli to srvAddr (a server in srv)
// for 2 s, or for n bytes, and returns the received bit rate.
func iperf6(t *testing.T, cli, srv *netns.NS, srvAddr string, extra ...string) float64 {
	t.Helper()
	args := append([]string{"iperf3", "-6", "-c", srvAddr, "-J", "--connect-timeout", "2000"}, extra...)
	if len(extra) == 0 {
		args = append(args, "-t", "2")
	}
	rep, out := iperfTo(t, cli, srv, srvAddr, true, args...)
	r := rep.End.SumReceived
	t.Logf("iperf3 -6 TCP to %s: %.1f Mbit/s (%.0f bytes)", srvAddr, r.BitsPerSecond/1e6, r.Bytes)
	if r.BitsPerSecond <= 0 {
		t.Errorf("iperf3 -6: zero throughput (error %q)\n%.3000s", rep.Error, out)
	}
	return r.BitsPerSecond
}

// TestIPv6Router: the dual-stack router-veth.toml between real hosts.
func TestIPv6Router(t *testing.T) {
	tp := newTopo(t, 1)
	noKernelIPv6(tp.fwd)
	addr6(t, tp.cli, "2001:db8:1::2/64", "2001:db8:1::1")
	addr6(t, tp.srv, "2001:db8:2::2/64", "2001:db8:2::1")
	// Behind srv, a link to far (2001:db8:16::/64, in the range the
	// router sends to srv) whose srv end has a 1400-byte MTU: srv routes
	// to it and tells senders of bigger packets with packet too big,
	// which crosses the router. far's own end keeps 1500, so that its TCP
	// MSS does not spare the sender the discovery.
	far := tp.env.NS("far")
	tp.env.Veth(tp.srv, "eth1", far, "eth0", 1)
	tp.srv.MustRun("ip", "link", "set", "dev", "eth1", "mtu", "1400")
	tp.srv.MustRun("ethtool", "-K", "eth1", "tx", "off")
	far.MustRun("ethtool", "-K", "eth0", "tx", "off")
	tp.srv.MustRun("ip", "-6", "addr", "add", "2001:db8:16::1/64", "dev", "eth1", "nodad")
	far.MustRun("ip", "-6", "addr", "add", "2001:db8:16::2/64", "dev", "eth0", "nodad")
	far.MustRun("ip", "-6", "route", "add", "default", "via", "2001:db8:16::1")
	tp.srv.Sysctl("net.ipv6.conf.all.forwarding", "1")

	p := tp.start(t, "")
	const body = "hello over ipv6 through junction\n"
	httpServer6(t, tp.srv, "2001:db8:2::2", 8080, body)

	t.Run("ping", func(t *testing.T) {
		ping6OK(t, tp.cli, "2001:db8:1::1") // the gateway itself
		ping6OK(t, tp.cli, "2001:db8:2::1") // its far address
		ping6OK(t, tp.cli, "2001:db8:2::2") // through
		ping6OK(t, tp.srv, "2001:db8:1::2") // and back
		ping6OK(t, tp.srv, "2001:db8:2::1")
	})
	t.Run("hop limit exceeded", func(t *testing.T) {
		out, _ := tp.cli.Run("ping", "-6", "-c1", "-W2", "-t1", "2001:db8:2::2")
		if !strings.Contains(out, "From 2001:db8:1::1") || !strings.Contains(strings.ToLower(out), "time exceeded") {
			t.Errorf("hop-limit-1 probe: no time exceeded from 2001:db8:1::1:\n%s", out)
		}
		if _, err := exec.LookPath("traceroute"); err != nil {
			t.Skip("no traceroute")
		}
		out, err := tp.cli.Run("traceroute", "-6", "-n", "-N1", "-q1", "-w1", "-m4", "2001:db8:2::2")
		lines := strings.Split(strings.TrimSpace(out), "\n")
		if err != nil || len(lines) != 3 || !strings.Contains(lines[1], "2001:db8:1::1") || !strings.Contains(lines[2], "2001:db8:2::2") {
			t.Errorf("traceroute -6: %v\n%s", err, out)
		}
		// To the router itself: port unreachable (from the address of
		// the side it came in by) ends it at hop 1.
		out, err = tp.cli.Run("traceroute", "-6", "-n", "-N1", "-q1", "-w1", "-m4", "2001:db8:2::1")
		lines = strings.Split(strings.TrimSpace(out), "\n")
		if err != nil || len(lines) != 2 || !strings.Contains(lines[1], "2001:db8:1::1") {
			t.Errorf("traceroute -6 to the router: %v\n%s", err, out)
		}
	})
	t.Run("curl", func(t *testing.T) {
		out, err := tp.cli.Run("curl", "-6", "-sf", "--max-time", "5", "http://[2001:db8:2::2]:8080/")
		if err != nil || out != body {
			t.Errorf("curl -6 through the forwarder: %v: %q", err, out)
		}
	})
	t.Run("iperf3", func(t *testing.T) { iperf6(t, tp.cli, tp.srv, "2001:db8:2::2") })
	t.Run("pmtud", func(t *testing.T) {
		// 4 MB from cli to far: the 1500-byte segments are refused by
		// srv's 1400-byte link; its packet too big crosses the router
		// and cli resends smaller. Without it the transfer stalls.
		iperf6(t, tp.cli, far, "2001:db8:16::2", "-n", "4M")
		out := tp.cli.MustRun("ip", "-6", "route", "get", "2001:db8:16::2")
		if !strings.Contains(out, "mtu 1400") {
			t.Errorf("cli learnt no path MTU for far: %s", out)
		}
	})
	t.Run("neighbour discovery", func(t *testing.T) {
		s := tp.snapshot(t)
		if counter(s, "NDPQuerier", "solicitations") == 0 || counter(s, "NDPQuerier", "learned") == 0 {
			t.Errorf("NDPQuerier sent %d solicitations, learnt %d", counter(s, "NDPQuerier", "solicitations"), counter(s, "NDPQuerier", "learned"))
		}
		if counter(s, "NDPResponder", "advertisements") == 0 {
			t.Errorf("NDPResponder answered nothing")
		}
		out := tp.cli.MustRun("ip", "-6", "neigh", "show", "2001:db8:1::1")
		if !strings.Contains(out, "lladdr") {
			t.Errorf("client has no neighbour entry for its gateway: %q", out)
		}
	})
	// IPv4 still works beside it (one ping first resolves the hosts' and
	// the router's ARP, which the IPv6 subtests never needed).
	tp.cli.Run("ping", "-c1", "-W2", "10.2.0.2")
	pingOK(t, tp.cli, "10.2.0.2")
	tp.stop(t, p)
}

// TestIPv6NATGateway: the dual-stack nat-gateway.toml. IPv6 is routed with
// RFC 6092 simple security: the inside host reaches the outside (ping,
// curl, iperf3), the outside cannot open a connection to the inside.
func TestIPv6NATGateway(t *testing.T) {
	tp := newNATTopo(t)
	noKernelIPv6(tp.fwd)
	addr6(t, tp.in, "2001:db8:1::10/64", "2001:db8:1::1")
	addr6(t, tp.ot, "2001:db8:2::2/64", "")
	tp.ot.MustRun("ip", "-6", "route", "add", "2001:db8:1::/64", "via", "2001:db8:2::1")
	// Beyond the outside host, far on a link whose near end has a
	// 1400-byte MTU (as in TestIPv6Router): the outside host's packet too
	// big must pass the gateway's simple security as related.
	far := tp.env.NS("far")
	tp.env.Veth(tp.ot, "eth1", far, "eth0", 1)
	tp.ot.MustRun("ip", "link", "set", "dev", "eth1", "mtu", "1400")
	tp.ot.MustRun("ethtool", "-K", "eth1", "tx", "off")
	far.MustRun("ethtool", "-K", "eth0", "tx", "off")
	tp.ot.MustRun("ip", "-6", "addr", "add", "2001:db8:16::1/64", "dev", "eth1", "nodad")
	far.MustRun("ip", "-6", "addr", "add", "2001:db8:16::2/64", "dev", "eth0", "nodad")
	far.MustRun("ip", "-6", "route", "add", "default", "via", "2001:db8:16::1")
	tp.ot.Sysctl("net.ipv6.conf.all.forwarding", "1")
	p := tp.start(t)
	const body = "outside over ipv6\n"
	httpServer6(t, tp.ot, "2001:db8:2::2", 8080, body)
	httpServer6(t, tp.in, "2001:db8:1::10", 8081, "inside\n")

	t.Run("ping", func(t *testing.T) {
		ping6OK(t, tp.in, "2001:db8:1::1")
		ping6OK(t, tp.in, "2001:db8:2::1")
		ping6OK(t, tp.in, "2001:db8:2::2")
		ping6OK(t, tp.ot, "2001:db8:2::1")
	})
	t.Run("traceroute", func(t *testing.T) {
		if _, err := exec.LookPath("traceroute"); err != nil {
			t.Skip("no traceroute")
		}
		out, err := tp.in.Run("traceroute", "-6", "-n", "-N1", "-q1", "-w1", "-m4", "2001:db8:2::2")
		lines := strings.Split(strings.TrimSpace(out), "\n")
		if err != nil || len(lines) != 3 || !strings.Contains(lines[1], "2001:db8:1::1") || !strings.Contains(lines[2], "2001:db8:2::2") {
			t.Errorf("traceroute -6: %v\n%s", err, out)
		}
	})
	t.Run("curl out", func(t *testing.T) {
		out, err := tp.in.Run("curl", "-6", "-sf", "--max-time", "5", "http://[2001:db8:2::2]:8080/")
		if err != nil || out != body {
			t.Errorf("curl -6 from the inside: %v: %q", err, out)
		}
	})
	t.Run("iperf3 out", func(t *testing.T) {
		fast := func() uint64 { return counter((&topo{fwd: tp.fwd}).snapshot(t), "FastTrack", "fasttracked packets") }
		before := fast()
		iperf6(t, tp.in, tp.ot, "2001:db8:2::2")
		// The IPv6 TCP flow was fast-tracked (IPv4 is idle meanwhile).
		if n := fast() - before; n < 1000 {
			t.Errorf("FastTrack forwarded %d packets of the IPv6 transfer", n)
		}
	})
	t.Run("pmtud", func(t *testing.T) {
		iperf6(t, tp.in, far, "2001:db8:16::2", "-n", "4M")
		out := tp.in.MustRun("ip", "-6", "route", "get", "2001:db8:16::2")
		if !strings.Contains(out, "mtu 1400") {
			t.Errorf("the inside host learnt no path MTU for far: %s", out)
		}
	})
	t.Run("inbound refused", func(t *testing.T) {
		snap := func() uint64 {
			return counter((&topo{fwd: tp.fwd}).snapshot(t), "Conntrack", "new")
		}
		before := snap()
		out, err := tp.ot.Run("curl", "-6", "-sf", "--max-time", "2", "http://[2001:db8:1::10]:8081/")
		if err == nil {
			t.Errorf("an outside host opened a connection to the inside: %q", out)
		}
		if out, err := tp.ot.Run("ping", "-6", "-c2", "-i0.2", "-W1", "2001:db8:1::10"); err == nil {
			t.Errorf("an outside host pinged the inside:\n%s", out)
		}
		// They reached the gateway and were tracked as new flows (then
		// dropped by fw6): the refusal is the gateway's, not a broken path.
		if d := snap() - before; d < 2 {
			t.Errorf("only %d new flows tracked during the inbound attempts", d)
		}
		// The inside host can still reach out after that.
		if out, err := tp.in.Run("curl", "-6", "-sf", "--max-time", "5", "http://[2001:db8:2::2]:8080/"); err != nil || out != body {
			t.Errorf("curl -6 from the inside after: %v: %q", err, out)
		}
	})
	t.Run("slaac", func(t *testing.T) {
		// The gateway's router advertisements give the inside host an
		// address of its own in 2001:db8:1::/64 and a default route via
		// the gateway's link-local address; traffic from it goes out.
		var addr, out string
		for i := 0; i < 50 && addr == ""; i++ {
			out = tp.in.MustRun("ip", "-6", "-o", "addr", "show", "dev", "eth0", "scope", "global", "dynamic")
			for _, f := range strings.Fields(out) {
				if strings.HasPrefix(f, "2001:db8:1:0:") && !strings.Contains(out, "tentative") {
					addr = strings.Split(f, "/")[0]
				}
			}
			if addr == "" {
				time.Sleep(200 * time.Millisecond)
			}
		}
		if addr == "" {
			t.Fatalf("no address from the router advertisements: %s", out)
		}
		if r := tp.in.MustRun("ip", "-6", "route", "show", "default"); !strings.Contains(r, "proto ra") || !strings.Contains(r, "via fe80::") {
			t.Errorf("no default route from the advertisements: %s", r)
		}
		if out, err := tp.in.Run("ping", "-6", "-c2", "-i0.2", "-W2", "-I", addr, "2001:db8:2::2"); err != nil {
			t.Errorf("ping -6 from the SLAAC address %s: %v\n%s", addr, err, out)
		}
	})
	t.Run("ipv4 unchanged", func(t *testing.T) { pingOK(t, tp.in, natOutside) })
	p.Signal(syscall.SIGINT)
	if err := p.Wait(10 * time.Second); err != nil {
		t.Errorf("forwarder exit: %v\n%s", err, p.Output())
	}
}
