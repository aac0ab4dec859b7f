package configs_test

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/junction-dataplane/junction/pipeline"
	"github.com/junction-dataplane/junction/pipeline/statstable"
)

// The accounting invariant (pipeline.Totals), on real elements and drivers:
//
//	RX + created = TX + Drops + Consumed + InFlight + held
//
// (Drops are losses; Consumed what the graph freed by design: Discard,
// ARPResponder handed ARP that needs no answer.)
//
// checked on every shape of graph the gen and pcap drivers can run: one
// worker and several, spreading between workers (FromDevice's handoff),
// elements that create packets (Tee), a stateful NAT with its FastTrack
// shortcut, and a plugin (the pipeline package's own tests check a source
// that drops packets it received, as FromDevice's "spread full" does, and
// router.toml's tests the pcap driver). Runs that drain hold nothing
// and have nothing in flight; runs that are stopped may leave packets in
// the handoff rings, which InFlight reports. RX must also equal what the
// devices say they received. The afxdp and afpacket drivers and the
// in-kernel fast path are checked as root in cmd/forwarder/e2e.

// acctL3 is an L3 router on gen devices: in → check → TTL → route → out.
// Half the destinations (10.128.0.0/9) have no route and are dropped;
// TEE, when set, is replaced by a Tee whose copy is discarded.
const acctL3 = `
[forwarder]
workers = %d
batch   = 32

[devices.in]
driver      = "gen"
count       = %d
queues      = %d
flows       = 1000
split_flows = %v
src         = "198.18.0.0/24"
dst         = "10.0.0.0/8"

[devices.out]
driver = "gen"

[elements.rt]
type   = "IPLookup"
routes = ["10.0.0.0/9 via 10.2.0.2 out 0"]

[graph]
links = [
  "FromDevice(in, %s) -> cls :: Classifier(ip, -)",
  "cls[0] -> CheckIPHeader -> ttl :: DecTTL -> %s rt",
  "rt[0] -> EtherRewrite(02:00:00:00:02:01, 02:00:00:00:02:02) -> ToDevice(out)",
  "cls[1] -> Discard",
  "ttl[1] -> Discard",
  %s
]
`

type acctL3Opts struct {
	workers, count, queues int
	splitFlows             bool
	tee                    bool
}

func (o acctL3Opts) config() string {
	tee, teeLink := "", ""
	if o.tee {
		tee, teeLink = "tee :: Tee(2) ->", `"tee[1] -> Discard",`
	}
	// The graph keeps no per-flow state, so auto would hand nothing off
	// with a queue per worker: spreading is asked for where the cases
	// test it.
	spread := "auto"
	if o.workers > 1 && !o.splitFlows {
		spread = "on"
	}
	text := fmt.Sprintf(acctL3, o.workers, o.count, o.queues, o.splitFlows, spread, tee, teeLink)
	return text
}

// loadText writes a graph into dir and loads it.
func loadAcct(t *testing.T, dir, name, text string) *pipeline.Graph {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	g, err := pipeline.Load(path)
	if err != nil {
		t.Fatalf("%v\n%s", err, text)
	}
	return g
}

// runDrained runs a finite graph until every source is drained.
func runDrained(t *testing.T, g *pipeline.Graph) *pipeline.Snapshot {
	t.Helper()
	r, err := pipeline.Start(g, pipeline.Options{NoPin: true})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-r.Done():
	case <-time.After(60 * time.Second):
		r.Stop()
		<-r.Done()
		t.Fatal("a finite graph did not drain in 60s")
	}
	if err := r.Wait(); err != nil {
		t.Fatal(err)
	}
	return r.Snapshot()
}

// runFor runs a graph for d, then stops it.
func runFor(t *testing.T, g *pipeline.Graph, d time.Duration) *pipeline.Snapshot {
	t.Helper()
	r, err := pipeline.Start(g, pipeline.Options{NoPin: true})
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(d)
	r.Stop()
	select {
	case <-r.Done():
	case <-time.After(20 * time.Second):
		t.Fatal("the graph did not stop within 20s")
	}
	if err := r.Wait(); err != nil {
		t.Fatal(err)
	}
	return r.Snapshot()
}

