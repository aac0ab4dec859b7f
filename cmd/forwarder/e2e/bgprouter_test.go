package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/junction-dataplane/junction/internal/netns"
	"github.com/junction-dataplane/junction/pipeline"
)

// The tests of configs/bgp-router.toml: the topology of every test (cli on
// lan0, srv on wan0), with the forwarder namespace's kernel reaching the
// wire through the twins lan0h and wan0h, and real daemons beside the
// forwarder: BIRD 2 in the forwarder's namespace peering with BIRD 2 in
// srv, dnsmasq serving the LAN, a web server on the router's addresses.
// Every daemon runs with its config, socket and state in a temporary
// directory and is killed at cleanup.

// bgpConfigPath is configs/bgp-router.toml, relative to this package.
func bgpConfigPath(t *testing.T) string {
	p, err := filepath.Abs("../../../configs/bgp-router.toml")
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// answeredOnce pings dst from ns and fails the test unless every echo
// got exactly one reply: the graph's. The namespace's kernel holds the
// router's addresses (on the twins) and, if the port's stack took the
// frames the fast path in TC leaves to the packet sockets, would answer
// from the port as well (a DUP! each; the TC program marks those frames
// PACKET_OTHERHOST so that it does not).
func answeredOnce(t *testing.T, ns *netns.NS, dst string) {
	t.Helper()
	args := []string{"-c5", "-i0.2", "-W2", "-w8", dst}
	if strings.Contains(dst, ":") {
		args = append([]string{"-6"}, args...)
	}
	out, err := ns.Run("ping", args...)
	if err != nil || !strings.Contains(out, " 0% packet loss") || strings.Contains(out, "DUP!") || strings.Contains(out, "duplicates") {
		t.Errorf("ping %s from %s: want each echo answered once: %v\n%s", dst, ns.Name, err, out)
	}
}

// newBGPTopo starts the forwarder with bgp-router.toml (changed by edit,
// if not nil) and a control socket, which it returns, and waits for its
// twins. The srv host also holds 10.16.0.5 (on its loopback), the
// destination behind the route it announces.
func newBGPTopo(t *testing.T, edit func(string) string) (*topo, string) {
	t.Helper()
	netns.RequireTool(t, "bird")
	netns.RequireTool(t, "birdc")
	tp := newTopo(t, 1)
	tp.config = bgpConfigPath(t)
	if edit != nil {
		data, err := os.ReadFile(tp.config)
		if err != nil {
			t.Fatal(err)
		}
		tp.config = filepath.Join(t.TempDir(), "bgp-router.toml")
		if err := os.WriteFile(tp.config, []byte(edit(string(data))), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	tp.srv.MustRun("ip", "addr", "add", "10.16.0.5/32", "dev", "lo")
	p, sock := startCtl(t, tp.fwd, tp.bin, tp.config, tp.cli, "10.1.0.1")
	tp.proc = p
	t.Cleanup(func() {
		out := tp.stop(t, p)
		if t.Failed() {
			t.Logf("forwarder output:\n%s", out)
		}
	})
	for _, twin := range []string{"lan0h", "wan0h"} {
		waitFor(t, 5*time.Second, twin+" up", func() (bool, string) {
			out, _ := tp.fwd.Run("ip", "-o", "link", "show", twin)
			return strings.Contains(out, "LOWER_UP"), out
		})
	}
	return tp, sock
}

// neighboursAgree checks that the kernel (on twin) and the forwarder (on
// device) know ip at the same MAC, want.
func neighboursAgree(t *testing.T, tp *topo, sock, ip, twin, device, want string) {
	t.Helper()
	out := tp.fwd.MustRun("ip", "neigh", "show", ip, "dev", twin)
	if !regexp.MustCompile(`lladdr ` + want + ` (REACHABLE|STALE|DELAY|PROBE)`).MatchString(out) {
		t.Errorf("the kernel's neighbour %s on %s: %q, want %s", ip, twin, out, want)
	}
	var ns []struct {
		Addr   string `json:"addr"`
		MAC    string `json:"mac"`
		Device string `json:"device"`
	}
	fwdctlJSON(t, tp.bin, sock, &ns, "show", "neighbors")
	for _, n := range ns {
		if n.Addr == ip && n.Device == device {
			if n.MAC != want {
				t.Errorf("the forwarder's neighbour %s on %s: %s, want %s", ip, device, n.MAC, want)
			}
			return
		}
	}
	t.Errorf("the forwarder has no neighbour %s on %s: %+v", ip, device, ns)
}

// waitFor polls ok every 50 ms until it holds, failing the test with its
// last output after d.
func waitFor(t *testing.T, d time.Duration, what string, ok func() (bool, string)) {
	t.Helper()
	var last string
	for deadline := time.Now().Add(d); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		var done bool
		if done, last = ok(); done {
			return
		}
	}
	t.Fatalf("%s: not within %v; last:\n%s", what, d, last)
}

// bird is one BIRD 2 daemon in a namespace.
type bird struct {
	ns   *netns.NS
	sock string
	proc *netns.Proc
}

// startBird runs BIRD in the foreground in ns with config conf, its
// socket in a temporary directory.
func startBird(t *testing.T, ns *netns.NS, conf string) *bird {
	t.Helper()
	dir := t.TempDir()
	cf := filepath.Join(dir, "bird.conf")
	if err := os.WriteFile(cf, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	b := &bird{ns: ns, sock: filepath.Join(dir, "bird.ctl")}
	b.proc = ns.Start("bird", "-f", "-c", cf, "-s", b.sock)
	t.Cleanup(func() {
		b.proc.Kill()
		if t.Failed() {
			t.Logf("bird in %s:\n%s", ns.Name, b.proc.Output())
		}
	})
	return b
}

func (b *bird) ctl(args ...string) (string, error) {
	return b.ns.Run("birdc", append([]string{"-s", b.sock}, args...)...)
}

// sessionSince is the time BIRD's protocol name entered its state and
// whether that state is Established.
var protoLine = regexp.MustCompile(`(?m)^(\S+)\s+BGP\s+\S+\s+(\S+)\s+(\S+(?: \S+)?)\s+(\S+)\s*$`)

func (b *bird) session(name string) (since string, established bool, out string) {
	out, err := b.ctl("show", "protocols", name)
	if err != nil {
		return "", false, fmt.Sprintf("birdc: %v: %s", err, out)
	}
	for _, m := range protoLine.FindAllStringSubmatch(out, -1) {
		if m[1] == name {
			return m[3], m[2] == "up" && m[4] == "Established", out
		}
	}
	return "", false, out
}

// The BFD and BGP timers of the BIRD sessions: a 9 s hold time, BFD at
// 300 ms × 10 (3 s), and a quick restart after an error.
const (
	birdBFD    = "protocol bfd { interface \"*\" { min rx interval 300 ms; min tx interval 300 ms; multiplier 10; }; }\n"
	birdTimers = "hold time 9; keepalive time 3; connect retry time 1; error wait time 1, 5;"
)

// bgpHosts gives the hosts their IPv6 addresses (cli 2001:db8:1::2, srv
// 2001:db8:2::2 and 2001:db8:16::5) and starts BIRD in srv (AS 65002),
// announcing 10.16.0.0/12 and 2001:db8:16::/48 (protocols s16 and s16v6)
// to the router (AS 65001) over an IPv4 and an IPv6 session, with BFD if
// bfd (BIRD's bfd protocol: birdBFD, ...) is not empty.
func bgpHosts(t *testing.T, tp *topo, bfd string) *bird {
	t.Helper()
	addr6(t, tp.cli, "2001:db8:1::2/64", "2001:db8:1::1")
	addr6(t, tp.srv, "2001:db8:2::2/64", "2001:db8:2::1")
	tp.srv.MustRun("ip", "-6", "addr", "add", "2001:db8:16::5/128", "dev", "lo")
	timers, bfdProto := birdTimers, ""
	if bfd != "" {
		timers, bfdProto = birdTimers+" bfd on;", bfd
	}
	return startBird(t, tp.srv, `log stderr all;
router id 10.2.0.2;
protocol device { scan time 1; }
protocol static s16 { ipv4; route 10.16.0.0/12 unreachable; }
protocol static s16v6 { ipv6; route 2001:db8:16::/48 unreachable; }
`+bfdProto+`protocol bgp r1 {
  local 10.2.0.2 as 65002; neighbor 10.2.0.1 as 65001; `+timers+`
  ipv4 { import none; export all; };
}
protocol bgp r1v6 {
  local 2001:db8:2::2 as 65002; neighbor 2001:db8:2::1 as 65001; `+timers+`
  ipv6 { import none; export all; };
}
`)
}

// startUplinks starts BIRD in the router's namespace ns (AS 65001,
// routes into the kernel's main table; extra: more of its config) with
// its two sessions to bgpHosts' BIRD on the WAN, IPv4 ("uplink") and
// IPv6 ("uplink6"), each with timers, and waits until both are
// established.
func startUplinks(t *testing.T, ns *netns.NS, extra, timers string) *bird {
	t.Helper()
	b := startBird(t, ns, `log stderr all;
router id 10.2.0.1;
protocol device { scan time 1; }
protocol kernel k4 { ipv4 { import none; export all; }; }
protocol kernel k6 { ipv6 { import none; export all; }; }
`+extra+`protocol bgp uplink {
  local 10.2.0.1 as 65001; neighbor 10.2.0.2 as 65002; `+timers+`
  ipv4 { import all; export none; };
}
protocol bgp uplink6 {
  local 2001:db8:2::1 as 65001; neighbor 2001:db8:2::2 as 65002; `+timers+`
  ipv6 { import all; export none; };
}
`)
	for _, name := range []string{"uplink", "uplink6"} {
		waitFor(t, 30*time.Second, "BGP session "+name+" established", func() (bool, string) {
			_, up, out := b.session(name)
			return up, out
		})
	}
	return b
}

// birdPeers starts bgpHosts' BIRD and the router's (startUplinks), both
// sessions with BFD, and waits for the sessions and BFD.
func birdPeers(t *testing.T, tp *topo) (router, peer *bird) {
	t.Helper()
	peer = bgpHosts(t, tp, birdBFD)
	router = startUplinks(t, tp.fwd, birdBFD, birdTimers+" bfd on;")
	waitFor(t, 10*time.Second, "BFD sessions up", func() (bool, string) {
		out, _ := router.ctl("show", "bfd", "sessions")
		return strings.Count(out, " Up ") == 2, out
	})
	return router, peer
}

// bgpLoad runs iperf3 (8 streams) from the client to 10.16.0.5, through
// the route learnt from the peer by (BGP, FRR), for JUNCTION_BGP_SECONDS
// (30 s by default), fails the test if nothing got through, and returns
// the seconds.
func bgpLoad(t *testing.T, tp *topo, by string) int {
	t.Helper()
	secs := 30
	if s, err := strconv.Atoi(os.Getenv("JUNCTION_BGP_SECONDS")); err == nil && s > 0 {
		secs = s
	}
	rep, out := iperfTo(t, tp.cli, tp.srv, "10.16.0.5", true, "iperf3", "-c", "10.16.0.5",
		"-t", strconv.Itoa(secs), "-P", "8", "-J", "--connect-timeout", "2000")
	r := rep.End.SumReceived
	t.Logf("iperf3 to the %s-learned 10.16.0.5, %d s, 8 streams: %.1f Mbit/s", by, secs, r.BitsPerSecond/1e6)
	if r.BitsPerSecond <= 0 {
		t.Errorf("iperf3 through the %s route: no throughput (%q)\n%.2000s", by, rep.Error, out)
	}
	return secs
}

// kernelRoute waits until the router's kernel has (or, with want false,
// no longer has) a route for prefix.
func kernelRoute(t *testing.T, tp *topo, prefix string, want bool) {
	t.Helper()
	waitFor(t, 10*time.Second, fmt.Sprintf("kernel route %s present=%v", prefix, want), func() (bool, string) {
		family := "-4"
		if strings.Contains(prefix, ":") {
			family = "-6"
		}
		out := tp.fwd.MustRun("ip", family, "route", "show", prefix)
		return strings.Contains(out, "wan0h") == want, out
	})
}

// routed waits until dst answers a ping from ns (reachable) or stops
// answering: the forwarder follows the kernel's table within milliseconds
// on a quiet machine, later on a loaded one.
func routed(t *testing.T, ns *netns.NS, dst string, reachable bool) {
	t.Helper()
	waitFor(t, 5*time.Second, fmt.Sprintf("%s reachable=%v", dst, reachable), func() (bool, string) {
		out, err := ns.Run("ping", "-c1", "-W1", dst)
		return (err == nil) == reachable, out
	})
}

// TestBGPRouter: BIRD in the router's namespace peers with BIRD in srv
// over the forwarded WAN link; the session stays established through an
// iperf3 load through the router; the route it learns is forwarded by
// the graph and offloaded to the fast path in TC, which carries the load
// (kernelRouteOffloaded), and once withdrawn it is not; the router's
// addresses are answered once each, by the graph (not by the kernel from
// the ports as well); the kernel's
// neighbour entry for the peer is resolved (it sees the ARP replies);
// the router's own addresses answer TCP from both sides, over IPv4 and
// IPv6 (the kernel resolves the LAN host by neighbour discovery through
// the twin); a WAN link failure reaches BIRD through the twin's carrier.
func TestBGPRouter(t *testing.T) {
	tp, sock := newBGPTopo(t, nil)
	router, peer := birdPeers(t, tp)
	since, _, _ := router.session("uplink")
	since6, _, _ := router.session("uplink6")

	kernelRoute(t, tp, "10.16.0.0/12", true)
	kernelRoute(t, tp, "2001:db8:16::/48", true)
	routed(t, tp.cli, "10.16.0.5", true)
	pingOK(t, tp.cli, "10.16.0.5")
	ping6OK(t, tp.cli, "2001:db8:16::5")

	t.Run("router addresses", func(t *testing.T) {
		// Answered by the graph, and only by it: not by the kernel
		// from the port as well (answeredOnce).
		for _, dst := range []string{"10.1.0.1", "10.2.0.1", "2001:db8:1::1", "2001:db8:2::1"} {
			answeredOnce(t, tp.cli, dst)
		}
		const body = "the router itself\n"
		serveHTTP(t, tp.fwd, "10.1.0.1:8080", body)
		natCurl(t, tp.cli, "http://10.1.0.1:8080/", body)
		natCurl(t, tp.srv, "http://10.1.0.1:8080/", body)
		httpServer6(t, tp.fwd, "2001:db8:1::1", 8081, body)
		natCurl(t, tp.cli, "http://[2001:db8:1::1]:8081/", body)
	})

	// Both neighbour tables learnt the BGP peer (IPv4) and the LAN host
	// (IPv6, which the kernel resolved to answer it) from the same frames.
	t.Run("neighbours", func(t *testing.T) {
		neighboursAgree(t, tp, sock, "10.2.0.2", "wan0h", "wan", tp.srv.MAC("eth0").String())
		neighboursAgree(t, tp, sock, "2001:db8:1::2", "lan0h", "lan", tp.cli.MAC("eth0").String())
		// An entry only the kernel has (an operator's) is mirrored into
		// the forwarder's tables by KernelNeighbors.
		tp.fwd.MustRun("ip", "neigh", "add", "10.2.0.77", "lladdr", "02:00:00:00:02:77", "dev", "wan0h", "nud", "permanent")
		tp.fwd.MustRun("ip", "-6", "neigh", "add", "2001:db8:2::77", "lladdr", "02:00:00:00:02:78", "dev", "wan0h", "nud", "permanent")
		for ip, mac := range map[string]string{"10.2.0.77": "02:00:00:00:02:77", "2001:db8:2::77": "02:00:00:00:02:78"} {
			waitFor(t, 3*time.Second, "the kernel's "+ip+" in the forwarder's table", func() (bool, string) {
				_, out := fwdctl(t, tp.bin, sock, "show", "neighbors", "-format", "json")
				return strings.Contains(out, `"addr":"`+ip+`","mac":"`+mac+`"`), out
			})
		}
	})

	t.Run("under load", func(t *testing.T) {
		before := tp.snapshot(t)
		secs := bgpLoad(t, tp, "BGP")
		for _, sess := range []struct{ name, since string }{{"uplink", since}, {"uplink6", since6}} {
			if now, up, st := router.session(sess.name); !up || !sameSince(now, sess.since) {
				t.Errorf("BGP session %s after %d s of load: established %v, since %q (was %q):\n%s", sess.name, secs, up, now, sess.since, st)
			}
		}
		s := tp.snapshot(t)
		t.Logf("HostPunt: punted routing %d, neighbor %d, other %d; over rate: routing %d, neighbor %d",
			counter(s, "HostPunt", "punted routing"), counter(s, "HostPunt", "punted neighbor"),
			counter(s, "HostPunt", "punted other"), counter(s, "HostPunt", "routing over rate"),
			counter(s, "HostPunt", "neighbor over rate"))
		if counter(s, "HostPunt", "punted routing") == 0 || counter(s, "HostPunt", "routing over rate") != 0 {
			t.Errorf("HostPunt: BGP punted %d, dropped %d", counter(s, "HostPunt", "punted routing"), counter(s, "HostPunt", "routing over rate"))
		}
		kernelRouteOffloaded(t, before, s)
	})

	t.Run("withdrawn", func(t *testing.T) {
		if out, err := peer.ctl("disable", "s16"); err != nil {
			t.Fatalf("birdc disable s16: %v: %s", err, out)
		}
		kernelRoute(t, tp, "10.16.0.0/12", false)
		routed(t, tp.cli, "10.16.0.5", false)
		if out, err := tp.cli.Run("ping", "-c5", "-i0.1", "-W1", "10.16.0.5"); err == nil || !strings.Contains(out, "100% packet loss") {
			t.Errorf("10.16.0.5 still reached after its route was withdrawn:\n%s", out)
		}
		if out, err := peer.ctl("enable", "s16"); err != nil {
			t.Fatalf("birdc enable s16: %v: %s", err, out)
		}
		kernelRoute(t, tp, "10.16.0.0/12", true)
		routed(t, tp.cli, "10.16.0.5", true)
		pingOK(t, tp.cli, "10.16.0.5")
		ping6OK(t, tp.cli, "2001:db8:16::5") // the IPv6 route stayed
	})

	// The WAN link fails: the twin's carrier follows the port's within
	// the second, BIRD drops the sessions (BFD, at the latest) and
	// withdraws the route; when the link returns, so does everything.
	t.Run("link down", func(t *testing.T) {
		tp.srv.MustRun("ip", "link", "set", "eth0", "down")
		waitFor(t, 2*time.Second, "wan0h without carrier", func() (bool, string) {
			out := tp.fwd.MustRun("ip", "-o", "link", "show", "wan0h")
			return strings.Contains(out, "NO-CARRIER"), out
		})
		waitFor(t, 10*time.Second, "BGP session down", func() (bool, string) {
			_, up, out := router.session("uplink")
			return !up, out
		})
		kernelRoute(t, tp, "10.16.0.0/12", false)
		tp.srv.MustRun("ip", "link", "set", "eth0", "up")
		// The link's routes went with it, and its IPv6 address (Linux
		// flushes them on link down); the host's default routes come
		// back once its addresses are usable again.
		tp.srv.MustRun("ip", "-6", "addr", "replace", "2001:db8:2::2/64", "dev", "eth0", "nodad")
		for _, fam := range []struct{ flag, gw string }{{"-4", "10.2.0.1"}, {"-6", "2001:db8:2::1"}} {
			waitFor(t, 5*time.Second, "srv default route "+fam.flag, func() (bool, string) {
				out, err := tp.srv.Run("ip", fam.flag, "route", "replace", "default", "via", fam.gw)
				return err == nil, out
			})
		}
		waitFor(t, 30*time.Second, "BGP session back", func() (bool, string) {
			_, up, out := router.session("uplink")
			return up, out
		})
		kernelRoute(t, tp, "10.16.0.0/12", true)
		routed(t, tp.cli, "10.16.0.5", true)
		pingOK(t, tp.cli, "10.16.0.5")
	})
}

// kernelRouteOffloaded checks, over bgpLoad's run between snapshots
// before and after, that the route BIRD or FRR installed in the kernel
// reached the fast path in TC (the table's offload): both ports run it
// (fastpath "tc", as "auto" picks on a veth), and the TC program on lan
// forwarded most of the load's frames to the route's next hop, the graph
// seeing fewer of them than it did (a GSO packet is one frame), and the
// one on wan the replies.
func kernelRouteOffloaded(t *testing.T, before, after *pipeline.Snapshot) {
	t.Helper()
	for _, d := range after.Devices {
		if d.Device != "lan" && d.Device != "wan" {
			continue
		}
		mode := ""
		for _, m := range d.Modes {
			if m.Name == "fastpath" {
				mode = m.Value
			}
		}
		if mode != "tc" {
			t.Errorf("%s (%s): fast path %q, want tc: %+v", d.Device, d.Driver, mode, d.Modes)
		}
	}
	delta := func(dev, name string) uint64 {
		return deviceCounter(after, dev, name) - deviceCounter(before, dev, name)
	}
	fwd, graph := delta("lan", "fastpath_forwarded"), delta("lan", "rx_packets")
	t.Logf("during the load: lan's TC program forwarded %d frames (%d bytes), its sockets took %d; wan's forwarded %d",
		fwd, delta("lan", "fastpath_forwarded_bytes"), graph, delta("wan", "fastpath_forwarded"))
	if fwd < 1000 || fwd < graph {
		t.Errorf("the kernel's route is not offloaded: lan's TC program forwarded %d frames of the load, the graph received %d", fwd, graph)
	}
	if delta("wan", "fastpath_forwarded") < 1000 {
		t.Errorf("wan's TC program forwarded %d frames of the load's replies", delta("wan", "fastpath_forwarded"))
	}
}

// TestBGPRouterDHCP: dnsmasq on the router's LAN twin hands the LAN host
// a lease (udhcpc: DISCOVER, OFFER, REQUEST, ACK through the forwarder)
// and answers its DNS queries.
func TestBGPRouterDHCP(t *testing.T) {
	netns.RequireTool(t, "dnsmasq")
	netns.RequireTool(t, "udhcpc")
	tp, _ := newBGPTopo(t, nil)
	dir := t.TempDir()
	leases := filepath.Join(dir, "leases")
	d := tp.fwd.Start("dnsmasq", "--conf-file=/dev/null", "--no-daemon", "--log-dhcp", "--log-queries",
		"--interface=lan0h", "--bind-interfaces", "--except-interface=lo",
		"--dhcp-range=10.1.0.100,10.1.0.150,1h", "--dhcp-leasefile="+leases,
		"--pid-file="+filepath.Join(dir, "pid"), "--no-resolv", "--no-hosts",
		"--address=/router.lan/10.1.0.1")
	t.Cleanup(func() {
		d.Kill()
		if t.Failed() {
			t.Logf("dnsmasq:\n%s", d.Output())
		}
	})
	out, err := tp.cli.Run("udhcpc", "-i", "eth0", "-f", "-q", "-n", "-t", "5", "-T", "2", "-s", "/bin/true")
	m := regexp.MustCompile(`lease of (10\.1\.0\.\d+) obtained`).FindStringSubmatch(out)
	if err != nil || m == nil {
		t.Fatalf("udhcpc: %v:\n%s", err, out)
	}
	mac := tp.cli.MAC("eth0").String()
	data, _ := os.ReadFile(leases)
	if !strings.Contains(string(data), mac) || !strings.Contains(string(data), m[1]) {
		t.Errorf("dnsmasq's leases lack %s at %s:\n%s", m[1], mac, data)
	}
	t.Logf("lease %s for %s", m[1], mac)

	if out, err := tp.cli.Run("python3", "-c", `import socket,struct
q=struct.pack(">HHHHHH",0x1234,0x0100,1,0,0,0)+b"\x06router\x03lan\x00"+struct.pack(">HH",1,1)
s=socket.socket(socket.AF_INET,socket.SOCK_DGRAM); s.settimeout(3); s.sendto(q,("10.1.0.1",53))
r=s.recv(512); print(socket.inet_ntoa(r[-4:]))`); err != nil || strings.TrimSpace(out) != "10.1.0.1" {
		t.Errorf("DNS query for router.lan to 10.1.0.1: %v: %q", err, out)
	}
}

// sameSince reports whether two of BIRD's "since" times (HH:MM:SS.mmm)
// name one state change: BIRD prints one change a millisecond apart from
// one read to the next (it derives the time from a relative clock), while
// a flap moves it by its duration.
func sameSince(a, b string) bool {
	ta, ea := time.Parse("15:04:05.000", a)
	tb, eb := time.Parse("15:04:05.000", b)
	if ea != nil || eb != nil {
		return a == b
	}
	d := ta.Sub(tb)
	return d > -50*time.Millisecond && d < 50*time.Millisecond
}
