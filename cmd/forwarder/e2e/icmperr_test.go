package e2e

import (
	"encoding/json"
	"errors"
	"net"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/junction-dataplane/junction/internal/netns"
)

// ICMP errors about NAT'd flows, with the contract config's two workers:
// each worker tracks its own flows, and an error arriving on the WAN
// comes from an address that is not the flow's (a router on the way) or
// from the flow's far end to the public address, so it only finds its
// flow if the steering sends it by the flow it quotes
// (flowsteer.Table.Hash). One queue per veth: every packet is steered in
// software.

// TestNATGatewayPortUnreachable: twenty UDP flows from the inside host to
// closed ports of the outside host, each from a connected socket, all see
// the outside host's port unreachable (ECONNREFUSED). RFC 5508 REQ-4: an
// ICMP error from the external realm about a masqueraded flow is reverted
// to the flow's inside form and forwarded to the inside host; RFC 4787
// (section 11, ICMP destination unreachable behaviour): the errors about a
// UDP mapping reach the host. With the errors steered by their outer
// header, about half of them reached a worker that did not track the flow
// and were dropped as invalid.
func TestNATGatewayPortUnreachable(t *testing.T) {
	tp := newNATTopo(t)
	// Linux limits the port unreachables it sends to one destination (six
	// back to back, then one a second); the test wants every one.
	tp.ot.Sysctl("net.ipv4.icmp_ratelimit", "0")
	p := tp.start(t)
	defer (&topo{fwd: tp.fwd}).stop(t, p)

	const flows = 20
	refused := make([]bool, flows)
	var notes []string
	err := tp.in.Do(func() error {
		buf := make([]byte, 64)
		for i := range flows {
			c, err := net.DialUDP("udp4", nil, &net.UDPAddr{IP: net.ParseIP(natOutside), Port: 33434 + i})
			if err != nil {
				return err
			}
			// A datagram lost on the way (a busy machine) is sent again;
			// an error dropped by the wrong worker is dropped every time
			// (the flow's owner does not change).
			for try := 0; try < 3 && !refused[i]; try++ {
				if _, err := c.Write([]byte("probe")); errors.Is(err, syscall.ECONNREFUSED) {
					refused[i] = true
					break
				}
				c.SetReadDeadline(time.Now().Add(2 * time.Second))
				_, err := c.Read(buf)
				switch {
				case errors.Is(err, syscall.ECONNREFUSED):
					refused[i] = true
				case errors.Is(err, os.ErrDeadlineExceeded):
				default:
					notes = append(notes, err.Error())
				}
			}
			c.Close()
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	var missing []int
	for i, r := range refused {
		if r {
			n++
		} else {
			missing = append(missing, 33434+i)
		}
	}
	t.Logf("%d of %d UDP flows saw their port unreachable", n, flows)
	if n != flows {
		t.Errorf("%d of %d UDP flows saw their port unreachable; none came for ports %v %v", n, flows, missing, notes)
	}
	if rel := counter((&topo{fwd: tp.fwd}).snapshot(t), "Conntrack", "related"); rel < flows {
		t.Errorf("Conntrack counted %d related packets, want at least %d", rel, flows)
	}
}

// TestNATGatewayPathMTUBeyond: path MTU discovery through the NAT when
// the narrow link is beyond the gateway. The outside host routes to a far
// host over a link whose MTU is 1400 at its end (the far host's stays
// 1500, so that its MSS does not spare the sender the discovery); the
// outside host, a Linux router, sends fragmentation needed to the public
// address about each 1500-byte packet. RFC 5508 REQ-4 (an error from the
// external realm about a translated flow is reverted and forwarded) and
// RFC 1191: TCP from the inside host completes, and so does TCP from the
// far host to the DNAT'd port with the inside host sending (iperf3 -R),
// each several times over fresh connections (the path MTU learnt
// forgotten between them), so that the flows land on both workers.
func TestNATGatewayPathMTUBeyond(t *testing.T) {
	netns.RequireTool(t, "iperf3")
	tp := newNATTopo(t)
	far := tp.env.NS("far")
	tp.env.Veth(tp.ot, "eth1", far, "eth0", 1)
	tp.ot.MustRun("ethtool", "-K", "eth1", "tx", "off")
	far.MustRun("ethtool", "-K", "eth0", "tx", "off")
	tp.ot.Addr("eth1", "198.51.100.1/24")
	far.Addr("eth0", "198.51.100.2/24")
	far.Route("default", "via", "198.51.100.1")
	tp.ot.Sysctl("net.ipv4.ip_forward", "1")
	tp.ot.MustRun("ip", "link", "set", "dev", "eth1", "mtu", "1400")
	p := tp.start(t)
	defer (&topo{fwd: tp.fwd}).stop(t, p)
	tp.in.Run("ping", "-c1", "-W2", "198.51.100.2") // ARP on every hop first
	pingOK(t, tp.in, "198.51.100.2")

	const runs = 4
	t.Run("outbound", func(t *testing.T) {
		for i := 0; i < runs; i++ {
			tp.in.MustRun("ip", "route", "flush", "cache")
			iperfBytes(t, tp.in, far, "-4", "198.51.100.2", "2M")
			if out := tp.in.MustRun("ip", "route", "get", "198.51.100.2"); !strings.Contains(out, "mtu 1400") {
				t.Errorf("run %d: the inside host learnt no path MTU for far: %s", i, out)
			}
		}
	})
	t.Run("inbound", func(t *testing.T) {
		srv := tp.in.Start("iperf3", "-s", "-p", "80")
		defer srv.Kill()
		for i := 0; i < runs; i++ {
			tp.in.MustRun("ip", "route", "flush", "cache")
			var out string
			var err, jerr error
			var res iperfReport
			for try := 0; try < 20; try++ {
				out, err = far.Run("timeout", "30", "iperf3", "-4", "-R", "-c", natWANAddr, "-p", "8080", "-J", "--connect-timeout", "2000", "-n", "2M")
				res = iperfReport{}
				jerr = json.Unmarshal([]byte(out), &res)
				if !strings.Contains(out, "unable to connect") {
					break
				}
				time.Sleep(150 * time.Millisecond) // the server is not listening yet
			}
			got := res.End.SumReceived.Bytes
			t.Logf("run %d: iperf3 -R -n 2M from %s:8080 (the inside host sending): %.0f bytes received", i, natWANAddr, got)
			if err != nil || jerr != nil || res.Error != "" || got < blackHoleBytes {
				t.Errorf("run %d: iperf3 -R to the forwarded port: %v %v, received %.0f bytes (error %q)\n%.2000s", i, err, jerr, got, res.Error, out)
			}
			if r := tp.in.MustRun("ip", "route", "get", "198.51.100.2"); !strings.Contains(r, "mtu 1400") {
				t.Errorf("run %d: the inside host learnt no path MTU for far: %s", i, r)
			}
		}
	})
}

// TestNATGatewayTraceroute: traceroute from the inside host through the
// NAT gateway, over IPv4 (UDP probes, masqueraded) and IPv6 (routed), five
// times each: hop 1 is the gateway, from its LAN address, on every probe
// (RFC 1812 5.3.1 and RFC 4443 3.3: a router that discards a packet for
// its TTL or hop limit sends time exceeded; RFC 1812 4.3.2.4: from the
// address of the interface the message leaves by), and hop 2 is the
// outside host, whose port unreachable about the masqueraded probe comes
// back translated (RFC 5508 REQ-4) whichever worker tracks the probe.
func TestNATGatewayTraceroute(t *testing.T) {
	netns.RequireTool(t, "traceroute")
	tp := newNATTopo(t)
	noKernelIPv6(tp.fwd)
	addr6(t, tp.in, "2001:db8:1::10/64", "2001:db8:1::1")
	addr6(t, tp.ot, "2001:db8:2::2/64", "")
	tp.ot.MustRun("ip", "-6", "route", "add", "2001:db8:1::/64", "via", "2001:db8:2::1")
	tp.ot.Sysctl("net.ipv4.icmp_ratelimit", "0")
	p := tp.start(t)
	defer (&topo{fwd: tp.fwd}).stop(t, p)
	tp.in.Run("ping", "-c1", "-W2", natOutside) // ARP on every hop first
	ping6OK(t, tp.in, "2001:db8:2::2")

	for _, c := range []struct {
		name, family, dst, hop1 string
	}{
		{"ipv4", "-4", natOutside, natLANAddr},
		{"ipv6", "-6", "2001:db8:2::2", "2001:db8:1::1"},
	} {
		t.Run(c.name, func(t *testing.T) {
			for run := 0; run < 5; run++ {
				// Three probes per hop, one at a time (-N1: the
				// gateway's ICMPError is rate limited per worker,
				// 100 a second with a burst of 10), and each run
				// after the buckets have refilled: five runs back to
				// back answer 15 probes in some 50 ms, which a skewed
				// spread over the two workers could take past one
				// worker's burst (a probe then goes unanswered, as
				// the limit means it to).
				if run > 0 {
					time.Sleep(150 * time.Millisecond)
				}
				out, err := tp.in.Run("traceroute", c.family, "-n", "-N1", "-q3", "-w2", "-m4", c.dst)
				lines := strings.Split(strings.TrimSpace(out), "\n")
				if err != nil || len(lines) != 3 {
					t.Fatalf("run %d: traceroute %s: %v\n%s", run, c.dst, err, out)
				}
				hop1, hop2 := strings.Fields(lines[1]), lines[2]
				// " 1  192.168.1.1  0.1 ms  0.1 ms  0.1 ms"
				if len(hop1) < 2 || hop1[1] != c.hop1 || strings.Contains(lines[1], "*") {
					t.Errorf("run %d: hop 1 is not %s on every probe:\n%s", run, c.hop1, out)
				}
				if !strings.Contains(hop2, c.dst) || strings.Contains(hop2, "*") {
					t.Errorf("run %d: hop 2 is not %s on every probe:\n%s", run, c.dst, out)
				}
			}
		})
	}
	s := (&topo{fwd: tp.fwd}).snapshot(t)
	if n := counter(s, "ICMPError", "rate limited"); n != 0 {
		t.Errorf("ICMPError rate limited %d time exceeded", n)
	}
}
