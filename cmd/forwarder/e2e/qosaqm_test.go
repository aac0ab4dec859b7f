package e2e

import (
	"fmt"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/junction-dataplane/junction/internal/netns"
)

// TestQoSShaperAQM measures TCP's start-up through docs/qos.md's 20
// Mbit/s uplink shaper with its queue managed by CoDel (the default), by
// CoDel with the hosts' TCP asking for ECN (sysctl net.ipv4.tcp_ecn=1:
// CoDel marks instead of dropping), and by drop tail alone (aqm = "off"),
// interleaved round by round, each run a fresh forwarder and a fresh
// 10-s iperf3 TCP upload (no seconds omitted: the start is what differs).
// Pings through the shaper during each upload (best effort, like the
// upload) show the delay its queue adds. A measurement for
// benchmarks/qos.md, not a check: it runs only with
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
	type sample struct{ rate, minSec, rtt float64 }
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
			// The delay the queue adds: pings (best effort, as the
			// upload) through the shaper while TCP fills it.
			var pings string
			var wg sync.WaitGroup
			wg.Add(1)
			go func() {
				defer wg.Done()
				pings, _ = tp.cli.Run("ping", "-n", "-i", "0.2", "-c", "45", "10.2.0.2")
			}()
			ip, r := qosRun(t, tp, "5201", false)
			wg.Wait()
			load1, _ := os.ReadFile("/proc/loadavg")
			var rtts []float64
			for _, m := range regexp.MustCompile(`time=([0-9.]+) ms`).FindAllStringSubmatch(pings, -1) {
				if v, err := strconv.ParseFloat(m[1], 64); err == nil {
					rtts = append(rtts, v)
				}
			}
			sort.Float64s(rtts)
			rtt := median(rtts)
			s := tp.snapshot(t)
			minSec := -1.0
			var secs []string
			for _, iv := range r.recv {
				if iv.Seconds < 0.5 {
					continue // the last, partial interval
				}
				x := iv.BitsPerSecond * qosTCPIP / 1e6
				if minSec < 0 || x < minSec {
					minSec = x
				}
				secs = append(secs, fmt.Sprintf("%.1f", x))
			}
			t.Logf("aqm: round %d %-10s IP rate %5.2f Mbit/s (%.3f of 20), retransmits %4d, codel drops %d, ce marked %d, queue full %d; ping through it: median %.1f ms of %d; seconds %s; load %s -> %s",
				round, v.name, ip/1e6, ip/qosRate, r.retrans, counter(s, "Shaper", "codel"), counter(s, "Shaper", "ce marked"),
				counter(s, "Shaper", "queue full"), rtt, len(rtts), strings.Join(secs, " "), strings.Fields(string(load0))[0], strings.Fields(string(load1))[0])
			got[v.name] = append(got[v.name], sample{ip / 1e6, minSec, rtt})
			tp.stop(t, p)
		}
	}
	for _, v := range variants {
		var rates, mins, rtts []float64
		for _, x := range got[v.name] {
			rates = append(rates, x.rate)
			mins = append(mins, x.minSec)
			rtts = append(rtts, x.rtt)
		}
		sort.Float64s(rates)
		sort.Float64s(mins)
		sort.Float64s(rtts)
		t.Logf("aqm: %-10s median %.2f Mbit/s (%.3f of 20) [%.2f-%.2f] over %d runs; slowest whole second: median %.1f, lowest %.1f Mbit/s; ping median of medians %.1f ms [%.1f-%.1f]",
			v.name, median(rates), median(rates)/20, rates[0], rates[len(rates)-1], len(rates), median(mins), mins[0], median(rtts), rtts[0], rtts[len(rtts)-1])
	}
}
