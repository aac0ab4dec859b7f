package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/junction-dataplane/junction/internal/netns"
)

// natGraphOnly is configs/nat-gateway.toml (its driver, afpacket) without
// FastTrack and the in-kernel fast path: every segment of every flow
// passes Conntrack, so that its window tracking (on by default) follows
// whole TCP streams.
const natGraphOnly = `
[forwarder]
workers = 2

[devices.lan]
driver    = "afpacket"
interface = "lan0"
addresses = ["192.168.1.1/24"]

[devices.wan]
driver    = "afpacket"
interface = "wan0"
addresses = ["203.0.113.1/24"]

[elements.rt]
type   = "IPLookup"
routes = ["192.168.1.0/24 out 0", "203.0.113.0/24 out 1", "0.0.0.0/0 via 203.0.113.2 out 1"]

[elements.ct]
type = "Conntrack"

[elements.dnat]
type  = "DNAT"
rules = ["tcp 203.0.113.1:8080 -> 192.168.1.10:80"]

[elements.snat]
type = "SNAT"
to   = "203.0.113.1"

[elements.me]
type    = "ICMPPingResponder"
devices = ["lan", "wan"]

[graph]
links = [
  "FromDevice(lan) -> lcls :: Classifier(arp, ip, -)",
  "FromDevice(wan) -> wcls :: Classifier(arp, ip, -)",
  "lcls[2] -> Discard",
  "wcls[2] -> Discard",
  "lcls[0] -> larp :: Tee(2)",
  "wcls[0] -> warp :: Tee(2)",
  "larp[0] -> ARPResponder(lan) -> ToDevice(lan)",
  "warp[0] -> ARPResponder(wan) -> ToDevice(wan)",
  "larp[1] -> [1]laq :: ARPQuerier(lan)",
  "warp[1] -> [1]waq :: ARPQuerier(wan)",
  "lcls[1] -> CheckIPHeader -> lpng :: Classifier(icmp and (dst host 192.168.1.1 or dst host 203.0.113.1), -)",
  "wcls[1] -> CheckIPHeader -> wpng :: Classifier(icmp and (dst host 192.168.1.1 or dst host 203.0.113.1), -)",
  "lpng[0] -> me",
  "wpng[0] -> me",
  "me[0] -> rt",
  "me[1] -> ct",
  "lpng[1] -> ct",
  "wpng[1] -> ct",
  "ct -> dnat -> loc :: Classifier(dst host 192.168.1.1 or dst host 203.0.113.1, -)",
  "loc[0] -> Discard",
  "loc[1] -> ttl :: DecTTL -> rt",
  "ttl[1] -> Discard",
  "rt[0] -> laq -> ToDevice(lan)",
  "rt[1] -> out :: Classifier(src net 192.168.1.0/24, -)",
  "out[0] -> snat -> waq",
  "out[1] -> waq",
  "waq -> ToDevice(wan)",
]
`

// graphOnlyNAT is the NAT topology (two queues per veth) running
// natGraphOnly.
func graphOnlyNAT(t *testing.T) (*gateway, *natTopo) {
	tp := newNATTopoQueues(t, 2)
	tp.config = filepath.Join(t.TempDir(), "nat-graph-only.toml")
	if err := os.WriteFile(tp.config, []byte(natGraphOnly), 0o644); err != nil {
		t.Fatal(err)
	}
	return &gateway{name: "nat (graph only)", cli: tp.in, fwd: tp.fwd, srv: tp.ot, dst: natOutside,
		bin: tp.bin, config: tp.config, start: func(t *testing.T) *netns.Proc { return tp.start(t) }}, tp
}

// TestTCPWindowTracked: TCP through a NAT gateway whose Conntrack sees
// every segment (no FastTrack), with window tracking on as the graph
// file's default: 1 and 8 streams and the reverse direction flow without
// a stall and without a segment found outside its window; a segment the
// client's host sends 2³⁰ beyond the flow's window during a stream (a
// forged copy of one of its segments, tcp_forge.py) is the one counted
// "invalid: tcp window", and the stream carries on.
func TestTCPWindowTracked(t *testing.T) {
	netns.RequireRoot(t)
	netns.RequireTool(t, "iperf3")
	netns.RequireTool(t, "python3")
	g, _ := graphOnlyNAT(t)
	g.iperfServer(t)
	p := g.start(t)
	defer stopFwd(t, p)
	for _, c := range []tcpCase{{1, false}, {1, true}, {8, false}} {
		r := g.iperf(t, 12*time.Second, c.args()...)
		t.Logf("%v: %.0f Mbit/s, %d retransmits", c, r.bps/1e6, r.retrans)
		if r.err != "" {
			t.Errorf("%v: did not complete: %s\n%.2000s", c, r.err, r.out)
		} else if st := r.stall(); st != "" {
			t.Errorf("%v: stalled: %s", c, st)
		}
	}
	s := (&topo{fwd: g.fwd}).snapshot(t)
	if n := logInvalid(t, s); n != 0 {
		t.Fatalf("Conntrack found %d packets invalid in ordinary TCP", n)
	}

	forge, err := filepath.Abs("testdata/tcp_forge.py")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan iperfResult, 1)
	go func() { done <- g.iperf(t, 14*time.Second, "-t", "4") }()
	time.Sleep(time.Second)
	out, ferr := g.cli.Run("python3", forge, "eth0", natOutside, "5201", "1073741824")
	r := <-done
	t.Logf("forged segment: %s (%v); stream %.0f Mbit/s, %d retransmits", strings.TrimSpace(out), ferr, r.bps/1e6, r.retrans)
	if ferr != nil {
		t.Fatalf("tcp_forge.py: %v\n%s", ferr, out)
	}
	if r.err != "" {
		t.Errorf("the stream did not complete: %s", r.err)
	} else if st := r.stall(); st != "" {
		t.Errorf("the stream stalled: %s", st)
	}
	s = (&topo{fwd: g.fwd}).snapshot(t)
	logInvalid(t, s)
	if n := counter(s, "Conntrack", "invalid: tcp window"); n != 1 {
		t.Errorf("invalid: tcp window = %d after one forged out-of-window segment, want 1", n)
	}
}

// TestTCPWindowRestart: TestTCPRestart's stream through the graph-only
// gateway, whose Conntrack checks every segment's window: the restarted
// forwarder picks the flow up mid-stream (followed liberally, its window
// scale unknown) and the stream resumes.
func TestTCPWindowRestart(t *testing.T) {
	netns.RequireRoot(t)
	netns.RequireTool(t, "iperf3")
	g, _ := graphOnlyNAT(t)
	tcpRestart(t, g)
}
