package e2e

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/link"

	"github.com/junction-dataplane/junction/drivers/afxdp/fastpath"
	"github.com/junction-dataplane/junction/drivers/kfeature"
	"github.com/junction-dataplane/junction/internal/netns"
	"github.com/junction-dataplane/junction/pipeline"
)

// tcFastPathConfig is a contract config as shipped, checked to have its
// two fast-path devices on the afpacket driver with fastpath = "auto"
// (which picks the fast path in TC for these veths): no XDP program on
// any device.
func tcFastPathConfig(t *testing.T, contract string) string {
	kfeature.Require(t, fastpath.TCFeatures...)
	data, err := os.ReadFile(contract)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Count(string(data), shippedDevice) != 2 {
		t.Fatalf("%s: no longer two devices with %q; update tcFastPathConfig", contract, shippedDevice)
	}
	return contract
}

// wantTCMode checks that both devices settled on the fast path in TC,
// picked by "auto" for a veth.
func wantTCMode(t *testing.T, s *pipeline.Snapshot) {
	t.Helper()
	for _, d := range s.Devices {
		ok := false
		for _, m := range d.Modes {
			ok = ok || m.Name == "fastpath" && m.Value == "tc" && strings.Contains(m.Note, "auto: a veth")
		}
		if !ok {
			t.Errorf("device %s (%s): modes %+v, want fastpath tc picked by auto for a veth", d.Device, d.Driver, d.Modes)
		}
	}
}

// noXDPAnywhere fails the test if any of the namespaces' eth0, lan0 or
// wan0 has an XDP program.
func noXDPAnywhere(t *testing.T, nss ...*netns.NS) {
	t.Helper()
	for _, ns := range nss {
		for _, ifn := range []string{"eth0", "lan0", "wan0"} {
			out, err := ns.Run("ip", "-d", "link", "show", "dev", ifn)
			if err == nil && xdpRE.MatchString(out) {
				t.Errorf("%s %s: an XDP program is attached:\n%s", ns.Name, ifn, out)
			}
		}
	}
}

// plainHostsRouter runs router-veth.toml, as config makes it of the
// contract file, between plain hosts (two queues, IPv6 addresses): ping
// and curl both ways, IPv6 ping, then iperf3 for each of cases (a
// trailing "-R": the data enters by wan; a leading "-6": to the server's
// IPv6 address), each carried by the kernel (wantForwardedByKernel).
// running, if not nil, checks the forwarder once it answers.
func plainHostsRouter(t *testing.T, config func(*testing.T, string) string, cases [][]string, running func(*testing.T, *topo)) {
	tp := newTopo(t, 2)
	fastPath6Hosts(t, tp)
	p := tp.start(t, config(t, tp.config))
	defer stopOffloading(t, tp, p)
	if running != nil {
		running(t, tp)
	}
	const body = "hello through the kernel\n"
	httpServer(t, tp.srv, body)
	pingOK(t, tp.cli, "10.2.0.2")
	pingOK(t, tp.srv, "10.1.0.2")
	curlOK(t, tp, body)
	ping6OK(t, tp.cli, "2001:db8:2::2")
	for _, c := range cases {
		dst, in := "10.2.0.2", "lan"
		if len(c) > 0 && c[len(c)-1] == "-R" {
			in = "wan"
		}
		if len(c) > 0 && c[0] == "-6" {
			dst = "2001:db8:2::2"
		}
		before := tp.snapshot(t)
		bps := fallbackIperf(t, tp.cli, tp.srv, dst, c...)
		after := tp.snapshot(t)
		what := fmt.Sprintf("iperf3 %v", c)
		t.Logf("%s: %.0f Mbit/s, %s's fast path forwarded %d frames, sent %d to the graph", what, bps/1e6, in,
			deviceCounter(after, in, "fastpath_forwarded")-deviceCounter(before, in, "fastpath_forwarded"),
			deviceCounter(after, in, "fastpath_to_graph")-deviceCounter(before, in, "fastpath_to_graph"))
		wantForwardedByKernel(t, what, in, before, after)
	}
	if running != nil {
		running(t, tp)
	}
}

