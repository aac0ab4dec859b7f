package e2e

import (
	"bytes"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/junction-dataplane/junction/internal/netns"
	"github.com/junction-dataplane/junction/pipeline"
	"github.com/junction-dataplane/junction/pipeline/statstable"
)

// TestAccountingRealDevices: the contract router between real hosts, as
// shipped (afpacket with the in-kernel fast path in TC, one and two queues
// per veth), on afxdp (with its XDP fast path, one and two queues per
// veth: with one, FromDevice spreads in software between the 2 workers;
// and without a fast path) and on afpacket without a fast path. After
// mixed traffic (pings to and through the router, TTL expiry, 20,000 UDP
// packets on 256 flows, broadcast and multicast the router must not
// forward) and once the counters have settled:
//
//	rx + created = tx + drops + consumed + in flight + held
//
// where created is what the graph made (ARP requests, the ARP Tees'
// copies), consumed what the graph ended by design: the snapshot's
// Consumed (Discard, ARPResponder handed ARP that needs no answer, the ARP
// and ND frames ARPQuerier and NDPQuerier learnt from: "arp in", "nd
// in"), and held what ARPQuerier still holds; rx
// equals the devices' own rx_packets (what the fast path forwarded is
// reported apart, in neither), and nothing is in flight.
func TestAccountingRealDevices(t *testing.T) {
	for _, tc := range []struct {
		name   string
		queues int
		driver string // "contract" (afpacket, fast path in TC), "afxdp" (XDP fast path), "afxdp-graph" and "afpacket-graph" (no fast path)
	}{
		{"contract: afpacket fast path in TC, 1 queue", 1, "contract"},
		{"contract: afpacket fast path in TC, 2 queues", 2, "contract"},
		{"afxdp fast path, 1 queue", 1, "afxdp"},
		{"afxdp fast path, 2 queues", 2, "afxdp"},
		{"afxdp graph only, 1 queue", 1, "afxdp-graph"},
		{"afpacket graph only, 1 queue", 1, "afpacket-graph"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tp := newTopo(t, tc.queues)
			config := ""
			switch tc.driver {
			case "afpacket-graph", "afxdp-graph":
				config = noFastPathConfig(t, tp.config, strings.TrimSuffix(tc.driver, "-graph"))
			case "afxdp":
				config = fastPathConfig(t, tp.config)
				// The XDP fast path redirects into a veth only if the
				// peer runs NAPI (GRO on); see TestFastPath.
				for _, ns := range []*netns.NS{tp.cli, tp.srv} {
					ns.MustRun("ethtool", "-K", "eth0", "gro", "on")
				}
			}
			p := tp.start(t, config)
			defer func() {
				out := tp.stop(t, p)
				if !strings.Contains(out, "total: rx ") {
					t.Errorf("no total line on exit:\n%s", out)
				}
			}()
			pingOK(t, tp.cli, "10.2.0.2")
			pingOK(t, tp.srv, "10.1.0.2")
			pingOK(t, tp.cli, "10.2.0.1")
			tp.cli.Run("ping", "-c1", "-W1", "-t1", "10.2.0.2")       // time exceeded
			tp.cli.Run("ping", "-b", "-c2", "-W1", "255.255.255.255") // limited broadcast
			tp.cli.Run("ping", "-c2", "-W1", "239.1.1.1")             // multicast
			udpFlood(t, tp.cli, 256, 80)

			s := settled(t, tp)
			tot := s.Totals
			created := counter(s, "ARPQuerier", "requests") + typePackets(s, "Tee") // Tee(2): one copy each
			// Neighbour discovery creates solicitations, answers and the
			// start-up announcements, and consumes what it learns from.
			created += counter(s, "NDPQuerier", "solicitations") + counter(s, "NDPResponder", "advertisements") +
				counter(s, "NDPResponder", "announcements")
			held := counter(s, "ARPQuerier", "held") - counter(s, "ARPQuerier", "released") - counter(s, "ARPQuerier", "unresolved")
			if in, out := tot.RX+created, tot.TX+tot.Drops+tot.Consumed+tot.InFlight+held; in != out {
				var buf bytes.Buffer
				statstable.Render(&buf, s, statstable.Options{PerWorker: true})
				t.Errorf("rx %d + created %d = %d, but tx %d + drops %d + consumed %d + in flight %d + held %d = %d\n%s",
					tot.RX, created, in, tot.TX, tot.Drops, tot.Consumed, tot.InFlight, held, out, buf.String())
			}
			// The queriers' input 1 is what they learn from: every
			// frame of it consumed or dropped with a reason.
			if in1, ends := counter(s, "NDPQuerier", "nd frames"), counter(s, "NDPQuerier", "nd in")+counter(s, "NDPQuerier", "nd invalid"); in1 != ends {
				t.Errorf("NDPQuerier: %d ND frames in, %d consumed or dropped", in1, ends)
			}
			// What elements consumed is theirs: the totals' Consumed is
			// the sum of the elements', none of it among the drops.
			var elDrops, elConsumed uint64
			for _, e := range s.Elements {
				elDrops += e.Drops
				elConsumed += e.Consumed
			}
			if tot.Consumed != elConsumed || tot.Drops < elDrops {
				t.Errorf("totals: consumed %d, drops %d; the elements consumed %d and dropped %d", tot.Consumed, tot.Drops, elConsumed, elDrops)
			}
			var devRX uint64
			for _, dev := range []string{"lan", "wan"} {
				devRX += deviceCounter(s, dev, "rx_packets")
			}
			if devRX != tot.RX {
				t.Errorf("rx %d, but the devices received %d", tot.RX, devRX)
			}
			if tot.InFlight != 0 {
				t.Errorf("%d packets in flight between workers with no traffic", tot.InFlight)
			}
			// On a loaded machine a veth may lose some before the forwarder
			// sees them (the kernel's loss, outside the invariant).
			if tot.RX+tot.FastPath < 20000/2 {
				t.Errorf("rx %d, fast path %d: most of the 20,000 UDP packets did not arrive", tot.RX, tot.FastPath)
			}
			// One veth queue for two workers: afxdp has one RX queue and
			// spreads; afpacket's fanout gives each worker a socket of its
			// own, so a graph with no per-flow state does not hand off.
			if tc.queues == 1 && tc.driver == "afxdp" && counter(s, "FromDevice", "handed off") == 0 {
				t.Error("one queue, two workers: nothing was spread")
			}
			t.Logf("rx %d tx %d drops %d; fast path forwarded %d (reported apart)", tot.RX, tot.TX, tot.Drops, tot.FastPath)
			if strings.HasSuffix(tc.driver, "-graph") && tot.FastPath != 0 {
				t.Errorf("fast path forwarded %d packets in a graph without one", tot.FastPath)
			}
			if !strings.HasSuffix(tc.driver, "-graph") && tot.FastPath < 20000/2 {
				t.Errorf("the in-kernel fast path forwarded %d of the 20,000 UDP packets", tot.FastPath)
			}
			// RFC 1812: refused by CheckIPHeader, counted, never forwarded.
			if n := counter(s, "CheckIPHeader", "limited broadcast"); n < 2 {
				t.Errorf("CheckIPHeader counted %d limited broadcasts, want the 2 pings", n)
			}
			if n := counter(s, "CheckIPHeader", "multicast destination"); n < 2 {
				t.Errorf("CheckIPHeader counted %d multicast destinations, want the 2 pings", n)
			}
		})
	}
}

