package e2e

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/junction-dataplane/junction/internal/netns"
)

// The NAT gateway topology (addresses as configs/nat-gateway.toml says):
//
//	in (eth0 192.168.1.10, via 192.168.1.1) ── lan0 [fwd: forwarder] wan0 ── (eth0 203.0.113.2) out
//
// The forwarder namespace has no addresses in the kernel: the forwarder
// answers ARP and ping for 192.168.1.1 and 203.0.113.1 itself. The outside
// host is the gateway's default-route next hop and needs no route back:
// everything the inside sends reaches it from 203.0.113.1, on its own link.

const (
	natInside   = "192.168.1.10"
	natLANAddr  = "192.168.1.1"
	natWANAddr  = "203.0.113.1"
	natOutside  = "203.0.113.2"
	natUDPPort  = 5000
	natTCPPort  = 8080 // public, DNAT'd to natInside:80
	natOutsideP = 8080 // the outside host's own HTTP server
)

type natTopo struct {
	env         *netns.Env
	in, fwd, ot *netns.NS
	bin, config string
	runArgs     []string // more arguments of forwarder run (e.g. -workers)
}

func natConfigPath(t *testing.T) string {
	p, err := filepath.Abs("../../../configs/nat-gateway.toml")
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// newNATTopo builds the three namespaces and the two veth pairs (one queue
// each, so with the config's 2 workers FromDevice spreads in software and
// the DNAT-aware steering decides which worker owns a flow).
func newNATTopo(t *testing.T) *natTopo { return newNATTopoQueues(t, 1) }

// newNATTopoQueues is newNATTopo with queues RX/TX queues per veth.
func newNATTopoQueues(t *testing.T, queues int) *natTopo {
	requireAll(t)
	env := netns.New(t)
	tp := &natTopo{env: env, in: env.NS("in"), fwd: env.NS("fwd"), ot: env.NS("out"),
		bin: forwarderBin(t), config: natConfigPath(t)}
	env.Veth(tp.fwd, "lan0", tp.in, "eth0", queues)
	env.Veth(tp.fwd, "wan0", tp.ot, "eth0", queues)
	tp.in.Addr("eth0", natInside+"/24")
	tp.in.Route("default", "via", natLANAddr)
	tp.ot.Addr("eth0", natOutside+"/24")
	for _, ns := range []*netns.NS{tp.in, tp.ot} {
		// veth leaves TCP/UDP checksums to "hardware"; the forwarder
		// sees raw frames, so the hosts must finish them (see newTopo).
		ns.MustRun("ethtool", "-K", "eth0", "tx", "off")
	}
	return tp
}

// start runs the forwarder on the contract config in fwd and waits until
// it answers ping on both sides.
func (tp *natTopo) start(t *testing.T) *netns.Proc {
	t.Helper()
	p := tp.fwd.Start(tp.bin, append([]string{"run", "-config", tp.config, "-quiet"}, tp.runArgs...)...)
	deadline := time.Now().Add(15 * time.Second)
	for _, probe := range []struct {
		ns  *netns.NS
		dst string
	}{{tp.in, natLANAddr}, {tp.ot, natWANAddr}} {
		for {
			select {
			case <-p.Done():
				t.Fatalf("forwarder exited at start: %v\n%s", p.Wait(0), p.Output())
			default:
			}
			if _, err := probe.ns.Run("ping", "-c1", "-W1", probe.dst); err == nil {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("forwarder does not answer ping for %s within 15 s:\n%s", probe.dst, p.Output())
			}
		}
	}
	return p
}

// peerLog serves HTTP in a namespace and records each client's address.
type peerLog struct {
	mu    sync.Mutex
	peers []string
}

func (l *peerLog) add(a string) {
	l.mu.Lock()
	l.peers = append(l.peers, a)
	l.mu.Unlock()
}

func (l *peerLog) hosts() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var hs []string
	for _, p := range l.peers {
		h, _, err := net.SplitHostPort(p)
		if err != nil {
			h = p
		}
		hs = append(hs, h)
	}
	return hs
}

// serveHTTP listens on addr inside ns and answers body, logging clients.
func serveHTTP(t *testing.T, ns *netns.NS, addr, body string) *peerLog {
	t.Helper()
	return serveHTTPNet(t, ns, "tcp4", addr, body)
}

