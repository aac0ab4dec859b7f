package e2e

import (
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/junction-dataplane/junction/internal/netns"
)

// The hairpin topology: the NAT gateway's with a second inside host on the
// LAN, the LAN a bridge in its own namespace:
//
//	in  (eth0 192.168.1.10) ─┐
//	                          sw (br0) ── lan0 [fwd] wan0 ── out
//	in2 (eth0 192.168.1.20) ─┘
//
// Both inside hosts route by 192.168.1.1.
const natInside2 = "192.168.1.20"

func newNATHairpinTopo(t *testing.T) (*natTopo, *netns.NS) {
	requireAll(t)
	env := netns.New(t)
	tp := &natTopo{env: env, in: env.NS("in"), fwd: env.NS("fwd"), ot: env.NS("out"),
		bin: forwarderBin(t), config: natConfigPath(t)}
	sw, in2 := env.NS("sw"), env.NS("in2")
	env.Veth(tp.fwd, "lan0", sw, "p0", 1)
	env.Veth(sw, "p1", tp.in, "eth0", 1)
	env.Veth(sw, "p2", in2, "eth0", 1)
	env.Veth(tp.fwd, "wan0", tp.ot, "eth0", 1)
	sw.MustRun("ip", "link", "add", "br0", "type", "bridge", "forward_delay", "0")
	for _, p := range []string{"p0", "p1", "p2"} {
		sw.MustRun("ip", "link", "set", p, "master", "br0")
	}
	sw.Up("br0")
	tp.in.Addr("eth0", natInside+"/24")
	tp.in.Route("default", "via", natLANAddr)
	in2.Addr("eth0", natInside2+"/24")
	in2.Route("default", "via", natLANAddr)
	tp.ot.Addr("eth0", natOutside+"/24")
	for _, ns := range []*netns.NS{tp.in, in2, tp.ot} {
		// The hosts finish their checksums (see newNATTopo).
		ns.MustRun("ethtool", "-K", "eth0", "tx", "off")
	}
	return tp, in2
}

