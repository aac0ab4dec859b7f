package e2e

import (
	"encoding/json"
	"net/netip"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/gopacket/layers"

	"github.com/junction-dataplane/junction/internal/netns"
	"github.com/junction-dataplane/junction/internal/pcaptest"
)

// The control socket against real hosts: the forwarder runs in its
// namespace with -control in a temporary directory, and the client
// commands run in the test's namespace (a unix socket is reached by its
// path, whatever the network namespace).

// startCtl runs the forwarder on config with a control socket and waits
// until it answers ping for pingDst from ns.
func startCtl(t *testing.T, fwd *netns.NS, bin, config string, ns *netns.NS, pingDst string) (*netns.Proc, string) {
	t.Helper()
	sock := filepath.Join(t.TempDir(), "fwd.sock")
	p := fwd.Start(bin, "run", "-config", config, "-quiet", "-control", sock)
	deadline := time.Now().Add(15 * time.Second)
	for {
		select {
		case <-p.Done():
			t.Fatalf("forwarder exited at start: %v\n%s", p.Wait(0), p.Output())
		default:
		}
		if _, err := ns.Run("ping", "-c1", "-W1", pingDst); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("forwarder does not answer ping for %s within 15 s:\n%s", pingDst, p.Output())
		}
	}
	return p, sock
}

// fwdctl runs a client command and returns its exit status and output.
func fwdctl(t *testing.T, bin, sock string, args ...string) (int, string) {
	t.Helper()
	full := append([]string{args[0], "-control", sock}, args[1:]...)
	out, err := exec.Command(bin, full...).CombinedOutput()
	code := 0
	if err != nil {
		ee, ok := err.(*exec.ExitError)
		if !ok {
			t.Fatalf("%v: %v", args, err)
		}
		code = ee.ExitCode()
	}
	return code, string(out)
}

func fwdctlJSON(t *testing.T, bin, sock string, v any, args ...string) {
	t.Helper()
	code, out := fwdctl(t, bin, sock, append(args, "-format", "json")...)
	if code != 0 {
		t.Fatalf("%v: exit %d: %s", args, code, out)
	}
	if err := json.Unmarshal([]byte(out), v); err != nil {
		t.Fatalf("%v: %v in %q", args, err, out)
	}
}