// noFastPathConfig is a contract config (router-veth.toml or
// nat-gateway.toml) without its fast path, on driver (afxdp or afpacket,
// as TestAfpacket runs it).
func noFastPathConfig(t *testing.T, contract, driver string) string {
	data, err := os.ReadFile(contract)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Count(string(data), shippedDevice) != 2 {
		t.Fatalf("%s: no longer two devices with %q; update noFastPathConfig", contract, shippedDevice)
	}
	cfg := strings.ReplaceAll(string(data), shippedDevice, `driver    = "`+driver+`"`+"\n")
	cfg = regexp.MustCompile(`(?m)^offload = \[[^\]\n]*\]\n`).ReplaceAllString(cfg, "") // IPLookup's or FastTrack's, whatever its ports
	if strings.Count(cfg, `driver    = "`+driver+`"`) != 2 || strings.Contains(cfg, "fastpath  =") || strings.Contains(cfg, "offload =") {
		t.Fatalf("%s: cannot turn it into a graph without fast path any more", filepath.Base(contract))
	}
	path := filepath.Join(t.TempDir(), driver+"-nofastpath-"+filepath.Base(contract))
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// udpFlood sends rounds × flows small UDP packets from ns to 10.2.0.2:9,
// one flow per socket.
func udpFlood(t *testing.T, ns *netns.NS, flows, rounds int) {
	t.Helper()
	if err := ns.Do(func() error {
		var conns []*net.UDPConn
		defer func() {
			for _, c := range conns {
				c.Close()
			}
		}()
		for range flows {
			c, err := net.DialUDP("udp4", nil, &net.UDPAddr{IP: net.IPv4(10, 2, 0, 2), Port: 9})
			if err != nil {
				return err
			}
			conns = append(conns, c)
		}
		msg := make([]byte, 18)
		for range rounds {
			for _, c := range conns {
				c.Write(msg)
			}
			time.Sleep(2 * time.Millisecond) // below the rings' size
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

// settled reads the stats until two readings 300 ms apart agree: no packet
// is moving any more. The readings compare the elements' counters as well
// as the totals: a snapshot of a running router reads the devices before
// the elements, so a packet an element created in between (NDPResponder's
// announcements, a second apart for three seconds after each start or
// reload) is counted by the element and its ToDevice but not yet by the
// device. The totals alone would call such a reading settled.
func settled(t *testing.T, tp *topo) *pipeline.Snapshot {
	t.Helper()
	prev := tp.snapshot(t)
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); {
		time.Sleep(300 * time.Millisecond)
		s := tp.snapshot(t)
		if s.Totals == prev.Totals && elementCounts(s) == elementCounts(prev) {
			return s
		}
		prev = s
	}
	t.Fatalf("the counters did not settle within 10 s: %+v", prev.Totals)
	return nil
}

// elementCounts sums what every element counted: packets, drops and
// named counters (not its time, which moves while nothing does).
func elementCounts(s *pipeline.Snapshot) [3]uint64 {
	var c [3]uint64
	for _, e := range s.Elements {
		c[0] += e.Packets
		c[1] += e.Drops
		for _, v := range e.Counters {
			c[2] += v.Value
		}
	}
	return c
}