// plainHostsNAT runs nat-gateway.toml, as config makes it of the
// contract file, between plain hosts: ping, curl through DNAT, then
// iperf3 through SNAT for each of cases, each carried by the kernel with
// no segment invalid for Conntrack. running as for plainHostsRouter (its
// topo holds only the forwarder's namespace).
func plainHostsNAT(t *testing.T, config func(*testing.T, string) string, cases [][]string, running func(*testing.T, *topo)) {
	tp := newNATTopoQueues(t, 2)
	tp.config = config(t, tp.config)
	p := tp.start(t)
	fw := &topo{fwd: tp.fwd}
	defer stopOffloading(t, fw, p)
	if running != nil {
		running(t, fw)
	}
	pingOK(t, tp.in, natOutside)
	natDNATCurl(t, tp, "inside web server via dnat, plain hosts\n")
	for _, c := range cases {
		in := "lan"
		if len(c) > 0 && c[len(c)-1] == "-R" {
			in = "wan"
		}
		before := fw.snapshot(t)
		bps := fallbackIperf(t, tp.in, tp.ot, natOutside, c...)
		after := fw.snapshot(t)
		what := fmt.Sprintf("iperf3 %v through SNAT", c)
		t.Logf("%s: %.0f Mbit/s, FastTrack offloaded %d packets", what, bps/1e6,
			counter(after, "FastTrack", "offloaded packets")-counter(before, "FastTrack", "offloaded packets"))
		wantForwardedByKernel(t, what, in, before, after)
		if n := logInvalid(t, after); n != 0 {
			t.Errorf("%s: Conntrack found %d packets invalid", what, n)
		}
	}
	if running != nil {
		running(t, fw)
	}
	noXDPAnywhere(t, tp.in, tp.ot)
}

// TestTCFastPath: the contract configs as shipped, their devices on
// afpacket and the fast path in TC, between ordinary hosts (plain veths, GRO off,
// no XDP anywhere): ping and curl work, and iperf3 TCP with one and
// eight streams in both directions, each run twice (and over IPv6
// through the router), is carried by the kernel's TC program, with no
// output refused or turned off and no XDP program on any veth.
func TestTCFastPath(t *testing.T) {
	netns.RequireTool(t, "curl")
	netns.RequireTool(t, "iperf3")
	netns.RequireTool(t, "timeout")
	// Both devices on the fast path in TC, and no XDP program on the
	// forwarder's veths, at the start and after the runs.
	running := func(t *testing.T, tp *topo) {
		wantTCMode(t, tp.snapshot(t))
		noXDPAnywhere(t, tp.fwd)
	}
	twice := append(append([][]string(nil), plainIperfCases...), plainIperfCases...)
	t.Run("router", func(t *testing.T) {
		plainHostsRouter(t, tcFastPathConfig, append(twice, []string{"-6"}), func(t *testing.T, tp *topo) {
			running(t, tp)
			if tp.cli != nil {
				noXDPAnywhere(t, tp.cli, tp.srv)
			}
		})
	})
	t.Run("nat", func(t *testing.T) { plainHostsNAT(t, tcFastPathConfig, twice, running) })
}