// TestControlRouter: on the contract router between real hosts, `route
// add` (without naming a table or element: the graph has one table, which
// rt and rte read) makes a ping succeed that failed before (and `route
// del` undoes it), `trace` shows the path of a ping, `capture` writes a pcap of the
// echo replies, `show neighbors` and `show interfaces` see the hosts.
func TestControlRouter(t *testing.T) {
	tp := newTopo(t, 1)
	p, sock := startCtl(t, tp.fwd, tp.bin, tp.config, tp.cli, "10.1.0.1")
	defer func() {
		out := tp.stop(t, p)
		if t.Failed() {
			t.Logf("forwarder output:\n%s", out)
		}
	}()
	bin := tp.bin

	t.Run("route", func(t *testing.T) {
		// 10.99.0.1 lives on srv, behind a prefix the router has no
		// route for.
		tp.srv.MustRun("ip", "addr", "add", "10.99.0.1/24", "dev", "eth0")
		if out, err := tp.cli.Run("ping", "-c1", "-W1", "10.99.0.1"); err == nil {
			t.Fatalf("ping 10.99.0.1 succeeds before the route exists:\n%s", out)
		}
		var rr struct {
			Found bool `json:"found"`
		}
		fwdctlJSON(t, bin, sock, &rr, "show", "routes", "10.99.0.1")
		if rr.Found {
			t.Fatal("show routes 10.99.0.1 finds a route before route add")
		}
		if code, out := fwdctl(t, bin, sock, "route", "add", "10.99.0.0/24", "via", "10.2.0.2", "out", "wan"); code != 0 {
			t.Fatalf("route add: %d %s", code, out)
		}
		pingOK(t, tp.cli, "10.99.0.1")
		code, out := fwdctl(t, bin, sock, "show", "routes", "-table", "main", "10.99.0.1")
		if code != 0 || !strings.Contains(out, "10.99.0.0/24 via 10.2.0.2 out wan  [live]") {
			t.Errorf("show routes after add: %d %q", code, out)
		}
		if code, out := fwdctl(t, bin, sock, "route", "del", "10.99.0.0/24", "-element", "rte"); code != 0 {
			t.Fatalf("route del: %d %s", code, out)
		}
		// The kernel fast path follows the table within ~10 ms.
		time.Sleep(100 * time.Millisecond)
		if out, err := tp.cli.Run("ping", "-c1", "-W1", "10.99.0.1"); err == nil {
			t.Errorf("ping 10.99.0.1 succeeds after route del:\n%s", out)
		}
		if code, out := fwdctl(t, bin, sock, "route", "add", "10.98.0.0/24", "out", "1", "-element", "nosuch"); code != 2 || !strings.Contains(out, "this graph has: rt, rte") {
			t.Errorf("route add -element nosuch: %d %q", code, out)
		}
	})

	t.Run("trace", func(t *testing.T) {
		out, done := startArmed(t, bin, sock, "trace", "-n", "1", "-timeout", "20s", "-format", "json",
			"icmp and dst host 10.1.0.1")
		tp.cli.Run("ping", "-c3", "-i0.2", "-W1", "10.1.0.1")
		if err := <-done; err != nil {
			t.Fatalf("trace: %v: %s", err, out.String())
		}
		var tr struct {
			Packets []struct {
				Device  string   `json:"device"`
				Headers []string `json:"headers"`
				Path    []struct {
					Element string `json:"element"`
					Port    int    `json:"port"`
				} `json:"path"`
				Result string `json:"result"`
				At     string `json:"at"`
			} `json:"packets"`
			TimedOut bool `json:"timed_out"`
		}
		if err := json.Unmarshal([]byte(out.String()), &tr); err != nil {
			t.Fatalf("%v: %s", err, out.String())
		}
		if len(tr.Packets) != 1 || tr.TimedOut {
			t.Fatalf("trace: %s", out.String())
		}
		pk := tr.Packets[0]
		var els []string
		for _, s := range pk.Path {
			els = append(els, s.Element)
		}
		path := strings.Join(els, " ")
		if pk.Device != "lan" || !strings.HasPrefix(path, "lan/FromDevice(lan)") || !strings.Contains(path, " lan/cls ") ||
			!strings.Contains(path, " me ") || !strings.Contains(path, " rt ") || pk.Result != "sent" || pk.At != "device lan" ||
			!strings.Contains(strings.Join(pk.Headers, "\n"), "ICMP EchoRequest") {
			t.Errorf("trace of a ping to the router: %s", out.String())
		}
	})

	t.Run("capture", func(t *testing.T) {
		file := filepath.Join(t.TempDir(), "replies.pcap")
		out, done := startArmed(t, bin, sock, "capture", "-element", "me", "-port", "0", "-n", "2", "-timeout", "20s", "-w", file)
		tp.cli.Run("ping", "-c3", "-i0.2", "-W1", "10.1.0.1")
		if err := <-done; err != nil {
			t.Fatalf("capture: %v: %s", err, out.String())
		}
		pkts := pcaptest.Read(t, file)
		for i, pk := range pkts {
			icmp, _ := pk.Layer(layers.LayerTypeICMPv4).(*layers.ICMPv4)
			if icmp == nil || icmp.TypeCode.Type() != layers.ICMPv4TypeEchoReply {
				t.Errorf("captured packet %d is not an echo reply: %v", i+1, pk)
			}
		}
		n := len(pkts)
		if n != 2 {
			t.Errorf("%d packets in the pcap, want 2 (%s)", n, out.String())
		}
	})

	t.Run("neighbors+interfaces", func(t *testing.T) {
		var ns []struct {
			Addr   netip.Addr `json:"addr"`
			MAC    string     `json:"mac"`
			State  string     `json:"state"`
			Device string     `json:"device"`
		}
		fwdctlJSON(t, bin, sock, &ns, "show", "neighbors")
		want := tp.cli.MAC("eth0").String()
		found := false
		for _, n := range ns {
			if n.Addr.String() == "10.1.0.2" && n.Device == "lan" && n.MAC == want && n.State == "reachable" {
				found = true
			}
		}
		if !found {
			t.Errorf("show neighbors has no reachable 10.1.0.2 at %s on lan: %+v", want, ns)
		}
		var ifs []struct {
			Device    string `json:"device"`
			RxPackets uint64 `json:"rx_packets"`
			Drops     []struct {
				Name string `json:"name"`
			} `json:"drops"`
			Workers []struct {
				Queues []int `json:"queues"`
			} `json:"workers"`
			Queues []struct {
				Queue     int    `json:"queue"`
				Workers   []int  `json:"workers"`
				RxPackets uint64 `json:"rx_packets"`
				Counters  []struct {
					Name string `json:"name"`
				} `json:"counters"`
			} `json:"queues"`
		}
		fwdctlJSON(t, bin, sock, &ifs, "show", "interfaces")
		if len(ifs) != 2 || ifs[0].Device != "lan" || ifs[0].RxPackets == 0 || len(ifs[0].Workers) != 2 {
			t.Fatalf("show interfaces: %+v", ifs)
		}
		// afpacket keeps counters per queue (RX socket, a member of the
		// fanout group): one per worker here, each polled by a worker,
		// with the socket's kernel counter (PACKET_STATISTICS drops).
		q := ifs[0].Queues
		var qrx uint64
		for i := range q {
			qrx += q[i].RxPackets
		}
		if len(q) != 2 || q[0].Queue != 0 || q[1].Queue != 1 || qrx == 0 || qrx > ifs[0].RxPackets || len(q[0].Workers) == 0 || len(q[1].Workers) == 0 {
			t.Errorf("show interfaces: lan's queues %+v", q)
		} else {
			kstat := false
			for _, c := range q[0].Counters {
				kstat = kstat || c.Name == "rx_kernel_dropped"
			}
			if !kstat {
				t.Errorf("show interfaces: lan's queue 0 has no PACKET_STATISTICS counter (rx_kernel_dropped): %+v", q[0].Counters)
			}
		}
		kernel := false
		for _, d := range ifs[0].Drops {
			kernel = kernel || d.Name == "link_rx_dropped"
		}
		if !kernel {
			t.Errorf("show interfaces: no kernel drop counter (link_rx_dropped) for lan: %+v", ifs[0].Drops)
		}
		// Event counters are not losses: rx_pool_empty (the frame waits
		// in the ring), the fast path's state as an output.
		for _, d := range ifs[0].Drops {
			if d.Name == "rx_pool_empty" || d.Name == "rx_own_skipped" || strings.HasPrefix(d.Name, "fastpath_egress") || d.Name == "fastpath_fallbacks" {
				t.Errorf("show interfaces: the event counter %s among lan's drops: %+v", d.Name, ifs[0].Drops)
			}
		}
		// The table says which fast path "auto" picked, and why.
		if code, out := fwdctl(t, bin, sock, "show", "interfaces"); code != 0 || !strings.Contains(out, "lan (afpacket)") || !strings.Contains(out, "rate over") ||
			!strings.Contains(out, "  queue 0 (workers [") || !strings.Contains(out, "  queue 1 (workers [") ||
			!strings.Contains(out, "  fastpath tc\n    fastpath: auto: a veth") {
			t.Errorf("show interfaces table: %d %q", code, out)
		}
	})
}

