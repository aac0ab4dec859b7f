package e2e

import (
	"github.com/junction-dataplane/junction/drivers/afxdp/fastpath"
	"github.com/junction-dataplane/junction/drivers/kfeature"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/junction-dataplane/junction/internal/netns"
	"github.com/junction-dataplane/junction/pipeline"
)

// Every contract config's fast-path devices, as shipped (the afpacket
// driver with the fast path in TC) and as their afxdp variant (the XDP
// fast path) that xdpConfig makes of them.
const (
	shippedDevice = "driver    = \"afpacket\"\nfastpath  = \"auto\"\n"
	xdpDevice     = "driver    = \"afxdp\"\nfastpath  = true\n"
)

// xdpConfig writes a copy of a contract config whose two fast-path
// devices (afpacket with the fast path in TC, as shipped) become afxdp
// devices with the fast path as an XDP program (fastpath = true): the
// reverse of benchmarks/e2e-tcp-tcfp.sh's tcfp_config, for the tests of
// the afxdp driver and its XDP fast path. Every other line as shipped.
func xdpConfig(t *testing.T, contract string) string {
	t.Helper()
	kfeature.Require(t, fastpath.Features...)
	data, err := os.ReadFile(contract)
	if err != nil {
		t.Fatal(err)
	}
	cfg := string(data)
	if strings.Count(cfg, shippedDevice) != 2 || strings.Contains(cfg, "driver    = \"afxdp\"") {
		t.Fatalf("%s: no longer two devices with %q (and none on afxdp); update xdpConfig", contract, shippedDevice)
	}
	cfg = strings.ReplaceAll(cfg, shippedDevice, xdpDevice)
	path := filepath.Join(t.TempDir(), "xdp-"+filepath.Base(contract))
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// fastPathConfig returns the contract router config's afxdp variant
// (xdpConfig), checked to have what the XDP fast path's tests rely on:
// both devices load the fast-path XDP program and IPLookup mirrors its
// routes into it.
func fastPathConfig(t *testing.T, contract string) string {
	path := xdpConfig(t, contract)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	cfg := string(data)
	if strings.Count(cfg, "fastpath  = true\n") != 2 || !strings.Contains(cfg, "offload = [\"lan\", \"wan\", \"lan\", \"wan\"]\n") {
		t.Fatal("router-veth.toml: no longer a fast path on both devices with IPLookup's offload = [\"lan\", \"wan\", \"lan\", \"wan\"]; update fastPathConfig")
	}
	return path
}

// deviceCounter is a named driver counter of one device.
func deviceCounter(s *pipeline.Snapshot, dev, name string) uint64 {
	for _, d := range s.Devices {
		if d.Device != dev {
			continue
		}
		for _, c := range d.Counters {
			if c.Name == name {
				return c.Value
			}
		}
	}
	return 0
}

// TestFastPath: the router with its in-kernel fast path. What the fast
// path cannot do (ARP, pings to the router, TTL expiry, the first packets
// to an unresolved next hop) still works through the graph; forwarded
// traffic moves the fast path's counters in both directions, and the
// graph sees far fewer IP packets than were forwarded.
func TestFastPath(t *testing.T) {
	tp := newTopo(t, 1)
	// A frame an XDP program redirects into a veth is delivered only if
	// the peer runs in NAPI mode: an XDP program of its own, or GRO on
	// (Linux ≥ 5.13). Real NICs have no such condition.
	for _, ns := range []*netns.NS{tp.cli, tp.srv} {
		ns.MustRun("ethtool", "-K", "eth0", "gro", "on")
	}
	p := tp.start(t, fastPathConfig(t, tp.config))
	const body = "hello through the fast path\n"
	httpServer(t, tp.srv, body)

	pingOK(t, tp.cli, "10.1.0.1")
	pingOK(t, tp.cli, "10.2.0.1")
	pingOK(t, tp.cli, "10.2.0.2")
	pingOK(t, tp.srv, "10.1.0.2")
	out, _ := tp.cli.Run("ping", "-c1", "-W2", "-t1", "10.2.0.2")
	if !strings.Contains(out, "From 10.1.0.1") || !strings.Contains(strings.ToLower(out), "time to live exceeded") {
		t.Errorf("TTL-1 probe: no time exceeded from 10.1.0.1:\n%s", out)
	}
	curlOK(t, tp, body)

	// 200 more pings each way, fast: both next hops are resolved by now.
	before := tp.snapshot(t)
	for _, c := range []struct {
		ns  *netns.NS
		dst string
	}{{tp.cli, "10.2.0.2"}, {tp.srv, "10.1.0.2"}} {
		if out, err := c.ns.Run("ping", "-c200", "-i0.002", "-W2", "-q", c.dst); err != nil || !strings.Contains(out, " 0% packet loss") {
			t.Errorf("ping -c200 %s from %s: %v\n%s", c.dst, c.ns.Name, err, out)
		}
	}
	after := tp.snapshot(t)
	for _, dev := range []string{"lan", "wan"} {
		got := deviceCounter(after, dev, "fastpath_forwarded") - deviceCounter(before, dev, "fastpath_forwarded")
		// 200 requests in from one side and 200 replies from the other.
		if got < 400 {
			t.Errorf("%s: fast path forwarded %d of the 400 echo packets that entered it", dev, got)
		}
	}
	ttl := typePackets(after, "DecTTL") - typePackets(before, "DecTTL")
	if ttl > 40 {
		t.Errorf("the graph decremented the TTL of %d packets out of 800 forwarded: the fast path did not take them", ttl)
	}
	if n := counter(after, "IPLookup", "offload errors"); n != 0 {
		t.Errorf("IPLookup: %d offload errors", n)
	}
	if got := after.Totals.FastPath - before.Totals.FastPath; got < 800 {
		t.Errorf("totals: %d packets through the fast path, want the 800 echo packets", got)
	}
	fout := tp.stop(t, p)
	if !strings.Contains(fout, "fast path: ") {
		t.Errorf("the exit table does not say what the fast path forwarded:\n%s", fout)
	}
	if t.Failed() {
		t.Logf("forwarder output:\n%s", fout)
	}
	tp.noXDP(t)
}

// typePackets sums the packets that entered elements of one type.
func typePackets(s *pipeline.Snapshot, typ string) uint64 {
	var n uint64
	for _, e := range s.Elements {
		if e.Type == typ {
			n += e.Packets
		}
	}
	return n
}

// natFastPathConfig returns the contract NAT gateway config's afxdp
// variant (xdpConfig), checked to have what the XDP fast path's tests
// rely on: both devices load the fast-path XDP program and both
// FastTracks (one in the compound side, used for lan and wan) hand
// their flows to it.
func natFastPathConfig(t *testing.T, contract string) string {
	path := xdpConfig(t, contract)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	cfg := string(data)
	ft := "[compounds.side.elements.ft]\ntype    = \"FastTrack\"\n"
	if strings.Count(cfg, "fastpath  = true\n") != 2 || strings.Count(cfg, ft) != 1 || strings.Count(cfg, "offload = [\"lan\", \"wan\"]\n") != 1 ||
		!strings.Contains(cfg, `"lan :: side(lan,`) || !strings.Contains(cfg, `"wan :: side(wan,`) {
		t.Fatal("nat-gateway.toml: no longer a fast path on both devices with both FastTracks offloading; update natFastPathConfig")
	}
	return path
}

// TestNATGatewayFastPath: the NAT gateway with FastTrack offloaded to the
// in-kernel fast path: DNAT and SNAT work as with the contract config; the
// one-way UDP stream through DNAT is fast-tracked, and most of it by the
// kernel (the device counters and FastTrack's "offloaded packets" move);
// an SNAT'd TCP transfer runs through it too.
func TestNATGatewayFastPath(t *testing.T) {
	netns.RequireTool(t, "curl")
	tp := newNATTopo(t)
	for _, ns := range []*netns.NS{tp.in, tp.ot} {
		ns.MustRun("ethtool", "-K", "eth0", "gro", "on") // see TestFastPath
	}
	tp.config = natFastPathConfig(t, tp.config)
	p := tp.start(t)
	defer func() {
		out := (&topo{}).stop(t, p)
		if t.Failed() {
			t.Logf("forwarder output:\n%s", out)
		}
		(&topo{fwd: tp.fwd}).noXDP(t)
	}()
	pingOK(t, tp.in, natOutside)
	natDNATCurl(t, tp, "inside web server via dnat, fast path\n")

	fw := &topo{fwd: tp.fwd}
	// The offload engages after FastTrack's first packets and the
	// worker's next rounds, which on a loaded machine came after 1050,
	// then 4200, datagrams of a stream sent at 50 a millisecond: a first
	// stream from the same source port starts the flow, and the measured
	// one begins once its offload is installed.
	const lport = 40123
	start := fw.snapshot(t)
	natUDPStreamFrom(t, tp, 200, lport)
	for deadline := time.Now().Add(3 * time.Second); counter(fw.snapshot(t), "FastTrack", "offloaded flows") == counter(start, "FastTrack", "offloaded flows"); {
		if time.Now().After(deadline) {
			t.Fatalf("the one-way UDP flow was not offloaded within 3 s of its first 200 datagrams")
		}
		time.Sleep(20 * time.Millisecond)
	}
	before := fw.snapshot(t)
	// 6000 datagrams of the offloaded flow: at least half of them are
	// the kernel's (all of them, but for an offload that ends meanwhile).
	const n = 6000
	natUDPStreamFrom(t, tp, n, lport)
	after := fw.snapshot(t)
	off := counter(after, "FastTrack", "offloaded packets") - counter(before, "FastTrack", "offloaded packets")
	kern := deviceCounter(after, "wan", "fastpath_forwarded") - deviceCounter(before, "wan", "fastpath_forwarded")
	t.Logf("UDP stream: FastTrack offloaded %d packets; wan's fast path forwarded %d", off, kern)
	if off < n/2 || kern < off {
		t.Errorf("one-way DNAT'd UDP: %d packets offloaded (want at least half of %d), the kernel forwarded %d", off, n, kern)
	}
	if n := counter(after, "FastTrack", "offload errors"); n != 0 {
		t.Errorf("FastTrack: %d offload errors", n)
	}

	netns.RequireTool(t, "iperf3")
	natIperf(t, tp)
	end := fw.snapshot(t)
	if tcp := deviceCounter(end, "lan", "fastpath_forwarded") - deviceCounter(after, "lan", "fastpath_forwarded"); tcp < 1000 {
		t.Errorf("SNAT'd iperf3 TCP: the lan fast path forwarded %d packets", tcp)
	}
}

// TestFastPathKernelRoutes: with source = "kernel", routes that `ip route`
// adds and deletes in the forwarder's namespace reach the in-kernel fast
// path too: a destination behind a new route is forwarded by XDP (its
// counter moves), and once the route is deleted it is not forwarded at all.
func TestFastPathKernelRoutes(t *testing.T) {
	tp := newTopo(t, 1)
	for _, ns := range []*netns.NS{tp.cli, tp.srv} {
		ns.MustRun("ethtool", "-K", "eth0", "gro", "on") // see TestFastPath
	}
	tp.srv.MustRun("ip", "addr", "add", "10.16.0.5/32", "dev", "eth0")
	tp.fwd.MustRun("ip", "route", "add", "10.1.0.0/24", "dev", "lan0")
	tp.fwd.MustRun("ip", "route", "add", "10.2.0.0/24", "dev", "wan0")
	cfg := kernelTableConfig(t, fastPathConfig(t, tp.config), `["lan", "wan"]`)
	p := tp.start(t, cfg)
	defer func() {
		out := tp.stop(t, p)
		if t.Failed() {
			t.Logf("forwarder output:\n%s", out)
		}
		tp.noXDP(t)
	}()
	pingOK(t, tp.cli, "10.2.0.2")
	if _, err := tp.cli.Run("ping", "-c1", "-W1", "10.16.0.5"); err == nil {
		t.Fatal("10.16.0.5 answered before any route to it")
	}
	fwd := func() uint64 { return deviceCounter(tp.snapshot(t), "lan", "fastpath_forwarded") }

	tp.fwd.MustRun("ip", "route", "add", "10.16.0.0/12", "via", "10.2.0.2", "dev", "wan0", "onlink")
	deadline := time.Now().Add(3 * time.Second)
	for {
		if _, err := tp.cli.Run("ping", "-c1", "-W1", "10.16.0.5"); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("10.16.0.5 unreachable 3 s after its route was added")
		}
	}
	before := fwd()
	if out, err := tp.cli.Run("ping", "-c100", "-i0.002", "-W1", "-q", "10.16.0.5"); err != nil || !strings.Contains(out, " 0% packet loss") {
		t.Errorf("ping 10.16.0.5 over the new route: %v\n%s", err, out)
	}
	if got := fwd() - before; got < 100 {
		t.Errorf("the fast path forwarded %d of 100 echo requests over the new route", got)
	}

	tp.fwd.MustRun("ip", "route", "del", "10.16.0.0/12")
	time.Sleep(200 * time.Millisecond) // the graph follows at once, the fast path within ~10 ms
	before = fwd()
	if out, err := tp.cli.Run("ping", "-c20", "-i0.01", "-W1", "-q", "10.16.0.5"); err == nil || strings.Contains(out, " 0% packet loss") {
		t.Errorf("10.16.0.5 still answers after its route was deleted:\n%s", out)
	}
	if got := fwd() - before; got != 0 {
		t.Errorf("the fast path forwarded %d packets by a deleted route", got)
	}
}