// TestNATGatewayHairpin: hairpinning through configs/nat-gateway.toml as
// shipped (RFC 4787 REQ-9 for UDP, RFC 5382 REQ-8 for TCP), 2 workers.
// A second inside host, and the inside server itself, fetch
// http://203.0.113.1:8080/ (DNAT'd to 192.168.1.10:80) and get the inside
// server's page, which sees every such client as 203.0.113.1 (the
// gateway's external address: the RFCs' "External source IP address and
// port"), not as the inside host, which would answer the client straight
// on the LAN and be ignored. Repeated, each connection a new flow from a
// new port, so that flows land on both workers (the server's replies must
// reach the worker of their flow). A UDP exchange with 203.0.113.1:5000
// (DNAT'd to 192.168.1.10:5000) gets the echo from 203.0.113.1:5000, and
// the server saw 203.0.113.1 as its peer.
func TestNATGatewayHairpin(t *testing.T) {
	netns.RequireTool(t, "curl")
	tp, in2 := newNATHairpinTopo(t)
	p := tp.start(t)
	stopped := false
	defer func() {
		if !stopped {
			out := (&topo{}).stop(t, p)
			if t.Failed() {
				t.Logf("forwarder output:\n%s", out)
			}
		}
	}()
	pingOK(t, in2, natLANAddr)
	url := fmt.Sprintf("http://%s:%d/", natWANAddr, natTCPPort)

	t.Run("tcp", func(t *testing.T) {
		const body = "inside web server, hairpinned\n"
		log := serveHTTP(t, tp.in, net.JoinHostPort(natInside, "80"), body)
		const runs = 8
		for range runs {
			natCurl(t, in2, url, body)
		}
		// The server reaching its own public endpoint is hairpinned too.
		natCurl(t, tp.in, url, body)
		onlyHost(t, "hairpin", log, natWANAddr)
		if n := len(log.hosts()); n != runs+1 {
			t.Errorf("the server saw %d requests, want %d", n, runs+1)
		}
	})

	t.Run("udp", func(t *testing.T) {
		srv := listenInside(t, tp)
		defer srv.Close()
		peers := make(chan string, 1024)
		go func() {
			buf := make([]byte, 1500)
			for {
				n, from, err := srv.ReadFromUDP(buf)
				if err != nil {
					close(peers)
					return
				}
				peers <- from.IP.String()
				srv.WriteToUDP(buf[:n], from)
			}
		}()
		const runs = 8
		for i := range runs {
			if err := in2.Do(func() error {
				c, err := net.DialUDP("udp4", nil, &net.UDPAddr{IP: net.ParseIP(natWANAddr), Port: natUDPPort})
				if err != nil {
					return err
				}
				defer c.Close()
				msg := []byte(fmt.Sprintf("hairpin %d", i))
				buf := make([]byte, 1500)
				// A datagram may be lost while the router resolves
				// the server's address: send again until the echo.
				for try := 0; try < 10; try++ {
					if _, err := c.Write(msg); err != nil {
						return err
					}
					c.SetReadDeadline(time.Now().Add(time.Second))
					n, err := c.Read(buf)
					if err == nil {
						if string(buf[:n]) != string(msg) {
							return fmt.Errorf("echo %q, want %q", buf[:n], msg)
						}
						return nil
					}
				}
				return fmt.Errorf("no echo from %s:%d in 10 tries", natWANAddr, natUDPPort)
			}); err != nil {
				t.Errorf("udp exchange %d from %s: %v", i, natInside2, err)
			}
		}
		srv.Close()
		for peer := range peers {
			if peer != natWANAddr {
				t.Errorf("the UDP server saw a datagram from %s, want %s", peer, natWANAddr)
			}
		}
	})

	// Longer flows, which FastTrack and the devices' in-kernel fast path
	// take over (a hairpinned direction leaves by the device it came in
	// on): a 2 MB page and a one-way stream of 3000 datagrams.
	t.Run("tcp bulk", func(t *testing.T) {
		body := strings.Repeat("hairpinned bulk 0123456789abcdef\n", 2<<20/32)
		log := serveHTTP(t, tp.in, net.JoinHostPort(natInside, "80"), body)
		out, err := in2.Run("curl", "-sf", "--max-time", "20", url)
		if err != nil || out != body {
			t.Errorf("curl %s from %s: %v: %d bytes, want %d", url, natInside2, err, len(out), len(body))
		}
		onlyHost(t, "hairpin bulk", log, natWANAddr)
	})

	t.Run("udp stream", func(t *testing.T) {
		srv := listenInside(t, tp)
		defer srv.Close()
		done := tallyUDP(srv, "junction-hairpin-e2e")
		const n = 3000
		sendUDPStream(t, in2, "junction-hairpin-e2e", n, 0)
		r := <-done
		t.Logf("hairpinned UDP stream: %d of %d received, from %v", r.got, n, r.from)
		if r.got < n*9/10 {
			t.Errorf("only %d of %d hairpinned datagrams reached the server", r.got, n)
		}
		for peer := range r.from {
			if h, _, _ := net.SplitHostPort(peer); h != natWANAddr {
				t.Errorf("the UDP server saw datagrams from %s, want %s", peer, natWANAddr)
			}
		}
	})

	s := (&topo{fwd: tp.fwd}).snapshot(t)
	t.Logf("FastTrack fasttracked %d packets (%d offloaded); SNAT translated %d (both SNATs), DNAT translated %d",
		counter(s, "FastTrack", "fasttracked packets"), counter(s, "FastTrack", "offloaded packets"), counter(s, "SNAT", "translated"), counter(s, "DNAT", "translated"))
	stopped = true
	if out := (&topo{}).stop(t, p); t.Failed() {
		t.Logf("forwarder output:\n%s", out)
	}
}
