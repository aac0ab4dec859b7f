package e2e

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/junction-dataplane/junction/internal/netns"
	"github.com/junction-dataplane/junction/pipeline"
)

// The topology of every test (addresses as configs/router-veth.toml says):
//
//	cli (eth0 10.1.0.2) ── lan0 [fwd: forwarder] wan0 ── (eth0 10.2.0.2) srv
//
// The forwarder namespace has no addresses of its own in the kernel: the
// forwarder answers ARP and ping for 10.1.0.1 and 10.2.0.1 itself.

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
	binDir    string
)

// forwarderBin builds ./cmd/forwarder once per test binary
// ($JUNCTION_FORWARDER names a prebuilt one instead).
func forwarderBin(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		if p := os.Getenv("JUNCTION_FORWARDER"); p != "" {
			binPath = p
			return
		}
		binDir, buildErr = os.MkdirTemp("", "junction-e2e-")
		if buildErr != nil {
			return
		}
		binPath = filepath.Join(binDir, "forwarder")
		out, err := exec.Command("go", "build", "-o", binPath, "github.com/junction-dataplane/junction/cmd/forwarder").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build: %v: %s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

func TestMain(m *testing.M) {
	code := m.Run()
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	os.Exit(code)
}

// configPath is configs/router-veth.toml, relative to this package.
func configPath(t *testing.T) string {
	p, err := filepath.Abs("../../../configs/router-veth.toml")
	if err != nil {
		t.Fatal(err)
	}
	return p
}

type topo struct {
	env           *netns.Env
	cli, fwd, srv *netns.NS
	bin, config   string
	proc          *netns.Proc
}

func requireAll(t *testing.T) {
	netns.RequireRoot(t)
	for _, tool := range []string{"ping", "ethtool", "go"} {
		netns.RequireTool(t, tool)
	}
}

// newTopo builds the three namespaces and two veth pairs with queues RX/TX
// queues each.
func newTopo(t *testing.T, queues int) *topo {
	requireAll(t)
	env := netns.New(t)
	tp := &topo{env: env, cli: env.NS("cli"), fwd: env.NS("fwd"), srv: env.NS("srv"),
		bin: forwarderBin(t), config: configPath(t)}
	env.Veth(tp.fwd, "lan0", tp.cli, "eth0", queues)
	env.Veth(tp.fwd, "wan0", tp.srv, "eth0", queues)
	for _, h := range []struct {
		ns       *netns.NS
		addr, gw string
	}{{tp.cli, "10.1.0.2/24", "10.1.0.1"}, {tp.srv, "10.2.0.2/24", "10.2.0.1"}} {
		h.ns.Addr("eth0", h.addr)
		h.ns.Route("default", "via", h.gw)
		// A veth hands the peer its TCP/UDP packets with the checksum
		// left to "hardware" (CHECKSUM_PARTIAL); a forwarder that sees
		// raw frames (AF_XDP, AF_PACKET) would pass on an unfinished
		// checksum. Real NICs finish it on the wire; on veth, the hosts
		// must compute it themselves.
		h.ns.MustRun("ethtool", "-K", "eth0", "tx", "off")
	}
	return tp
}

// start runs the forwarder in the fwd namespace with config (default: the
// contract file) and waits until it answers a ping for 10.1.0.1.
func (tp *topo) start(t *testing.T, config string) *netns.Proc {
	t.Helper()
	if config == "" {
		config = tp.config
	}
	p := tp.fwd.Start(tp.bin, "run", "-config", config, "-quiet")
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-p.Done():
			t.Fatalf("forwarder exited at start: %v\n%s", p.Wait(0), p.Output())
		default:
		}
		if _, err := tp.cli.Run("ping", "-c1", "-W1", "10.1.0.1"); err == nil {
			tp.proc = p
			return p
		}
	}
	t.Fatalf("forwarder does not answer ping for 10.1.0.1 within 15 s:\n%s", p.Output())
	return nil
}