// serveHTTP6 is serveHTTP on an IPv6 address.
func serveHTTP6(t *testing.T, ns *netns.NS, addr, body string) *peerLog {
	t.Helper()
	return serveHTTPNet(t, ns, "tcp6", addr, body)
}

// serveHTTPNet is serveHTTP on network ("tcp4" or "tcp6").
func serveHTTPNet(t *testing.T, ns *netns.NS, network, addr, body string) *peerLog {
	t.Helper()
	var ln net.Listener
	if err := ns.Do(func() error {
		var err error
		ln, err = net.Listen(network, addr)
		return err
	}); err != nil {
		t.Fatalf("listen on %s in %s: %v", addr, ns.Name, err)
	}
	log := &peerLog{}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		log.add(r.RemoteAddr)
		fmt.Fprint(w, body)
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return log
}

// natCurl fetches url from ns and checks the body.
func natCurl(t *testing.T, ns *netns.NS, url, body string) {
	t.Helper()
	out, err := ns.Run("curl", "-sf", "--max-time", "5", url)
	if err != nil || out != body {
		t.Errorf("curl %s from %s: %v: %q", url, ns.Name, err, out)
	}
}

// onlyHost checks that every logged client came from want.
func onlyHost(t *testing.T, what string, log *peerLog, want string) {
	t.Helper()
	hs := log.hosts()
	if len(hs) == 0 {
		t.Errorf("%s: the server saw no request", what)
		return
	}
	for _, h := range hs {
		if h != want {
			t.Errorf("%s: the server saw a client at %s, want %s (all: %v)", what, h, want, hs)
			return
		}
	}
}

// TestNATGateway: the contract configs/nat-gateway.toml between real hosts:
// ping of both router addresses, DNAT of tcp :8080 from outside, SNAT of the
// inside network (curl, iperf3), a one-way UDP stream through the DNAT'd
// :5000 that FastTrack takes over, and new inbound IPv4 to an inside
// address refused.
func TestNATGateway(t *testing.T) {
	netns.RequireTool(t, "curl")
	tp := newNATTopo(t)
	p := tp.start(t)
	stopped := false
	stop := func() string {
		stopped = true
		return (&topo{}).stop(t, p)
	}
	defer func() {
		if !stopped {
			out := stop()
			if t.Failed() {
				t.Logf("forwarder output:\n%s", out)
			}
		}
	}()

	t.Run("ping", func(t *testing.T) {
		pingOK(t, tp.in, natLANAddr)
		pingOK(t, tp.ot, natWANAddr)
		// Through the gateway: the echo is masqueraded and its reply
		// un-masqueraded by the echo identifier.
		pingOK(t, tp.in, natOutside)
	})

	t.Run("dnat curl", func(t *testing.T) { natDNATCurl(t, tp, "inside web server via dnat\n") })

	t.Run("snat curl", func(t *testing.T) {
		const body = "outside web server\n"
		log := serveHTTP(t, tp.ot, net.JoinHostPort(natOutside, fmt.Sprint(natOutsideP)), body)
		natCurl(t, tp.in, fmt.Sprintf("http://%s:%d/", natOutside, natOutsideP), body)
		onlyHost(t, "snat", log, natWANAddr)
	})

	t.Run("snat iperf3", func(t *testing.T) {
		netns.RequireTool(t, "iperf3")
		natIperf(t, tp)
	})

	t.Run("udp fasttrack", func(t *testing.T) {
		natUDPStream(t, tp)
	})

	t.Run("inbound refused", func(t *testing.T) { natInboundRefused(t, tp) })

	out := stop()
	if !strings.Contains(out, "worker") {
		t.Errorf("no exit table:\n%s", out)
	}
	tp2 := &topo{fwd: tp.fwd}
	tp2.noXDP(t)
	if t.Failed() {
		t.Logf("forwarder output:\n%s", out)
	}
}