// created counts the packets elements made: each Tee makes a copy of every
// packet for each output but the first (one it could not make is counted
// as its "no buffer" drop, so it counts here as made); ARPQuerier makes its
// requests.
func created(s *pipeline.Snapshot) uint64 {
	var n uint64
	for _, e := range s.Elements {
		switch e.Type {
		case "Tee":
			n += e.Packets // the graphs here use Tee(2): one copy each
		case "ARPQuerier":
			n += counter(e, "requests")
		}
	}
	return n
}

func counter(e pipeline.ElementStats, name string) uint64 {
	for _, c := range e.Counters {
		if c.Name == name {
			return c.Value
		}
	}
	return 0
}

// deviceSum sums a driver counter over the devices.
func deviceSum(s *pipeline.Snapshot, name string) uint64 {
	var n uint64
	for _, d := range s.Devices {
		for _, c := range d.Counters {
			if c.Name == name {
				n += c.Value
			}
		}
	}
	return n
}

// checkInvariant checks RX + created = TX + Drops + Consumed + InFlight on a graph that
// has stopped (nothing held: ARPQuerier drops what it holds at close) and
// RX against the devices' own count of received packets.
func checkInvariant(t *testing.T, s *pipeline.Snapshot, deviceRX string) {
	t.Helper()
	tot := s.Totals
	c := created(s)
	if out := tot.TX + tot.Drops + tot.Consumed + tot.InFlight; tot.RX+c != out {
		var buf bytes.Buffer
		statstable.Render(&buf, s, statstable.Options{PerWorker: true})
		t.Errorf("rx %d + created %d = %d, but tx %d + drops %d + consumed %d + in flight %d = %d (off by %d)\n%s",
			tot.RX, c, tot.RX+c, tot.TX, tot.Drops, tot.Consumed, tot.InFlight, out,
			int64(tot.RX+c)-int64(out), buf.String())
	}
	if deviceRX != "" {
		if d := deviceSum(s, deviceRX); d != tot.RX {
			t.Errorf("rx %d, but the devices received %d (%s)", tot.RX, d, deviceRX)
		}
	}
	if tot.RX == 0 {
		t.Error("rx 0: the test ran no traffic")
	}
}

func elementSum(s *pipeline.Snapshot, name, counterName string) uint64 {
	var n uint64
	for _, e := range s.Elements {
		if e.Element == name {
			n += counter(e, counterName)
		}
	}
	return n
}

func TestAccountingDrained(t *testing.T) {
	const count = 40000
	for _, tc := range []struct {
		name    string
		o       acctL3Opts
		handoff bool // packets must cross between workers
	}{
		{"1 worker", acctL3Opts{workers: 1, count: count, queues: 1}, false},
		{"2 workers, flows on their queues", acctL3Opts{workers: 2, count: count, queues: 2, splitFlows: true}, false},
		{"2 workers spreading", acctL3Opts{workers: 2, count: count, queues: 2}, true},
		{"2 workers spreading 3 queues", acctL3Opts{workers: 2, count: count, queues: 3}, true},
		{"2 workers spreading 1 queue", acctL3Opts{workers: 2, count: count, queues: 1}, true},
		{"tee, 1 worker", acctL3Opts{workers: 1, count: count, queues: 1, tee: true}, false},
		{"tee, 2 workers spreading", acctL3Opts{workers: 2, count: count, queues: 2, tee: true}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := runDrained(t, loadAcct(t, t.TempDir(), "l3.toml", tc.o.config()))
			checkInvariant(t, s, "rx_packets")
			if s.Totals.RX != count {
				t.Errorf("rx %d, want %d", s.Totals.RX, count)
			}
			if s.Totals.InFlight != 0 {
				t.Errorf("in flight %d after draining", s.Totals.InFlight)
			}
			off, in := elementSum(s, "FromDevice(in)@1", "handed off"), elementSum(s, "FromDevice(in)@1", "handed in")
			if off != in {
				t.Errorf("handed off %d, handed in %d: a drained graph has nothing between workers", off, in)
			}
			if tc.handoff && off == 0 {
				t.Error("no packet was handed off: the case does not test spreading")
			}
			if s.Totals.Drops == 0 || s.Totals.TX == 0 {
				t.Errorf("tx %d drops %d: the graph should both send and drop", s.Totals.TX, s.Totals.Drops)
			}
			// The Tee's copies end in a Discard: consumed, every one,
			// and not drops (the drops are the unrouted half).
			var wantConsumed uint64
			if tc.o.tee {
				wantConsumed = count
			}
			if s.Totals.Consumed != wantConsumed {
				t.Errorf("consumed %d, want %d (drops %d)", s.Totals.Consumed, wantConsumed, s.Totals.Drops)
			}
		})
	}
}

