package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/junction-dataplane/junction/drivers/afxdp/fastpath"
	"github.com/junction-dataplane/junction/drivers/kfeature"

	"github.com/junction-dataplane/junction/drivers"
	"github.com/junction-dataplane/junction/internal/netns"
	"github.com/junction-dataplane/junction/pipeline"
)

// withWANMTU is a copy of a contract config whose wan-side CheckMTU,
// IPFragmenter and error elements say mtu instead of 1500 (the operator's edit for a WAN
// link with a smaller MTU). It fails the test if the config no longer has
// the lines it edits.
func withWANMTU(t *testing.T, contract, mtu string, edits []string) string {
	t.Helper()
	data, err := os.ReadFile(contract)
	if err != nil {
		t.Fatal(err)
	}
	cfg := string(data)
	for _, e := range edits {
		if strings.Count(cfg, e) != 1 {
			t.Fatalf("%s: %q is no longer there once; update the MTU test", contract, e)
		}
		cfg = strings.Replace(cfg, e, strings.ReplaceAll(e, "1500", mtu), 1)
	}
	path := filepath.Join(t.TempDir(), "mtu-"+filepath.Base(contract))
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// blackHoleBytes is the least a TCP transfer through a narrow path must
// deliver to show that path MTU discovery worked. iperf3 -n ends when the
// sender has written everything, so the receiver's count lags by what is
// still in flight: 974,940 bytes of 4 MiB and 189,936 bytes of 2 MiB have
// been seen under load, while a black hole (segments that never fit and
// errors that never return) delivers nothing past the handshake. Whether
// the sender learnt the path MTU is checked apart, with ip route get.
const blackHoleBytes = 64 << 10

// iperfBytes sends n bytes of TCP from cli to addr (a server in srv) with
// iperf3 (family "-4" or "-6") and returns the bytes received, failing the
// test on a stalled or failed transfer.
func iperfBytes(t *testing.T, cli, srv *netns.NS, family, addr, n string) float64 {
	t.Helper()
	rep, out := iperfTo(t, cli, srv, addr, false, "timeout", "30", "iperf3", family, "-c", addr, "-J", "--connect-timeout", "2000", "-n", n)
	r := rep.End.SumReceived
	got := r.Bytes
	t.Logf("iperf3 %s -n %s to %s: %.0f bytes in %.2f s", family, n, addr, got, r.Seconds)
	if got < blackHoleBytes || rep.Error != "" {
		t.Errorf("iperf3 %s to %s: received %.0f bytes (error %q)\n%.2000s", family, addr, got, rep.Error, out)
	}
	return got
}

// TestRouterOwnPacketTooBig: the router's WAN link has a 1400-byte MTU
// (both ends), the rest of the path 1500, so a host behind the LAN sends
// 1500-byte packets that only the router can refuse. Its own ICMPv6
// packet too big and ICMP fragmentation needed, with MTU 1400, let TCP
// over IPv6 and IPv4 (DF, as Linux sends TCP) through: the senders learn
// the path MTU. Nothing longer than the link reaches the driver
// (tx_dropped_too_long stays 0), and an IPv4 packet without DF that does
// not fit is a counted drop. Twice: without the fast path (the graph
// forwards everything) and as shipped (the in-kernel fast path in TC
// forwards what fits and hands the longer datagrams to the graph).
//
//	cli ── lan0 [fwd] wan0 ══ (mtu 1400) ══ eth0 srv eth1 ── eth0 far
//	                                       (2001:db8:16::2, 10.16.0.2)
func TestRouterOwnPacketTooBig(t *testing.T) {
	t.Run("graph", func(t *testing.T) { routerOwnPacketTooBig(t, false) })
	t.Run("fast path", func(t *testing.T) { kfeature.Require(t, fastpath.TCFeatures...); routerOwnPacketTooBig(t, true) })
}

func routerOwnPacketTooBig(t *testing.T, fast bool) {
	tp := newTopo(t, 1)
	if !fast {
		tp.config = noFastPathConfig(t, tp.config, "afpacket")
	}
	noKernelIPv6(tp.fwd)
	addr6(t, tp.cli, "2001:db8:1::2/64", "2001:db8:1::1")
	addr6(t, tp.srv, "2001:db8:2::2/64", "2001:db8:2::1")
	// far, on a 1500-byte link behind srv: its TCP MSS (1440 / 1460)
	// does not spare the sender the discovery.
	far := narrowWAN(tp.env, tp.fwd, tp.srv, "10.16.0")

	cfg := withWANMTU(t, tp.config, "1400", []string{
		`"wan :: side(wan, 1500,`, // the WAN side's CheckMTU, IPFragmenter and their errors
	})
	p := tp.start(t, cfg)
	ping6OK(t, tp.cli, "2001:db8:16::2")
	tp.cli.Run("ping", "-c1", "-W2", "10.16.0.2") // ARP on every hop first (pingOK wants no loss)
	pingOK(t, tp.cli, "10.16.0.2")

	t.Run("ipv6 tcp", func(t *testing.T) {
		iperfBytes(t, tp.cli, far, "-6", "2001:db8:16::2", "4M")
		if out := tp.cli.MustRun("ip", "-6", "route", "get", "2001:db8:16::2"); !strings.Contains(out, "mtu 1400") {
			t.Errorf("cli learnt no path MTU for far: %s", out)
		}
	})
	t.Run("ipv6 ping", func(t *testing.T) {
		tp.cli.MustRun("ip", "-6", "route", "flush", "cache")
		out, _ := tp.cli.Run("ping", "-6", "-c1", "-W2", "-M", "do", "-s", "1452", "2001:db8:16::2")
		// From the router's address on the link it leaves by, the
		// LAN's (RFC 1812 4.3.2.4, src = "auto").
		if !strings.Contains(out, "From 2001:db8:1::1") || !strings.Contains(out, "mtu=1400") {
			t.Errorf("a 1500-byte ping -6: no packet too big (mtu 1400) from 2001:db8:1::1:\n%s", out)
		}
	})
	t.Run("ipv4 tcp", func(t *testing.T) {
		iperfBytes(t, tp.cli, far, "-4", "10.16.0.2", "4M")
		if out := tp.cli.MustRun("ip", "route", "get", "10.16.0.2"); !strings.Contains(out, "mtu 1400") {
			t.Errorf("cli learnt no path MTU for far over IPv4: %s", out)
		}
	})
	t.Run("ipv4 ping", func(t *testing.T) {
		tp.cli.MustRun("ip", "route", "flush", "cache")
		out, _ := tp.cli.Run("ping", "-c1", "-W2", "-M", "do", "-s", "1472", "10.16.0.2")
		if !strings.Contains(out, "From 10.1.0.1") || !strings.Contains(out, "mtu = 1400") {
			t.Errorf("a 1500-byte ping with DF: no fragmentation needed (mtu 1400) from 10.1.0.1 (the LAN's address, RFC 1812 4.3.2.4):\n%s", out)
		}
		// Without DF: fragmented by the router (RFC 791, RFC 1812
		// 5.2.6) and answered.
		before := counter(tp.snapshot(t), "IPFragmenter", "fragmented")
		tp.cli.MustRun("ip", "route", "flush", "cache")
		if out, err := tp.cli.Run("ping", "-c1", "-W2", "-M", "dont", "-s", "1472", "10.16.0.2"); err != nil {
			t.Errorf("a 1500-byte ping without DF was not answered across the 1400-byte link:\n%s", out)
		}
		// The workers publish their counters within a few
		// milliseconds of the answer.
		waitFor(t, 2*time.Second, "IPFragmenter split the echo request", func() (bool, string) {
			d := counter(tp.snapshot(t), "IPFragmenter", "fragmented") - before
			return d == 1, fmt.Sprintf("fragmented %d (want 1)", d)
		})
	})
	s := tp.snapshot(t)
	if n := counter(s, "CheckMTU", "too big"); n == 0 {
		t.Errorf("CheckMTU sent nothing to its error output")
	}
	if n := deviceCounter(s, "wan", drivers.CounterTxTooLong); n != 0 {
		t.Errorf("wan: %d frames longer than the link reached the driver", n)
	}
	// No output refused a frame the kernel redirected to it (the fast
	// path sent nothing longer than the link).
	for _, dev := range []string{"lan", "wan"} {
		if n := deviceCounter(s, dev, "fastpath_redirect_errors"); n != 0 {
			t.Errorf("%s: %d redirected frames refused", dev, n)
		}
	}
	if n := deviceCounter(s, "lan", drivers.CounterFastPathForwarded); fast && n == 0 {
		t.Errorf("the in-kernel fast path forwarded nothing from lan")
	} else {
		t.Logf("the in-kernel fast path forwarded %d packets from lan", n)
	}
	tp.stop(t, p)
}

// TestNATGatewayOwnPacketTooBig: the NAT gateway's WAN link has a
// 1400-byte MTU (both ends), the rest of the path 1500. The inside host's
// TCP to a host beyond the outside one, over IPv6 (routed, simple
// security) and IPv4 (masqueraded, DF), completes through the gateway's
// own packet too big and fragmentation needed, although both flows are
// fast-tracked after their handshake: FastTrack hands the batches with a
// packet longer than the link to the slow path, whose wan/frag6 answers.
// Twice: the graph alone (no fast path: FastTrack forwards in userspace)
// and as shipped, with the flows offloaded to the in-kernel fast path in
// TC, which hands longer datagrams back.
//
//	in ── lan0 [fwd] wan0 ══ (mtu 1400) ══ eth0 out eth1 ── eth0 far
//	                                       (2001:db8:16::2, 198.51.100.2)
func TestNATGatewayOwnPacketTooBig(t *testing.T) {
	t.Run("graph", func(t *testing.T) { natOwnPacketTooBig(t, false) })
	t.Run("fast path", func(t *testing.T) { kfeature.Require(t, fastpath.TCFeatures...); natOwnPacketTooBig(t, true) })
}

func natOwnPacketTooBig(t *testing.T, fast bool) {
	tp := newNATTopo(t)
	if !fast {
		tp.config = noFastPathConfig(t, tp.config, "afpacket")
	}
	noKernelIPv6(tp.fwd)
	addr6(t, tp.in, "2001:db8:1::10/64", "2001:db8:1::1")
	addr6(t, tp.ot, "2001:db8:2::2/64", "")
	tp.ot.MustRun("ip", "-6", "route", "add", "2001:db8:1::/64", "via", "2001:db8:2::1")
	far := narrowWAN(tp.env, tp.fwd, tp.ot, "198.51.100")

	tp.config = withWANMTU(t, tp.config, "1400", []string{
		`"wan :: side(wan, 1500,`, // the WAN side's IPFragmenters and packet too big
		`wmtu4 :: IPFragmenter(1500, false)`,
		`wmtu4[1] -> ICMPError(auto, unreachable, needfrag, 64, 1500)`,
	})
	p := tp.start(t)
	ping6OK(t, tp.in, "2001:db8:16::2")
	// One ping first resolves the ARP on every hop (pingOK wants no loss).
	tp.in.Run("ping", "-c1", "-W2", "198.51.100.2")
	pingOK(t, tp.in, "198.51.100.2")
	snap := func() *pipeline.Snapshot { return (&topo{fwd: tp.fwd}).snapshot(t) }

	t.Run("ipv6 tcp", func(t *testing.T) {
		iperfBytes(t, tp.in, far, "-6", "2001:db8:16::2", "4M")
		if out := tp.in.MustRun("ip", "-6", "route", "get", "2001:db8:16::2"); !strings.Contains(out, "mtu 1400") {
			t.Errorf("the inside host learnt no path MTU for far: %s", out)
		}
	})
	t.Run("ipv4 tcp", func(t *testing.T) {
		iperfBytes(t, tp.in, far, "-4", "198.51.100.2", "4M")
		if out := tp.in.MustRun("ip", "route", "get", "198.51.100.2"); !strings.Contains(out, "mtu 1400") {
			t.Errorf("the inside host learnt no path MTU for far over IPv4: %s", out)
		}
	})
	t.Run("ipv4 ping", func(t *testing.T) {
		tp.in.MustRun("ip", "route", "flush", "cache")
		out, _ := tp.in.Run("ping", "-c1", "-W2", "-M", "do", "-s", "1472", "198.51.100.2")
		if !strings.Contains(out, "From 192.168.1.1") || !strings.Contains(out, "mtu = 1400") {
			t.Errorf("a 1500-byte ping with DF: no fragmentation needed (mtu 1400) from 192.168.1.1:\n%s", out)
		}
		// Without DF: fragmented after SNAT (wfrag), and the answer,
		// fragmented by the outside router, reassembled before
		// Conntrack (reasm) and translated back (RFC 791, RFC 4787
		// REQ-14).
		before := snap()
		tp.in.MustRun("ip", "route", "flush", "cache")
		if out, err := tp.in.Run("ping", "-c1", "-W2", "-M", "dont", "-s", "1472", "198.51.100.2"); err != nil {
			t.Errorf("a 1500-byte ping without DF was not answered across the 1400-byte link:\n%s", out)
		}
		// The workers publish their counters within a few
		// milliseconds of the answer.
		waitFor(t, 2*time.Second, "IPFragmenter split the echo request, IPReassembler reassembled its reply", func() (bool, string) {
			after := snap()
			f := counter(after, "IPFragmenter", "fragmented") - counter(before, "IPFragmenter", "fragmented")
			r := counter(after, "IPReassembler", "datagrams") - counter(before, "IPReassembler", "datagrams")
			return f == 1 && r == 1, fmt.Sprintf("fragmented %d, reassembled %d (want 1 and 1)", f, r)
		})
	})
	s := snap()
	if n := counter(s, "FastTrack", "slow: longer than the mtu"); n == 0 {
		t.Errorf("FastTrack sent no long packet of a fast-tracked flow to the slow path")
	}
	if n := counter(s, "FastTrack", "fasttracked packets"); n < 1000 {
		t.Errorf("FastTrack forwarded only %d packets: the transfers were not fast-tracked", n)
	}
	for _, dev := range []string{"lan", "wan"} {
		if n := deviceCounter(s, dev, "fastpath_redirect_errors"); n != 0 {
			t.Errorf("%s: %d redirected frames refused", dev, n)
		}
	}
	if n := deviceCounter(s, "lan", drivers.CounterFastPathForwarded); fast && n == 0 {
		t.Errorf("the in-kernel fast path forwarded nothing from lan")
	} else {
		t.Logf("the in-kernel fast path forwarded %d packets from lan", n)
	}
	if n := deviceCounter(s, "wan", drivers.CounterTxTooLong); n != 0 {
		t.Errorf("wan: %d frames longer than the link reached the driver", n)
	}
	(&topo{fwd: tp.fwd}).stop(t, p)
}

// TestNATGatewayInboundFragNeeded: the NAT gateway's LAN link has a
// 1400-byte MTU (its end; the inside host's stays 1500, so its MSS does
// not spare the sender the discovery). An outside host's TCP to the
// forwarded port (203.0.113.1:8080 -> 192.168.1.10:80) completes through
// the gateway's own fragmentation needed, which quotes the packet as the
// outside host sent it (to the public address) so that its stack finds
// the connection and learns the path MTU.
func TestNATGatewayInboundFragNeeded(t *testing.T) {
	netns.RequireTool(t, "iperf3")
	tp := newNATTopo(t)
	tp.fwd.MustRun("ip", "link", "set", "dev", "lan0", "mtu", "1400")
	tp.config = withWANMTU(t, tp.config, "1400", []string{
		`lmtu4 :: IPFragmenter(1500, false)`,
		`lmtu4[1] -> ICMPError(auto, unreachable, needfrag, 64, 1500)`,
		`"lan :: side(lan, 1500,`, // the LAN side's IPFragmenters and packet too big
	})
	p := tp.start(t)
	srv := tp.in.Start("iperf3", "-s", "-p", "80")
	defer srv.Kill()
	var out string
	var err, jerr error
	var res struct {
		Error string `json:"error"`
		End   struct {
			SumReceived struct {
				Bytes float64 `json:"bytes"`
			} `json:"sum_received"`
		} `json:"end"`
	}
	for i := 0; i < 20; i++ {
		out, err = tp.ot.Run("timeout", "30", "iperf3", "-4", "-c", natWANAddr, "-p", "8080", "-J", "--connect-timeout", "2000", "-n", "4M")
		res.Error = ""
		jerr = json.Unmarshal([]byte(out), &res)
		if !strings.Contains(out, "unable to connect") {
			break
		}
		time.Sleep(150 * time.Millisecond) // the server is not listening yet
	}
	if jerr != nil || err != nil || res.Error != "" || res.End.SumReceived.Bytes < blackHoleBytes {
		t.Fatalf("iperf3 to the forwarded port: %v %v, received %.0f bytes (error %q)\n%.2000s", err, jerr, res.End.SumReceived.Bytes, res.Error, out)
	}
	t.Logf("iperf3 -n 4M to %s:8080 (DNAT to the inside host): %.0f bytes received", natWANAddr, res.End.SumReceived.Bytes)
	if r := tp.ot.MustRun("ip", "route", "get", natWANAddr); !strings.Contains(r, "mtu 1400") {
		t.Errorf("the outside host learnt no path MTU for the public address: %s", r)
	}
	s := (&topo{fwd: tp.fwd}).snapshot(t)
	if n := counter(s, "IPFragmenter", "too big"); n == 0 {
		t.Errorf("lmtu4 (IPFragmenter) sent nothing to its error output")
	}
	if n := deviceCounter(s, "lan", drivers.CounterTxTooLong); n != 0 {
		t.Errorf("lan: %d frames longer than the link reached the driver", n)
	}
	(&topo{fwd: tp.fwd}).stop(t, p)
}

// narrowWAN sets a 1400-byte MTU on the link between fwd's wan0 and the
// wan host's eth0, and puts a host "far" behind the wan host on a
// 1500-byte link (eth1 ── far's eth0): 2001:db8:16::1/64 and NET.1/24 on
// the wan host, which routes, 2001:db8:16::2/64 and NET.2/24 on far, whose
// default route is the wan host. It returns far.
func narrowWAN(env *netns.Env, fwd, wan *netns.NS, net string) *netns.NS {
	fwd.MustRun("ip", "link", "set", "dev", "wan0", "mtu", "1400")
	wan.MustRun("ip", "link", "set", "dev", "eth0", "mtu", "1400")
	far := env.NS("far")
	env.Veth(wan, "eth1", far, "eth0", 1)
	wan.MustRun("ethtool", "-K", "eth1", "tx", "off")
	far.MustRun("ethtool", "-K", "eth0", "tx", "off")
	wan.MustRun("ip", "-6", "addr", "add", "2001:db8:16::1/64", "dev", "eth1", "nodad")
	far.MustRun("ip", "-6", "addr", "add", "2001:db8:16::2/64", "dev", "eth0", "nodad")
	far.MustRun("ip", "-6", "route", "add", "default", "via", "2001:db8:16::1")
	wan.Addr("eth1", net+".1/24")
	far.Addr("eth0", net+".2/24")
	far.Route("default", "via", net+".1")
	wan.Sysctl("net.ipv6.conf.all.forwarding", "1")
	wan.Sysctl("net.ipv4.ip_forward", "1")
	return far
}