// stop sends SIGINT and waits for a clean exit.
func (tp *topo) stop(t *testing.T, p *netns.Proc) string {
	t.Helper()
	p.Signal(syscall.SIGINT)
	if err := p.Wait(10 * time.Second); err != nil {
		t.Errorf("forwarder exit after SIGINT: %v\n%s", err, p.Output())
	}
	return p.Output()
}

// snapshot reads the forwarder's stats endpoint (loopback of its namespace).
func (tp *topo) snapshot(t *testing.T) *pipeline.Snapshot {
	t.Helper()
	out, err := tp.fwd.Run("curl", "-sf", "--max-time", "10", "http://"+pipeline.DefaultStatsAddr+"/stats")
	if err != nil {
		t.Fatalf("stats endpoint: %v: %s", err, out)
	}
	var s pipeline.Snapshot
	if err := json.Unmarshal([]byte(out), &s); err != nil {
		t.Fatalf("stats JSON: %v: %.200s", err, out)
	}
	return &s
}

// counter sums a named counter of an element type over workers.
func counter(s *pipeline.Snapshot, typ, name string) uint64 {
	return s.CounterSum(name, func(e *pipeline.ElementStats) bool { return e.Type == typ })
}

var xdpRE = regexp.MustCompile(`\bxdp(generic|drv|offload)?\b|prog/xdp`)

// hasXDP reports whether an XDP program is attached to ifn in fwd.
func (tp *topo) hasXDP(t *testing.T, ifn string) (bool, string) {
	out := tp.fwd.MustRun("ip", "-d", "link", "show", "dev", ifn)
	return xdpRE.MatchString(out), out
}

// noXDP fails the test if an XDP program is attached to lan0 or wan0.
func (tp *topo) noXDP(t *testing.T) {
	t.Helper()
	for _, ifn := range []string{"lan0", "wan0"} {
		if has, out := tp.hasXDP(t, ifn); has {
			t.Errorf("%s: an XDP program is still attached:\n%s", ifn, out)
		}
	}
}