// TestTCFastPathBadInput: router-veth.toml as shipped (afpacket, the fast
// path in TC), ordinary hosts, and what an operator does to a running router:
//
//   - the server's veth goes down: wan is turned off as an output
//     (counted once, logged), and on again once it is back up, when the
//     fast path carries the traffic again;
//   - another tool attaches a tcx program before Junction's that accepts
//     every frame itself (TC_ACT_OK, ending the chain): traffic keeps
//     flowing through the graph (the fast path forwards none of it);
//     once it is detached the fast path carries it again;
//   - wan0's MTU is lowered at run time: full-size frames no longer fit,
//     so the fast path leaves them to the graph, which counts what the
//     device refuses (tx_dropped_too_long); pings that fit still pass;
//   - the server's namespace is deleted (its veth pair with it): the
//     forwarder keeps running, answers the client, and counts the
//     frames it can no longer send.
func TestTCFastPathBadInput(t *testing.T) {
	netns.RequireTool(t, "iperf3")
	netns.RequireTool(t, "timeout")
	tp := newTopo(t, 1)
	p := tp.start(t, tcFastPathConfig(t, tp.config))
	defer func() {
		out := tp.stop(t, p)
		if t.Failed() {
			t.Logf("forwarder output:\n%s", out)
		}
	}()
	pingOK(t, tp.cli, "10.2.0.2")
	fwdDelta := func(c []string) uint64 {
		before := tp.snapshot(t)
		fallbackIperf(t, tp.cli, tp.srv, "10.2.0.2", c...)
		return deviceCounter(tp.snapshot(t), "lan", "fastpath_forwarded") - deviceCounter(before, "lan", "fastpath_forwarded")
	}

	// The output down, then up.
	tp.srv.MustRun("ip", "link", "set", "eth0", "down")
	deadline := time.Now().Add(3 * time.Second)
	for deviceCounter(tp.snapshot(t), "wan", "fastpath_egress_off") != 1 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if s := tp.snapshot(t); deviceCounter(s, "wan", "fastpath_egress_off") != 1 || deviceCounter(s, "wan", "fastpath_egress_disabled") != 1 {
		t.Errorf("server's veth down: wan fastpath_egress_off %d, fastpath_egress_disabled %d; want 1, 1",
			deviceCounter(s, "wan", "fastpath_egress_off"), deviceCounter(s, "wan", "fastpath_egress_disabled"))
	}
	tp.srv.MustRun("ip", "link", "set", "eth0", "up")
	tp.srv.Route("default", "via", "10.2.0.1")
	deadline = time.Now().Add(3 * time.Second)
	for deviceCounter(tp.snapshot(t), "wan", "fastpath_egress_off") != 0 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	pingOK(t, tp.cli, "10.2.0.2")
	if n := fwdDelta(nil); n < 1000 {
		t.Errorf("after the server's veth came back: the fast path forwarded %d frames of a run", n)
	}

	// Another tool's tcx program before ours, accepting everything.
	var l link.Link
	ifi, err := netIndex(tp.fwd, "lan0")
	if err != nil {
		t.Fatal(err)
	}
	if err := tp.fwd.Do(func() error {
		prog, err := ebpf.NewProgram(&ebpf.ProgramSpec{Type: ebpf.SchedCLS, License: "GPL",
			Instructions: asm.Instructions{asm.Mov.Imm(asm.R0, 0), asm.Return()}}) // TC_ACT_OK
		if err != nil {
			return err
		}
		defer prog.Close()
		l, err = link.AttachTCX(link.TCXOptions{Interface: ifi, Program: prog, Attach: ebpf.AttachTCXIngress, Anchor: link.Head()})
		return err
	}); err != nil {
		t.Fatalf("attaching a tcx program before Junction's: %v", err)
	}
	pingOK(t, tp.cli, "10.2.0.2")
	before := tp.snapshot(t)
	bps := fallbackIperf(t, tp.cli, tp.srv, "10.2.0.2")
	after := tp.snapshot(t)
	if n := deviceCounter(after, "lan", "fastpath_forwarded") - deviceCounter(before, "lan", "fastpath_forwarded"); n != 0 {
		t.Errorf("with a program accepting every frame before Junction's, its fast path still forwarded %d frames", n)
	}
	t.Logf("another tool's tcx program first: %.0f Mbit/s through the graph", bps/1e6)
	l.Close()
	if n := fwdDelta(nil); n < 1000 {
		t.Errorf("after the other program left: the fast path forwarded %d frames of a run", n)
	}

	// wan0's MTU lowered at run time: full-size TCP segments to the
	// server no longer fit it.
	tp.fwd.MustRun("ip", "link", "set", "wan0", "mtu", "1400")
	before = tp.snapshot(t)
	out, _ := tp.cli.Run("ping", "-c3", "-i0.2", "-W2", "-w6", "-M", "do", "-s", "1472", "10.2.0.2")
	after = tp.snapshot(t)
	if n := deviceCounter(after, "wan", "tx_dropped_too_long") - deviceCounter(before, "wan", "tx_dropped_too_long"); n == 0 {
		t.Errorf("full-size pings after wan0's MTU went to 1400: no frame counted as too long\n%s", out)
	}
	pingOK(t, tp.cli, "10.2.0.2") // small ones fit
	tp.fwd.MustRun("ip", "link", "set", "wan0", "mtu", "1500")

	// The server's namespace deleted, its veth pair with it.
	tp.srv.MustRun("ip", "link", "del", "eth0")
	time.Sleep(300 * time.Millisecond)
	tp.cli.Run("ping", "-c3", "-i0.2", "-W1", "10.2.0.2") // lost: counted by the graph
	pingOK(t, tp.cli, "10.1.0.1")
	s := tp.snapshot(t)
	t.Logf("after the server's veth pair went: wan tx_errors %d, tx_dropped %d; totals drops %d",
		deviceCounter(s, "wan", "tx_errors"), deviceCounter(s, "wan", "tx_dropped"), s.Totals.Drops)
	select {
	case <-p.Done():
		t.Fatalf("the forwarder exited when the server's veth pair went:\n%s", p.Output())
	default:
	}
}

// netIndex is ifname's index in ns.
func netIndex(ns *netns.NS, ifname string) (int, error) {
	out, err := ns.Run("cat", "/sys/class/net/"+ifname+"/ifindex")
	if err != nil {
		return 0, err
	}
	var i int
	_, err = fmt.Sscan(out, &i)
	return i, err
}

