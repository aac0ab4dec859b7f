package benchmarks

import (
	"fmt"
	"os"
	"runtime"
	"testing"

	"github.com/junction-dataplane/junction/pipeline"
)

// siteRouterGraph is configs/site-router.toml on gen devices: the trunk
// generates 64-byte UDP frames from flows hosts of VLAN vid's network to
// one outside address, tagged by a VLANEncap(vid) put in front of the
// trunk's Classifier (the gen driver makes untagged frames; the extra
// encapsulation is in the figure, about 5 ns: BenchmarkDecapEncap); the
// WAN's next hop is a static neighbour and the WAN sends one frame. The
// graph is otherwise the file as shipped: decapsulation, ARP, checks,
// reassembly, on VLAN 20 the per-host policer, ping filter, Conntrack,
// the filter, DNAT, routing, SNAT, fragmentation check, ARPQuerier.
func siteRouterGraph(t testing.TB, vid, flows int) []byte {
	src, err := os.ReadFile("../configs/site-router.toml")
	if err != nil {
		t.Fatal(err)
	}
	s := string(src)
	rep := func(old, new string) { s = replaceOnce(t, "site-router.toml", s, old, new) }
	rep("driver    = \"afxdp\"\ninterface = \"lan0\"\n", fmt.Sprintf(
		"driver    = \"gen\"\nsrc       = \"192.168.%d.0/24\"\ndst       = \"198.51.100.7\"\nflows     = %d\nsize      = 64\nmac       = \"02:00:00:00:01:01\"\n",
		vid, flows))
	rep("driver    = \"afxdp\"\ninterface = \"wan0\"\n", "driver    = \"gen\"\ncount     = 1\nmac       = \"02:00:00:00:02:01\"\n")
	rep(`"trunkin -> trunk ::`, fmt.Sprintf(`"trunkin -> VLANEncap(%d) -> trunk ::`, vid))
	rep(`"warp[1] -> [1]waq :: ARPQuerier(wan)",`, `"warp[1] -> [1]waq",`)
	rep("[graph]\n", "[elements.waq]\ntype      = \"ARPQuerier\"\ndevice    = \"wan\"\nneighbors = [\"203.0.113.2 02:00:00:00:02:02\"]\n\n[graph]\n")
	return []byte(s)
}

// BenchmarkSiteRouterGraph runs the site router's uplink path on one
// worker, stepped round by round (as BenchmarkNATGraph): from 1,000 hosts
// flows of VLAN 10 (the LAN) and of VLAN 20 (guests, through the
// per-host policer) to the WAN, masqueraded. ns/pkt and Mpps are wall
// clock; Mpps-cpu is per second of the benchmark thread's CPU time, what
// the graph costs on a machine shared with other work.
func BenchmarkSiteRouterGraph(b *testing.B) {
	for _, vid := range []int{10, 20} {
		b.Run(fmt.Sprintf("vlan=%d", vid), func(b *testing.B) {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			const flows = 1000
			r := buildStepped(b, "site-router-gen.toml", siteRouterGraph(b, vid, flows), pipeline.Options{})
			defer r.Close()
			for warm := 0; warm < 20*flows; {
				warm += r.Round(0)
			}
			s0 := r.Snapshot()
			if e := counter(s0, "ct", "entries"); e < flows*99/100 {
				b.Fatalf("%d live flows after warm-up, want %d", e, flows)
			}
			pkts := measureRounds(b, r)
			s1 := r.Snapshot()
			out := sent(s1, "wan") - sent(s0, "wan")
			if float64(out) < 0.99*float64(pkts) {
				for _, e := range s1.Elements {
					if e.Drops+e.Consumed > 0 {
						b.Logf("%s (%s): drops %d consumed %d %v", e.Element, e.Type, e.Drops, e.Consumed, e.Counters)
					}
				}
				b.Errorf("%d of %d packets left by the WAN", out, pkts)
			}
		})
	}
}

// sent is what device dev transmitted in snapshot s, from the driver's
// own counter. Not the ToDevice element's packets: elements' packet counts
// are published by the worker's clock about once a millisecond, at the
// start of a round, so a snapshot taken right after a short loop of rounds
// (-benchtime 1x: one round) misses what they sent; the gen driver counts
// every transmitted batch at once.
func sent(s *pipeline.Snapshot, dev string) uint64 {
	for _, d := range s.Devices {
		if d.Device != dev {
			continue
		}
		for _, c := range d.Counters {
			if c.Name == "tx_packets" {
				return c.Value
			}
		}
	}
	return 0
}

// TestSiteRouterGraphAllocs: a round of the site router's graph, on
// either VLAN, allocates nothing once its flows are tracked.
func TestSiteRouterGraphAllocs(t *testing.T) {
	for _, vid := range []int{10, 20} {
		r := buildStepped(t, "site-router-gen.toml", siteRouterGraph(t, vid, 256), pipeline.Options{})
		for warm := 0; warm < 20*256; {
			warm += r.Round(0)
		}
		if a := testing.AllocsPerRun(200, func() { r.Round(0) }); a != 0 {
			t.Errorf("vlan %d: %.1f allocations per round", vid, a)
		}
		r.Close()
	}
}