// A spreading run stopped under load leaves packets in the handoff rings:
// they are in RX (the devices received them) and in InFlight.
func TestAccountingStoppedSpreading(t *testing.T) {
	o := acctL3Opts{workers: 2, count: 0, queues: 2}
	var inFlight uint64
	for attempt := 0; attempt < 5; attempt++ {
		s := runFor(t, loadAcct(t, t.TempDir(), "l3.toml", o.config()), 150*time.Millisecond)
		checkInvariant(t, s, "rx_packets")
		inFlight = max(inFlight, s.Totals.InFlight)
		if t.Failed() || inFlight > 0 {
			break
		}
	}
	t.Logf("in flight at stop: %d", inFlight)
}

// NAT: bench-nat.toml's slow path and FastTrack shortcut, spreading with
// the DNAT steering hash on two workers.
func TestAccountingNAT(t *testing.T) {
	src, err := os.ReadFile("bench-nat.toml")
	if err != nil {
		t.Fatal(err)
	}
	text := string(src)
	for _, r := range [][2]string{
		{"[forwarder]\n", "[forwarder]\nworkers = 2\n"},
		{"split_flows = true", "split_flows = false\ncount = 50000"},
	} {
		if !strings.Contains(text, r[0]) {
			t.Fatalf("bench-nat.toml has no %q any more", r[0])
		}
		text = strings.Replace(text, r[0], r[1], 1)
	}
	s := runDrained(t, loadAcct(t, t.TempDir(), "nat.toml", text))
	checkInvariant(t, s, "rx_packets")
	if s.Totals.RX != 50000 {
		t.Errorf("rx %d, want 50000", s.Totals.RX)
	}
	if elementSum(s, "FromDevice(wan)@1", "handed off") == 0 {
		t.Error("nothing handed off: the case does not test spreading")
	}
}

// A plugin (the pattern filter example, one process per worker) between two
// devices, with spreading: its drops are element drops like any other.
func TestAccountingPlugin(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a plugin")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "bin", "patternfilter")
	cmd := exec.Command("go", "build", "-o", bin, "./plugins/examples/patternfilter/cmd/patternfilter")
	cmd.Dir = ".."
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	text := `
[forwarder]
workers = 2

[devices.in]
driver = "gen"
count  = 30000
queues = 2
flows  = 100
size   = 80

[devices.out]
driver = "gen"

[devices.matched]
driver = "gen"

[elements.filter]
type       = "Plugin"
path       = "%s"
element    = "PatternFilter"
on_failure = "drop"
timeout    = "2s"

[elements.filter.config]
patterns = ["hex:00000000"]
scope    = "payload"

[graph]
links = [
  "FromDevice(in) -> filter",
  "filter[0] -> ToDevice(out)",
  "filter[1] -> ToDevice(matched)",
]
`
	s := runDrained(t, loadAcct(t, dir, "plugin.toml", fmt.Sprintf(text, bin)))
	checkInvariant(t, s, "rx_packets")
	if s.Totals.RX != 30000 {
		t.Errorf("rx %d, want 30000", s.Totals.RX)
	}
	if elementSum(s, "filter", "crashes") != 0 {
		t.Error("the plugin crashed")
	}
}