// TestTCFastPathPolice: router-veth.toml as shipped (the fast path in
// TC) with local_rate lowered to 200/s (burst 20) on both devices: a
// UDP flood from the server to the router's WAN address is policed in
// the TC program (local_rate_dropped_udp counts most of it, a loss in
// show interfaces' drops), the graph sees at most what passed, and
// meanwhile pings to the router (their own class) and through it are
// answered.
func TestTCFastPathPolice(t *testing.T) {
	tp := newTopo(t, 1)
	data, err := os.ReadFile(tcFastPathConfig(t, tp.config))
	if err != nil {
		t.Fatal(err)
	}
	cfg := strings.ReplaceAll(string(data), shippedDevice, shippedDevice+"local_rate = \"200/s\"\nlocal_burst = 20\n")
	path := filepath.Join(t.TempDir(), "policed-router-veth.toml")
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	p, sock := startCtl(t, tp.fwd, tp.bin, path, tp.cli, "10.1.0.1")
	defer func() {
		out := tp.stop(t, p)
		if t.Failed() {
			t.Logf("forwarder output:\n%s", out)
		}
	}()
	pingOK(t, tp.srv, "10.2.0.1")
	before := tp.snapshot(t)
	const n = 20000
	start := time.Now()
	if err := tp.srv.Do(func() error {
		// Unconnected: the router's port unreachables fail no write.
		conn, err := net.ListenPacket("udp4", "10.2.0.2:0")
		if err != nil {
			return err
		}
		defer conn.Close()
		dst := &net.UDPAddr{IP: net.IPv4(10, 2, 0, 1), Port: 9}
		b := make([]byte, 32)
		for range n {
			if _, err := conn.WriteTo(b, dst); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	pingOK(t, tp.srv, "10.2.0.1")
	pingOK(t, tp.cli, "10.2.0.2")
	time.Sleep(200 * time.Millisecond)
	after := tp.snapshot(t)
	d := func(name string) uint64 {
		return deviceCounter(after, "wan", name) - deviceCounter(before, "wan", name)
	}
	dropped, passed := d("local_rate_dropped_udp"), d("local_rate_passed")
	// Each CPU has its own bucket.
	maxPassed := uint64(20+200*(took+300*time.Millisecond).Seconds()+1)*uint64(runtime.NumCPU()) + 20 // + the pings
	t.Logf("%d datagrams to 10.2.0.1 in %v: the TC program dropped %d, let on %d", n, took, dropped, passed)
	if dropped < n/2 || passed > maxPassed {
		t.Errorf("UDP flood to the router: dropped %d (want most of %d), passed %d (at most %d)", dropped, n, passed, maxPassed)
	}
	if rx := d("rx_packets"); rx > passed+50 {
		t.Errorf("wan's sockets received %d frames, but the TC program let on only %d for the router", rx, passed)
	}
	var ifs []struct {
		Device string `json:"device"`
		Drops  []struct {
			Name string `json:"name"`
		} `json:"drops"`
	}
	fwdctlJSON(t, tp.bin, sock, &ifs, "show", "interfaces")
	found := false
	for _, i := range ifs {
		for _, c := range i.Drops {
			found = found || i.Device == "wan" && c.Name == "local_rate_dropped_udp"
		}
	}
	if !found {
		t.Errorf("show interfaces: local_rate_dropped_udp not among wan's drops: %+v", ifs)
	}
}

// TestTCFastPathRPS: router-veth.toml as shipped turns RPS on for lan0's
// and wan0's RX queues while it runs (so that a flow's frames, which the
// veth queues to the sending CPU's backlog, stay in order through the TC
// program: TestTCPNoReorder), says so once per device, keeps a mask the
// operator set, and puts the old masks back at exit.
func TestTCFastPathRPS(t *testing.T) {
	tp := newTopo(t, 2)
	rps := func(ifn, q string) string {
		return strings.TrimSpace(tp.fwd.MustRun("cat", "/sys/class/net/"+ifn+"/queues/"+q+"/rps_cpus"))
	}
	zero := func(m string) bool { return strings.Trim(m, "0,") == "" }
	// wan0's queue 1 has the operator's mask.
	tp.fwd.MustRun("sh", "-c", "echo 1 > /sys/class/net/wan0/queues/rx-1/rps_cpus")
	op := rps("wan0", "rx-1")
	p := tp.start(t, tcFastPathConfig(t, tp.config))
	for _, ifn := range []string{"lan0", "wan0"} {
		for _, q := range []string{"rx-0", "rx-1"} {
			if m := rps(ifn, q); zero(m) {
				t.Errorf("%s %s: rps_cpus %s while the forwarder runs", ifn, q, m)
			}
		}
	}
	if m := rps("wan0", "rx-1"); m != op {
		t.Errorf("wan0 rx-1: the operator's rps_cpus %s became %s", op, m)
	}
	pingOK(t, tp.cli, "10.2.0.2")
	out := tp.stop(t, p)
	wantLoggedOnce(t, out, "fast path: RPS on for its RX queues")
	for _, ifn := range []string{"lan0", "wan0"} {
		if m := rps(ifn, "rx-0"); !zero(m) {
			t.Errorf("%s rx-0: rps_cpus %s after exit, want it back at 0", ifn, m)
		}
	}
	if m := rps("wan0", "rx-1"); m != op {
		t.Errorf("wan0 rx-1: the operator's rps_cpus %s is %s after exit", op, m)
	}
}