// TestControlNATFlows: a curl through the gateway's DNAT appears in `show
// flows` with its translation, filtered in Classifier's syntax.
func TestControlNATFlows(t *testing.T) {
	netns.RequireTool(t, "curl")
	tp := newNATTopo(t)
	p, sock := startCtl(t, tp.fwd, tp.bin, tp.config, tp.in, natLANAddr)
	defer func() {
		out := (&topo{}).stop(t, p)
		if t.Failed() {
			t.Logf("forwarder output:\n%s", out)
		}
	}()
	const body = "behind the gateway\n"
	serveHTTP(t, tp.in, natInside+":80", body)
	natCurl(t, tp.ot, "http://203.0.113.1:8080/", body)

	var res shownFlows
	fwdctlJSON(t, tp.bin, sock, &res, "show", "flows", "tcp and dst port 8080")
	if res.Matched != 1 || len(res.Flows) != 1 {
		t.Fatalf("show flows tcp and dst port 8080: %+v", res)
	}
	f := res.Flows[0]
	if f.Proto != "tcp" || f.Orig.Src.String() != natOutside || f.Orig.Dst.String() != natWANAddr || f.Orig.Dport != 8080 ||
		f.Reply.Src.String() != natInside || f.Reply.Sport != 80 || !strings.Contains(f.NAT, "dnat") {
		t.Errorf("the curl's flow: %+v", f)
	}
	fwdctlJSON(t, tp.bin, sock, &res, "show", "flows", "udp and dst port 8080")
	if res.Matched != 0 || res.Total == 0 {
		t.Errorf("udp and dst port 8080: %+v", res)
	}
	code, out := fwdctl(t, tp.bin, sock, "show", "flows", "-count", "dst port 8080")
	if code != 0 || !strings.HasPrefix(out, "1 flows match") {
		t.Errorf("show flows -count: %d %q", code, out)
	}
	code, out = fwdctl(t, tp.bin, sock, "show", "flows", "dst port 8080")
	if code != 0 || !strings.Contains(out, "203.0.113.2:") || !strings.Contains(out, "> 203.0.113.1:8080") || !strings.Contains(out, "192.168.1.10:80 >") {
		t.Errorf("show flows table: %d %q", code, out)
	}
	if code, out := fwdctl(t, tp.bin, sock, "show", "flows", "dst port"); code != 2 || !strings.Contains(out, `filter "dst port": col`) {
		t.Errorf("bad filter: %d %q", code, out)
	}
}