// natInboundRefused: the outside host, given a route to the inside
// network through the gateway, can neither open a TCP connection to an
// inside host's address nor ping it (IPv4 gets the same inbound filter as
// IPv6: only DNAT'd ports reach the inside); the attempts reach the gateway
// and are dropped by drop4, and the inside host still reaches out.
func natInboundRefused(t *testing.T, tp *natTopo) {
	tp.ot.MustRun("ip", "route", "replace", "192.168.1.0/24", "via", natWANAddr)
	defer tp.ot.Run("ip", "route", "del", "192.168.1.0/24")
	serveHTTP(t, tp.in, net.JoinHostPort(natInside, "81"), "inside, not forwarded\n")
	drop4 := func() uint64 {
		var n uint64
		for _, e := range (&topo{fwd: tp.fwd}).snapshot(t).Elements {
			if e.Element == "drop4" {
				n += e.Packets
			}
		}
		return n
	}
	before := drop4()
	if out, err := tp.ot.Run("curl", "-sf", "--max-time", "2", "http://"+natInside+":81/"); err == nil {
		t.Errorf("an outside host opened a connection to the inside: %q", out)
	}
	if out, err := tp.ot.Run("ping", "-c2", "-i0.2", "-W1", natInside); err == nil {
		t.Errorf("an outside host pinged the inside:\n%s", out)
	}
	// The refusal is the gateway's filter, not a broken path: curl's SYN
	// and its retransmissions, and both echo requests, were dropped there.
	if d := drop4() - before; d < 3 {
		t.Errorf("drop4 counted %d packets during the inbound attempts, want at least 3", d)
	}
	pingOK(t, tp.in, natOutside)
}

// natIperf runs iperf3 TCP from the inside host to the outside one and
// checks the throughput and the source address the server saw.
func natIperf(t *testing.T, tp *natTopo) {
	var res struct {
		Error string `json:"error"`
		Start struct {
			Connected []struct {
				LocalHost  string `json:"local_host"`
				RemoteHost string `json:"remote_host"`
			} `json:"connected"`
		} `json:"start"`
		End struct {
			SumReceived struct {
				Bytes         float64 `json:"bytes"`
				BitsPerSecond float64 `json:"bits_per_second"`
			} `json:"sum_received"`
		} `json:"end"`
		// The server's own JSON report (--get-server-output): the
		// address it saw the client connect from.
		ServerOutputJSON struct {
			Start struct {
				Connected []struct {
					RemoteHost string `json:"remote_host"`
				} `json:"connected"`
			} `json:"start"`
		} `json:"server_output_json"`
	}
	srv := tp.ot.Start("iperf3", "-s", "-J", "-B", natOutside)
	defer srv.Kill()
	var out string
	// The server needs a moment to listen; a run that failed to start
	// (connection refused) is retried.
	for i := 0; i < 20; i++ {
		var err error
		out, err = tp.in.Run("iperf3", "-c", natOutside, "-t", "2", "-J", "--get-server-output")
		res.Error = ""
		if jerr := json.Unmarshal([]byte(out), &res); jerr == nil && err == nil && res.Error == "" {
			break
		}
		time.Sleep(150 * time.Millisecond)
	}
	bps := res.End.SumReceived.BitsPerSecond
	t.Logf("iperf3 TCP inside→outside through SNAT: %.1f Mbit/s (%.0f bytes)", bps/1e6, res.End.SumReceived.Bytes)
	if bps <= 0 {
		t.Fatalf("iperf3: zero throughput (error %q)\n%.3000s", res.Error, out)
	}
	seen := res.ServerOutputJSON.Start.Connected
	if len(seen) == 0 {
		t.Fatalf("iperf3: no server report of the connection\n%.3000s", out)
	}
	for _, c := range seen {
		if c.RemoteHost != natWANAddr {
			t.Errorf("iperf3 server saw the client at %s, want %s (masqueraded)", c.RemoteHost, natWANAddr)
		}
	}
}

// natDNATCurl: the outside host's curl of the gateway's forwarded port
// reaches the inside web server, which answers body and sees the real
// client (destination NAT only).
func natDNATCurl(t *testing.T, tp *natTopo, body string) {
	t.Helper()
	log := serveHTTP(t, tp.in, net.JoinHostPort(natInside, "80"), body)
	natCurl(t, tp.ot, fmt.Sprintf("http://%s:%d/", natWANAddr, natTCPPort), body)
	onlyHost(t, "dnat", log, natOutside)
}

// natUDPStream sends a one-way UDP stream from the outside host to the
// public :5000, counts what the inside host receives on :5000 and checks
// that FastTrack carried (most of) it.
func natUDPStream(t *testing.T, tp *natTopo) { natUDPStreamN(t, tp, 2000) }