// httpServer serves a page from inside the srv namespace on 10.2.0.2:8080.
func httpServer(t *testing.T, ns *netns.NS, body string) {
	t.Helper()
	var ln net.Listener
	if err := ns.Do(func() error {
		var err error
		ln, err = net.Listen("tcp", "10.2.0.2:8080")
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

// pingOK: three echo requests, every reply received. With -w, ping waits
// (up to 6 s) for all three: without it, once one reply has come it waits
// for the others only twice the longest round trip, and under a CPU hog a
// worker waiting for its CPU answers later than that without losing
// anything (docs/testing.md).
func pingOK(t *testing.T, ns *netns.NS, dst string) {
	t.Helper()
	out, err := ns.Run("ping", "-c3", "-i0.2", "-W2", "-w6", dst)
	if err != nil || !strings.Contains(out, " 0% packet loss") {
		t.Errorf("ping %s from %s: %v\n%s", dst, ns.Name, err, out)
	}
}

func curlOK(t *testing.T, tp *topo, body string) {
	t.Helper()
	out, err := tp.cli.Run("curl", "-sf", "--max-time", "5", "http://10.2.0.2:8080/")
	if err != nil || out != body {
		t.Errorf("curl through the forwarder: %v: %q", err, out)
	}
}

// TestRouterVeth: the contract config between real hosts, one queue per
// veth (the afpacket driver reads each device with one fanout socket per
// worker, so with 2 workers the kernel spreads the frames).
func TestRouterVeth(t *testing.T) {
	tp := newTopo(t, 1)
	p := tp.start(t, "")
	const body = "hello through junction\n"
	httpServer(t, tp.srv, body)

	t.Run("ping", func(t *testing.T) {
		pingOK(t, tp.cli, "10.1.0.1") // the gateway itself
		pingOK(t, tp.cli, "10.2.0.1") // its far address
		pingOK(t, tp.cli, "10.2.0.2") // through
		pingOK(t, tp.srv, "10.1.0.2") // and back
	})
	t.Run("ttl exceeded", func(t *testing.T) {
		out, _ := tp.cli.Run("ping", "-c1", "-W2", "-t1", "10.2.0.2")
		if !strings.Contains(out, "From 10.1.0.1") || !strings.Contains(strings.ToLower(out), "time to live exceeded") {
			t.Errorf("TTL-1 probe: no time exceeded from 10.1.0.1:\n%s", out)
		}
		if _, err := exec.LookPath("traceroute"); err == nil {
			// -N1: one probe at a time. Sent together, the hops' probes
			// race, and traceroute gives up on a hop whose answer comes
			// more than 10 times later than a farther hop's (its NEAR
			// factor): a loaded machine showed hop 2 as "*".
			out, err := tp.cli.Run("traceroute", "-n", "-N1", "-q1", "-w2", "-m4", "10.2.0.2")
			lines := strings.Split(strings.TrimSpace(out), "\n")
			if err != nil || len(lines) != 3 || !strings.Contains(lines[1], "10.1.0.1") || !strings.Contains(lines[2], "10.2.0.2") {
				t.Errorf("traceroute: %v\n%s", err, out)
			}
		}
	})
	t.Run("curl", func(t *testing.T) { curlOK(t, tp, body) })
	t.Run("iperf3", func(t *testing.T) {
		rep, out := iperfTo(t, tp.cli, tp.srv, "10.2.0.2", true, "iperf3", "-c", "10.2.0.2", "-t", "2", "-J")
		r := rep.End.SumReceived
		t.Logf("iperf3 TCP through the forwarder: %.1f Mbit/s (%.0f bytes)", r.BitsPerSecond/1e6, r.Bytes)
		if r.BitsPerSecond <= 0 {
			t.Errorf("iperf3: zero throughput (error %q)\n%.3000s", rep.Error, out)
		}
	})
	t.Run("arp", func(t *testing.T) {
		// Nothing was configured: the forwarder resolved both hosts by
		// ARP, and the hosts resolved the gateway from its answers.
		s := tp.snapshot(t)
		if counter(s, "ARPQuerier", "requests") == 0 || counter(s, "ARPQuerier", "learned") == 0 {
			t.Errorf("ARPQuerier sent %d requests, learnt %d", counter(s, "ARPQuerier", "requests"), counter(s, "ARPQuerier", "learned"))
		}
		if counter(s, "ARPResponder", "replies") == 0 {
			t.Errorf("ARPResponder answered nothing")
		}
		out := tp.cli.MustRun("ip", "neigh", "show", "10.1.0.1")
		if !strings.Contains(out, "lladdr") {
			t.Errorf("client has no ARP entry for its gateway: %q", out)
		}
		for _, d := range s.Devices {
			if len(d.Queues) != 2 {
				t.Errorf("%s (%s): %d RX queues, want one per worker (2)", d.Device, d.Driver, len(d.Queues))
			}
		}
	})
	out := tp.stop(t, p)
	if !strings.Contains(out, "worker") {
		t.Errorf("no exit table:\n%s", out)
	}
	tp.noXDP(t)
}

// TestMultiQueue: veths with 2 queues on the afxdp driver (one AF_XDP
// socket per veth queue, spread by the veth's queue choice), 512 UDP
// flows through the router's graph (its fast path off): both workers
// carry traffic and neither more than 60% of it.
func TestMultiQueue(t *testing.T) {
	if runtime.NumCPU() < 2 {
		t.Skip("needs 2 CPUs")
	}
	tp := newTopo(t, 2)
	// The graph's spreading is what is measured: no fast path.
	p := tp.start(t, noFastPathConfig(t, tp.config, "afxdp"))
	defer tp.stop(t, p)
	pingOK(t, tp.cli, "10.2.0.2") // resolves both sides' ARP first
	before := tp.snapshot(t)
	const flows, perFlow = 512, 20
	if err := tp.cli.Do(func() error {
		var conns []*net.UDPConn
		defer func() {
			for _, c := range conns {
				c.Close()
			}
		}()
		for i := 0; i < flows; i++ {
			c, err := net.DialUDP("udp4", nil, &net.UDPAddr{IP: net.IPv4(10, 2, 0, 2), Port: 9})
			if err != nil {
				return err
			}
			conns = append(conns, c)
		}
		msg := make([]byte, 18)
		for r := 0; r < perFlow; r++ {
			for _, c := range conns {
				c.Write(msg)
			}
			time.Sleep(2 * time.Millisecond) // stay below the rings' size
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond)
	after := tp.snapshot(t)
	perWorker := map[int]uint64{}
	var total uint64
	for _, e := range after.Elements {
		if e.Type != "IPLookup" {
			continue
		}
		var prev uint64
		for _, b := range before.Elements {
			if b.Element == e.Element && b.Worker == e.Worker {
				prev = b.Packets
			}
		}
		perWorker[e.Worker] += e.Packets - prev
		total += e.Packets - prev
	}
	t.Logf("routed packets per worker: %v (total %d)", perWorker, total)
	if total < flows*perFlow*9/10 {
		t.Fatalf("only %d of %d packets routed", total, flows*perFlow)
	}
	for w := 0; w < 2; w++ {
		share := float64(perWorker[w]) / float64(total)
		if share == 0 || share > 0.6 {
			t.Errorf("worker %d carried %.0f%% of the traffic", w, 100*share)
		}
	}
}

// TestCleanExit: the afxdp driver (router-veth.toml's afxdp variant,
// xdpConfig): after SIGINT no XDP program is left; after SIGKILL the next
// start replaces the stale one and forwards again.
func TestCleanExit(t *testing.T) {
	tp := newTopo(t, 1)
	cfg := fastPathConfig(t, tp.config)
	p := tp.start(t, cfg)
	pingOK(t, tp.cli, "10.2.0.2")
	tp.stop(t, p)
	tp.noXDP(t)

	p = tp.start(t, cfg)
	// While it runs the program is there (so noXDP can see one).
	if has, out := tp.hasXDP(t, "lan0"); !has {
		t.Errorf("no XDP program seen on a running forwarder:\n%s", out)
	}
	p.Signal(syscall.SIGKILL)
	p.Wait(5 * time.Second)
	if has, _ := tp.hasXDP(t, "lan0"); has {
		t.Logf("a stale XDP program is left after SIGKILL; the restart must replace it")
	}
	p = tp.start(t, cfg)
	pingOK(t, tp.cli, "10.2.0.2")
	tp.stop(t, p)
	tp.noXDP(t)
}

// TestAfpacket: the same router on the afpacket driver without its fast
// path (the graph forwards everything).
func TestAfpacket(t *testing.T) {
	requireAll(t)
	out, err := exec.Command(forwarderBin(t), "drivers").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "afpacket") {
		t.Skipf("no afpacket driver in this build: %s", out)
	}
	tp := newTopo(t, 1)
	p := tp.start(t, noFastPathConfig(t, tp.config, "afpacket"))
	const body = "hello over afpacket\n"
	httpServer(t, tp.srv, body)
	pingOK(t, tp.cli, "10.2.0.2")
	pingOK(t, tp.srv, "10.1.0.2")
	curlOK(t, tp, body)
	fout := tp.stop(t, p)
	if t.Failed() {
		t.Logf("forwarder output:\n%s", fout)
	}
}

// iperfTo starts an iperf3 server bound to srvAddr in srv and runs the
// client in cli with "-c srvAddr -J" and args. A run that could not reach
// the server (it needs a moment to listen) is tried again, up to 20
// times; with retryFailed, so is any other failed run.
func iperfTo(t *testing.T, cli, srv *netns.NS, srvAddr string, retryFailed bool, args ...string) (rep iperfReport, out string) {
	t.Helper()
	netns.RequireTool(t, "iperf3")
	s := srv.Start("iperf3", "-s", "-B", srvAddr)
	defer s.Kill()
	for i := 0; i < 20; i++ {
		var err error
		out, err = cli.Run(args[0], args[1:]...)
		rep = iperfReport{}
		if jerr := json.Unmarshal([]byte(out), &rep); jerr == nil && err == nil && rep.Error == "" {
			break
		}
		if !retryFailed && !strings.Contains(out, "unable to connect") && !strings.Contains(out, "Connection refused") {
			break
		}
		time.Sleep(150 * time.Millisecond)
	}
	return rep, out
}