// traceBusy is what the forwarder answers a trace or capture while another
// one is armed (elements.ErrTraceBusy).
const traceBusy = "another trace or capture is running"

// startArmed starts `forwarder command -control sock args...` (trace or
// capture) and returns once its session is armed on the forwarder, which
// a probe shows: a trace that matches nothing is then refused as busy.
// A fixed wait instead missed the traffic on a loaded machine, where
// starting the client can take longer. A probe that arms first makes the
// command itself fail as busy; it is started again. done yields the
// command's exit; out holds its output once done has.
func startArmed(t *testing.T, bin, sock, command string, args ...string) (out *strings.Builder, done <-chan error) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
start:
	for {
		cmd := exec.Command(bin, append([]string{command, "-control", sock}, args...)...)
		out = new(strings.Builder)
		cmd.Stdout, cmd.Stderr = out, out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		exited := make(chan error, 1)
		go func() { exited <- cmd.Wait() }()
		for {
			select {
			case err := <-exited:
				if strings.Contains(out.String(), traceBusy) && time.Now().Before(deadline) {
					continue start // lost to the probe
				}
				exited <- err // ended without arming: the caller sees why
				return out, exited
			default:
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s not armed within 20 s", command)
			}
			probe, _ := exec.Command(bin, "trace", "-control", sock, "-n", "1", "-timeout", "1ms",
				"icmp and dst host 192.0.2.222").CombinedOutput()
			if strings.Contains(string(probe), traceBusy) {
				return out, exited
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}

// traceJSON runs `forwarder trace` in the background, runs fire once the
// trace is armed, and returns the decoded result.
func traceJSON(t *testing.T, bin, sock string, fire func(), args ...string) traceOut {
	t.Helper()
	out, done := startArmed(t, bin, sock, "trace", append([]string{"-format", "json"}, args...)...)
	fire()
	if err := <-done; err != nil {
		t.Fatalf("trace: %v: %s", err, out.String())
	}
	var tr traceOut
	if err := json.Unmarshal([]byte(out.String()), &tr); err != nil {
		t.Fatalf("%v: %s", err, out.String())
	}
	return tr
}

type traceOut struct {
	Packets []struct {
		Device string `json:"device"`
		Path   []struct {
			Element string `json:"element"`
			Port    int    `json:"port"`
			To      string `json:"to"`
		} `json:"path"`
		Result string `json:"result"`
		At     string `json:"at"`
		Reason string `json:"reason"`
	} `json:"packets"`
	TimedOut bool `json:"timed_out"`
}

// TestControlTraceForwarded traces a forwarded ping through the router
// without its fast path: the first echo request waits in ARPQuerier for
// the server's address to resolve, and its trace follows it out of the
// queue to the WAN device.
func TestControlTraceForwarded(t *testing.T) {
	tp := newTopo(t, 1)
	p, sock := startCtl(t, tp.fwd, tp.bin, noFastPathConfig(t, tp.config, "afpacket"), tp.cli, "10.1.0.1")
	defer func() {
		out := tp.stop(t, p)
		if t.Failed() {
			t.Logf("forwarder output:\n%s", out)
		}
	}()
	ping := func() { tp.cli.Run("ping", "-c1", "-W2", "10.2.0.2") }
	for i, what := range []string{"unresolved next hop", "resolved next hop"} {
		tr := traceJSON(t, tp.bin, sock, ping, "-n", "1", "-timeout", "20s", "icmp and dst host 10.2.0.2")
		if len(tr.Packets) != 1 {
			t.Fatalf("%s: %+v", what, tr)
		}
		pk := tr.Packets[0]
		var steps []string
		for _, s := range pk.Path {
			steps = append(steps, s.Element)
		}
		path := strings.Join(steps, " ")
		if !strings.HasPrefix(path, "lan/FromDevice(lan)") || !strings.Contains(path, " rt ") || !strings.HasSuffix(path, " wan/aq") || pk.Result != "sent" || pk.At != "device wan" {
			t.Errorf("%s (trace %d): path %q, %s at %s (%s)", what, i+1, path, pk.Result, pk.At, pk.Reason)
		}
	}
}

// shownFlows is what `forwarder show flows -json` prints, as far as the
// tests read it.
type shownFlows struct {
	Flows []struct {
		Proto string `json:"proto"`
		Orig  struct {
			Src   netip.Addr `json:"src"`
			Dst   netip.Addr `json:"dst"`
			Dport uint16     `json:"dport"`
		} `json:"orig"`
		Reply struct {
			Src   netip.Addr `json:"src"`
			Sport uint16     `json:"sport"`
		} `json:"reply"`
		State string `json:"state"`
		NAT   string `json:"nat"`
	} `json:"flows"`
	Matched int `json:"matched"`
	Total   int `json:"total"`
}