// natUDPStreamN is natUDPStream with n datagrams.
func natUDPStreamN(t *testing.T, tp *natTopo, n int) { natUDPStreamFrom(t, tp, n, 0) }

// natUDPStreamFrom is natUDPStreamN from source port lport (0: any), so
// that two calls can be one flow.
func natUDPStreamFrom(t *testing.T, tp *natTopo, n, lport int) {
	before := (&topo{fwd: tp.fwd}).snapshot(t)
	rx := listenInside(t, tp)
	defer rx.Close()
	done := tallyUDP(rx, "junction-nat-e2e")
	sendUDPStream(t, tp.ot, "junction-nat-e2e", n, lport)
	r := <-done
	after := (&topo{fwd: tp.fwd}).snapshot(t)
	ft := counter(after, "FastTrack", "fasttracked packets") - counter(before, "FastTrack", "fasttracked packets")
	t.Logf("UDP %s → %s:%d (public) → %s:%d: %d of %d received (from %v); FastTrack fasttracked %d packets, DNAT %d → %d",
		natOutside, natWANAddr, natUDPPort, natInside, natUDPPort, r.got, n, r.from, ft,
		counter(before, "DNAT", "translated"), counter(after, "DNAT", "translated"))
	if r.got < n*9/10 {
		t.Errorf("only %d of %d UDP packets reached the inside host", r.got, n)
	}
	for src := range r.from {
		if h, _, _ := net.SplitHostPort(src); h != natOutside {
			t.Errorf("inside host received from %s, want %s (destination NAT only)", src, natOutside)
		}
	}
	if ft == 0 {
		t.Errorf("FastTrack's fasttracked packets did not move for a one-way DNAT'd UDP stream")
	} else if ft < uint64(r.got)/2 {
		t.Errorf("FastTrack carried only %d of %d delivered packets", ft, r.got)
	}
}

// udpTally is what tallyUDP's receiver got: the datagrams that carried
// its marker, and how many came from each source (host:port).
type udpTally struct {
	got  int
	from map[string]int
}

// listenInside opens a UDP socket on the inside host's natInside and
// natUDPPort (the NAT gateway's DNAT'd UDP port's backend), with a 1 MiB
// receive buffer.
func listenInside(t *testing.T, tp *natTopo) *net.UDPConn {
	t.Helper()
	var rx *net.UDPConn
	if err := tp.in.Do(func() error {
		var err error
		rx, err = net.ListenUDP("udp4", &net.UDPAddr{IP: net.ParseIP(natInside), Port: natUDPPort})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	rx.SetReadBuffer(1 << 20)
	return rx
}

// tallyUDP counts what rx receives of sendUDPStream's 32-byte datagrams
// carrying marker, until 1.5 s pass without a datagram.
func tallyUDP(rx *net.UDPConn, marker string) <-chan udpTally {
	done := make(chan udpTally, 1)
	go func() {
		r := udpTally{from: map[string]int{}}
		buf := make([]byte, 2048)
		for {
			rx.SetReadDeadline(time.Now().Add(1500 * time.Millisecond))
			m, from, err := rx.ReadFromUDP(buf)
			if err != nil {
				break
			}
			if m == 32 && strings.HasPrefix(string(buf[:m]), marker) {
				r.got++
				r.from[from.String()]++
			}
		}
		done <- r
	}()
	return done
}

// sendUDPStream sends n 32-byte datagrams carrying marker from ns (source
// port lport, 0: any) to the gateway's public natWANAddr:natUDPPort,
// pausing a millisecond every 50 to stay below the rings' sizes.
func sendUDPStream(t *testing.T, ns *netns.NS, marker string, n, lport int) {
	t.Helper()
	if err := ns.Do(func() error {
		var laddr *net.UDPAddr
		if lport != 0 {
			laddr = &net.UDPAddr{Port: lport}
		}
		c, err := net.DialUDP("udp4", laddr, &net.UDPAddr{IP: net.ParseIP(natWANAddr), Port: natUDPPort})
		if err != nil {
			return err
		}
		defer c.Close()
		msg := []byte(fmt.Sprintf("%-32s", marker))
		for i := 0; i < n; i++ {
			if _, err := c.Write(msg); err != nil {
				return err
			}
			if i%50 == 49 {
				time.Sleep(time.Millisecond)
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}
