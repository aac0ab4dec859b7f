package e2e

import (
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/junction-dataplane/junction/internal/netns"
)

// TestQoSShaperAQM measures TCP's start-up through docs/qos.md's 20
// Mbit/s uplink shaper with its queue managed by CoDel (the default), by
// CoDel with the hosts' TCP asking for ECN (sysctl net.ipv4.tcp_ecn=1:
// CoDel marks instead of dropping), and by drop tail alone (aqm = "off"),
// interleaved round by round, each run a fresh forwarder and a fresh
// 10-s iperf3 TCP upload (no seconds omitted: the start is what differs).
// A measurement for benchmarks/qos.md, not a check: it runs only with
// JN_QOS_AQM_ROUNDS set (the number of rounds) and logs "aqm:" lines, and
// the medians at the end; it fails only when a run does not complete.
//
//	JN_QOS_AQM_ROUNDS=5 go test -count=1 -run '^TestQoSShaperAQM$' -v ./cmd/forwarder/e2e/
func TestQoSShaperAQM(t *testing.T) {
	rounds, _ := strconv.Atoi(os.Getenv("JN_QOS_AQM_ROUNDS"))
	if rounds <= 0 {
		t.Skip("a measurement: set JN_QOS_AQM_ROUNDS to the number of rounds")
	}
	netns.RequireTool(t, "iperf3")
	graph := qosGraphs(t)[1]
	if !strings.Contains(graph, "priority = [\"ef\"]\n") {
		t.Fatal("docs/qos.md's shaper graph has no priority line to add the aqm key after")
	}
	variants := []struct{ name, aqm, ecn string }{
		{"codel", "codel", "0"},
		{"codel+ecn", "codel", "1"},
		{"drop tail", "off", "0"},
	}
	type sample struct{ rate, minSec float64 }
	got := map[string][]sample{}
	for round := 1; round <= rounds; round++ {
		for _, v := range variants {
			tp := newTopo(t, 1)
			for _, ns := range []*netns.NS{tp.cli, tp.srv} {
				ns.MustRun("sysctl", "-qw", "net.ipv4.tcp_ecn="+v.ecn)
			}
			g := strings.Replace(graph, "priority = [\"ef\"]\n", "priority = [\"ef\"]\naqm      = \""+v.aqm+"\"\n", 1)
			p := qosStart(t, tp, g)
			qosServers(tp)
			qosPriority(t, tp.cli, tp.srv)
			load0, _ := os.ReadFile("/proc/loadavg")
			ip, r := qosRun(t, tp, "5201", false)
			load1, _ := os.ReadFile("/proc/loadavg")
			s := tp.snapshot(t)
			minSec := 0.0
			var secs []string
			for i, iv := range r.recv {
				x := iv.BitsPerSecond * qosTCPIP / 1e6
				if i == 0 || x < minSec {
					minSec = x
				}
				secs = append(secs, fmt.Sprintf("%.1f", x))
			}
			t.Logf("aqm: round %d %-10s IP rate %5.2f Mbit/s (%.3f of 20), retransmits %4d, codel drops %d, ce marked %d, queue full %d; seconds %s; load %s -> %s",
				round, v.name, ip/1e6, ip/qosRate, r.retrans, counter(s, "Shaper", "codel"), counter(s, "Shaper", "ce marked"),
				counter(s, "Shaper", "queue full"), strings.Join(secs, " "), strings.Fields(string(load0))[0], strings.Fields(string(load1))[0])
			got[v.name] = append(got[v.name], sample{ip / 1e6, minSec})
			tp.stop(t, p)
		}
	}
	for _, v := range variants {
		var rates, mins []float64
		for _, x := range got[v.name] {
			rates = append(rates, x.rate)
			mins = append(mins, x.minSec)
		}
		sort.Float64s(rates)
		sort.Float64s(mins)
		t.Logf("aqm: %-10s median %.2f Mbit/s (%.3f of 20) [%.2f-%.2f] over %d runs; slowest second: median %.1f, lowest %.1f Mbit/s",
			v.name, median(rates), median(rates)/20, rates[0], rates[len(rates)-1], len(rates), median(mins), mins[0])
	}
}
