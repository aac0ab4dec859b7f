package benchmarks

import (
	"fmt"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/junction-dataplane/junction/pipeline"
)

// natGraph returns configs/bench-nat.toml with flows distinct UDP flows, a
// Conntrack capacity of 5/4 of them, and (fast == false) without the
// FastTrack elements: FromDevice feeds the Classifier and the EtherRewrites
// feed the ToDevices, so the slow path is measured alone. count > 0 makes
// the wan generator finite.
func natGraph(t testing.TB, flows int, fast bool, count int) []byte {
	src, err := os.ReadFile("../configs/bench-nat.toml")
	if err != nil {
		t.Fatal(err)
	}
	s := string(src)
	rep := func(old, new string) { s = replaceOnce(t, "bench-nat.toml", s, old, new) }
	rep("flows     = 10000", fmt.Sprintf("flows     = %d", flows))
	rep("capacity = 65536", fmt.Sprintf("capacity = %d", flows+flows/4))
	if count > 0 {
		rep("[devices.wan]\n", fmt.Sprintf("[devices.wan]\ncount = %d\n", count))
	}
	if !fast {
		rep(`"FromDevice(wan) -> ft :: FastTrack(2, either-direction)",`, `"FromDevice(wan) -> cls",`)
		rep(`"ft[0] -> cls :: Classifier(ip, -)",`, `"cls :: Classifier(ip, -)",`)
		rep(`-> [0]ftl :: FastTrackLearn(2)"`, `-> ToDevice(lan)"`)
		rep(`-> [1]ftl"`, `-> ToDevice(wan)"`)
		var keep []string
		for _, l := range strings.Split(s, "\n") {
			l2 := strings.TrimSpace(l)
			if strings.HasPrefix(l2, `"ftl[`) || strings.HasPrefix(l2, `"ft[`) {
				continue
			}
			keep = append(keep, l)
		}
		s = strings.Join(keep, "\n")
		if _, links, _ := strings.Cut(s, "[graph]"); strings.Contains(links, "FastTrack") || strings.Contains(links, "ft[") {
			t.Fatalf("slow-path graph still has FastTrack:\n%s", s)
		}
	}
	return []byte(s)
}

// buildNAT builds the NAT graph on one worker for stepping with Round.
func buildNAT(t testing.TB, flows int, fast bool) *pipeline.Router {
	r := buildStepped(t, "bench-nat.toml", natGraph(t, flows, fast, 0), pipeline.Options{})
	t.Cleanup(func() { r.Close() })
	return r
}

// counter sums an element counter over workers in a snapshot.
func counter(s *pipeline.Snapshot, element, name string) uint64 {
	return s.CounterSum(name, func(e *pipeline.ElementStats) bool { return e.Element == element })
}

// processCPU is the CPU time this process has used (user + system).
func processCPU() time.Duration {
	var ru unix.Rusage
	if unix.Getrusage(unix.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkNATGraph steps configs/bench-nat.toml (gen → [FastTrack →]
// Classifier → Conntrack → DNAT → IPLookup → DecTTL → EtherRewrite
// [→ FastTrackLearn] → gen sink, 64-byte UDP) on one worker, one op per
// round of a 64-packet batch, with 10k and 1M live flows, through the slow
// path alone and with FastTrack. Before measuring, every flow is created
// (and, with FastTrack, seen often enough to be fast-tracked): 6 packets
// per flow on average. Metrics: ns/pkt and Mpps of wall time, Mpps-cpu
// per second of the worker thread's CPU time, and the share of packets
// FastTrack handled while measuring. ns/pkt includes the generator.
func BenchmarkNATGraph(b *testing.B) {
	for _, flows := range []int{10_000, 1_000_000} {
		for _, fast := range []bool{false, true} {
			path := map[bool]string{false: "slow", true: "fast"}[fast]
			name := fmt.Sprintf("flows=%s/path=%s", map[int]string{10_000: "10k", 1_000_000: "1M"}[flows], path)
			b.Run(name, func(b *testing.B) {
				runtime.LockOSThread()
				defer runtime.UnlockOSThread()
				r := buildNAT(b, flows, fast)
				for warm := 0; warm < 6*flows; {
					warm += r.Round(0)
				}
				s0 := r.Snapshot()
				if e := counter(s0, "ct", "entries"); e < uint64(flows)*99/100 {
					b.Fatalf("%d live flows after warm-up, want %d", e, flows)
				}
				pkts := measureRounds(b, r)
				s1 := r.Snapshot()
				hits := counter(s1, "ft", "fasttracked packets") - counter(s0, "ft", "fasttracked packets")
				b.ReportMetric(float64(hits)/float64(pkts), "fast-share")
				if fast {
					comp := counter(s1, "ft", "cache compiles") - counter(s0, "ft", "cache compiles")
					b.ReportMetric(float64(comp)/float64(pkts), "compiles/pkt")
				}
				if fast && float64(hits) < 0.9*float64(pkts) {
					b.Errorf("FastTrack handled %d of %d packets", hits, pkts)
				}
				if e := counter(s1, "ct", "entries"); e < uint64(flows)*99/100 {
					b.Errorf("%d live flows at the end, want %d", e, flows)
				}
			})
		}
	}
}

// TestNATGraphAllocs: a round of the NAT graph allocates nothing, on the
// slow path and on the fast path.
func TestNATGraphAllocs(t *testing.T) {
	for _, fast := range []bool{false, true} {
		r := buildNAT(t, 256, fast)
		// 200 rounds to create and fast-track every flow, make the pools
		if allocs := roundAllocs(t, r, 200, 500); allocs != 0 {
			t.Errorf("fast=%v: %v allocations per round", fast, allocs)
		}
		if s := r.Snapshot(); fast && counter(s, "ft", "fasttracked packets") == 0 {
			t.Error("FastTrack never engaged")
		}
	}
}

// BenchmarkNATWorkers runs the fast NAT graph with 1 and 2 workers (not
// pinned unless JUNCTION_PIN=1: on a machine shared with other jobs a
// pinned worker cannot move away from them) on 1024 flows; each worker has its own gen queue, and the queues
// share the flows out (gen's split_flows) so that no flow reaches two
// workers, as with a NIC's RSS. It reports the aggregate Mpps (wall), Mpps
// per CPU-second of the whole process, and the busiest/least-busy worker
// ratio of packets per busy second from the snapshot (with 1 worker: 1).
func BenchmarkNATWorkers(b *testing.B) {
	for _, w := range []int{1, 2} {
		b.Run(fmt.Sprintf("workers=%d", w), func(b *testing.B) {
			n := max(b.N, 64)
			// Each flow on one worker, as a NIC's RSS would deliver it.
			text := natWorkersGraph(b, n)
			g, err := pipeline.Parse("bench-nat.toml", []byte(text))
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			cpu0 := processCPU()
			t0 := time.Now()
			r, err := pipeline.Start(g, pipeline.Options{Workers: w, NoPin: os.Getenv("JUNCTION_PIN") == ""})
			if err != nil {
				b.Fatal(err)
			}
			if err := r.Wait(); err != nil {
				b.Fatal(err)
			}
			d := time.Since(t0)
			cpu := processCPU() - cpu0
			b.StopTimer()
			s := r.Snapshot()
			b.ReportMetric(float64(n)/d.Seconds()/1e6, "Mpps")
			b.ReportMetric(float64(n)/cpu.Seconds()/1e6, "Mpps-cpu")
			b.ReportMetric(busyRatio(s), "busy-ratio")
			b.ReportMetric(pktRatio(s), "pkt-ratio")
		})
	}
}

// natWorkersGraph is the fast NAT graph with 1024 flows that the gen device
// splits between its queues as a NIC's RSS would (each flow on one
// worker); count > 0 makes it finite.
func natWorkersGraph(t testing.TB, count int) string {
	// configs/bench-nat.toml already puts each flow on one queue
	// (split_flows); adding the key again is a TOML error.
	s := string(natGraph(t, 1024, true, count))
	if !strings.Contains(s, "\nsplit_flows = true\n") {
		t.Fatal("bench-nat.toml: wan no longer sets split_flows = true (BenchmarkNATWorkers needs each flow on one worker)")
	}
	return s
}

// measureFor returns the duration in environment variable name, and skips
// the test when it is unset or not a positive duration: the measurements
// gated this way never run in CI.
func measureFor(t *testing.T, name, example string) time.Duration {
	d, err := time.ParseDuration(os.Getenv(name))
	if err != nil || d <= 0 {
		t.Skipf("set %s=%s to run (a measurement, never in CI)", name, example)
	}
	return d
}

// envCount returns the positive integer in environment variable name, or
// def.
func envCount(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

// busyRatio is the busiest worker's busy time over the least busy one's.
func busyRatio(s *pipeline.Snapshot) float64 {
	lo, hi := ^uint64(0), uint64(0)
	for _, w := range s.Workers {
		lo, hi = min(lo, w.BusyNanos), max(hi, w.BusyNanos)
	}
	if lo == 0 {
		return 0
	}
	return float64(hi) / float64(lo)
}

// pktRatio is the most packets a worker received over the fewest.
func pktRatio(s *pipeline.Snapshot) float64 {
	per := map[int]uint64{}
	for _, e := range s.Elements {
		if e.Type == "FromDevice" {
			per[e.Worker] += e.Packets
		}
	}
	lo, hi := ^uint64(0), uint64(0)
	for _, v := range per {
		lo, hi = min(lo, v), max(hi, v)
	}
	if lo == 0 || len(per) == 0 {
		return 0
	}
	return float64(hi) / float64(lo)
}

// TestNATPathsSideBySide measures fast/slow with both NAT graphs running
// at once, one worker each, pinned to the same CPU: the scheduler
// time-slices them a few milliseconds at a time, so a slow spell of that
// CPU (a busy neighbour on the host) slows both alike and the ratio of
// their packet counts over the same wall time is the ratio of their
// speeds. (BenchmarkNATGraph runs the two one after the other, seconds
// apart, and on this host their ratio swings with the neighbours.) The
// price is that each time slice starts with caches the other graph
// filled. For 10k and 1M flows it waits until every flow exists (and, on
// the fast side, is fast-tracked), then prints the ratio for each of
// JUNCTION_NATRATIO_N intervals (default 10) of JUNCTION_NATRATIO (e.g.
// 2s) and their median: packets per CPU-second of each worker thread
// (pipeline.WorkerStats.CPUNanos), and packets per wall second, which is
// the same if the scheduler shared the CPU evenly. The intervals of one run
// agree closely, but runs differ (the slow/slow control's medians ranged
// 0.88-1.10 here): take the median of several runs.
//
//	JUNCTION_NATRATIO=2s go test ./benchmarks -run NATPathsSideBySide -v -timeout 0
//	JUNCTION_NATRATIO=2s JUNCTION_NATRATIO_CONTROL=1 go test ./benchmarks -run NATPathsSideBySide -v -timeout 0   # slow against slow
//	JUNCTION_NATRATIO=1s JUNCTION_NATRATIO_N=4 JUNCTION_NATRATIO_FLOWS=10000 go test ./benchmarks -run NATPathsSideBySide -v   # one size
//	JUNCTION_NATRATIO=1s JUNCTION_NATRATIO_TAX=1 JUNCTION_NATRATIO_FLOWS=10000 go test ./benchmarks -run NATPathsSideBySide -v   # FastTrack that never engages against none
func TestNATPathsSideBySide(t *testing.T) {
	every := measureFor(t, "JUNCTION_NATRATIO", "2s")
	n := envCount("JUNCTION_NATRATIO_N", 10)
	// The control (JUNCTION_NATRATIO_CONTROL=1) runs the slow graph on
	// both sides: the method must then give 1.00.
	sides := []bool{false, true}
	if os.Getenv("JUNCTION_NATRATIO_CONTROL") == "1" {
		sides = []bool{false, false}
	}
	// JUNCTION_NATRATIO_TAX=1: the second side is the graph with a
	// FastTrack that never engages (natTaxGraph), which must then send
	// nothing fast: the ratio is what that FastTrack leaves of the rate.
	tax := os.Getenv("JUNCTION_NATRATIO_TAX") == "1"
	n0, n1 := "slow", "fast"
	if tax {
		n0, n1 = "noft", "ft-never"
	}
	if !sides[1] {
		n1 = n0 + "(2)" // the control
	}
	graph := func(flows int, fast bool) []byte {
		if tax {
			return natTaxGraph(t, flows, fast)
		}
		return natGraph(t, flows, fast, 0)
	}
	sizes := []int{10_000, 1_000_000}
	if v := envCount("JUNCTION_NATRATIO_FLOWS", 0); v > 0 {
		sizes = []int{v}
	}
	cpu := pipeline.ProcessCPUs()[0]
	for _, flows := range sizes {
		var rs [2]*pipeline.Router // slow, fast
		for i, fast := range sides {
			g, err := pipeline.Parse("bench-nat.toml", graph(flows, fast))
			if err != nil {
				t.Fatal(err)
			}
			r, err := pipeline.Start(g, pipeline.Options{Workers: 1, CPUs: []int{cpu}})
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			rs[i] = r
		}
		// Every flow created, and on the fast side fast-tracked: the
		// fast-share of an interval is checked below.
		deadline := time.Now().Add(5 * time.Minute)
		for _, r := range rs {
			for counter(r.Snapshot(), "ct", "entries") < uint64(flows)*99/100 {
				if time.Now().After(deadline) {
					t.Fatalf("%d flows: the flow table never filled", flows)
				}
				time.Sleep(100 * time.Millisecond)
			}
		}
		time.Sleep(time.Second)
		var ratios, cpuRatios []float64
		var last, lastCPU [2]uint64
		var hits0 uint64
		for i, r := range rs {
			s := r.Snapshot()
			last[i], lastCPU[i] = s.Totals.TX, s.Workers[0].CPUNanos
			if i == 1 {
				hits0 = counter(s, "ft", "fasttracked packets")
			}
		}
		for k := range n {
			time.Sleep(every)
			var d, c [2]uint64
			var hits uint64
			for i, r := range rs {
				s := r.Snapshot()
				d[i], c[i] = s.Totals.TX-last[i], s.Workers[0].CPUNanos-lastCPU[i]
				last[i], lastCPU[i] = s.Totals.TX, s.Workers[0].CPUNanos
				if i == 1 {
					h := counter(s, "ft", "fasttracked packets")
					hits, hits0 = h-hits0, h
				}
			}
			if d[0] == 0 || c[0] == 0 || c[1] == 0 || sides[1] && !tax && float64(hits) < 0.99*float64(d[1]) || tax && hits != 0 {
				t.Fatalf("%d flows, interval %d: slow sent %d, fast sent %d of which %d fast-tracked; CPU %v, %v", flows, k, d[0], d[1], hits, c[0], c[1])
			}
			// The wall-time ratio assumes the scheduler shared the CPU
			// evenly; the ratio of packets per CPU-second of each
			// worker thread does not.
			ratio := float64(d[1]) / float64(d[0])
			cpuRatio := float64(d[1]) / float64(c[1]) / (float64(d[0]) / float64(c[0]))
			ratios, cpuRatios = append(ratios, ratio), append(cpuRatios, cpuRatio)
			fmt.Printf("flows=%-8d interval %2d: %s %6.2f, %s %6.2f Mpps per CPU-second (CPU shares %.2f, %.2f), %s/%s %.2f (wall %.2f)\n",
				flows, k+1, n0, float64(d[0])/float64(c[0])*1e3, n1, float64(d[1])/float64(c[1])*1e3,
				float64(c[0])/every.Seconds()/1e9, float64(c[1])/every.Seconds()/1e9, n1, n0, cpuRatio, ratio)
		}
		for _, r := range rs {
			r.Stop()
			if err := r.Wait(); err != nil {
				t.Fatal(err)
			}
		}
		slices.Sort(ratios)
		slices.Sort(cpuRatios)
		fmt.Printf("flows=%d: %s/%s per CPU-second median %.2f (min %.2f, max %.2f); by wall time median %.2f (%.2f-%.2f); %d intervals of %v\n",
			flows, n1, n0, cpuRatios[len(cpuRatios)/2], cpuRatios[0], cpuRatios[len(cpuRatios)-1],
			ratios[len(ratios)/2], ratios[0], ratios[len(ratios)-1], n, every)
	}
}

// TestNATWorkersSteady measures what BenchmarkNATWorkers does in the steady
// state: the fast NAT graph with 1024 flows split between the gen device's
// queues (as RSS would), endless, on one and then on two pinned workers,
// alternating for JUNCTION_NATWORKERS_N pairs (default 5). Each run is
// given a second to start, then measured over JUNCTION_NATWORKERS (e.g. 5s):
// the aggregate rate, and per worker the packets received and the busy time
// in that window. BenchmarkNATWorkers instead sends a fixed count and waits
// for both workers to finish, so a worker the host slowed keeps the run
// going while the other idles: its aggregate measures that asymmetry too.
//
//	JUNCTION_NATWORKERS=5s go test ./benchmarks -run NATWorkersSteady -v -timeout 0
func TestNATWorkersSteady(t *testing.T) {
	every := measureFor(t, "JUNCTION_NATWORKERS", "5s")
	pairs := envCount("JUNCTION_NATWORKERS_N", 5)
	text := natWorkersGraph(t, 0)
	run := func(workers int) (mpps, pkts, busy float64) {
		g, err := pipeline.Parse("bench-nat.toml", []byte(text))
		if err != nil {
			t.Fatal(err)
		}
		r, err := pipeline.Start(g, pipeline.Options{Workers: workers})
		if err != nil {
			t.Fatal(err)
		}
		defer func() { r.Stop(); r.Wait() }()
		time.Sleep(time.Second)
		s0 := r.Snapshot()
		time.Sleep(every)
		s1 := r.Snapshot()
		per := func(s *pipeline.Snapshot) (p, b []uint64) {
			p, b = make([]uint64, workers), make([]uint64, workers)
			for _, e := range s.Elements {
				if e.Type == "FromDevice" {
					p[e.Worker] += e.Packets
				}
			}
			for _, w := range s.Workers {
				b[w.Worker] = w.BusyNanos
			}
			return p, b
		}
		p0, b0 := per(s0)
		p1, b1 := per(s1)
		ratio := func(a, b []uint64) float64 {
			lo, hi := ^uint64(0), uint64(0)
			for i := range a {
				d := b[i] - a[i]
				lo, hi = min(lo, d), max(hi, d)
			}
			if lo == 0 {
				t.Fatalf("%d workers: a worker did nothing in %v", workers, every)
			}
			return float64(hi) / float64(lo)
		}
		return float64(s1.Totals.TX-s0.Totals.TX) / every.Seconds() / 1e6, ratio(p0, p1), ratio(b0, b1)
	}
	var ratios []float64
	for i := range pairs {
		one, _, _ := run(1)
		two, pk, bu := run(2)
		ratios = append(ratios, two/one)
		fmt.Printf("pair %d: 1 worker %.2f Mpps, 2 workers %.2f Mpps: %.2f×; busiest/least busy worker: packets %.3f, busy time %.3f\n",
			i+1, one, two, two/one, pk, bu)
	}
	slices.Sort(ratios)
	med := (ratios[(pairs-1)/2] + ratios[pairs/2]) / 2
	fmt.Printf("median of %d pairs: %.2f× (%.2f–%.2f)\n", pairs, med, ratios[0], ratios[pairs-1])
}

// natTaxGraph returns the 10k-flow NAT graph of configs/bench-nat.toml
// with FastTrack (ft) or without it. With it, FastTrack's policy is
// both-directions and the traffic one-way (gen sends only from the
// outside), so no flow ever engages: every packet misses FastTrack and
// takes the slow path, which is what a FastTrack that does not engage
// costs.
func natTaxGraph(t testing.TB, flows int, ft bool) []byte {
	g := natGraph(t, flows, ft, 0)
	if !ft {
		return g
	}
	return []byte(replaceOnce(t, "bench-nat.toml", string(g), `FastTrack(2, either-direction)`, `FastTrack(2, both-directions)`))
}

// replaceOnce returns s, the config file name, with the first old
// replaced by new; it fails the test when s has no old (a config the
// benchmark edits has changed).
func replaceOnce(t testing.TB, name, s, old, new string) string {
	t.Helper()
	if !strings.Contains(s, old) {
		t.Fatalf("%s: %q not found (the benchmark edits it)", name, old)
	}
	return strings.Replace(s, old, new, 1)
}

// BenchmarkNATGraphMiss steps the 10k-flow NAT graph with a FastTrack that
// never engages (policy both-directions, one-way traffic) and the same
// graph without FastTrack, on one worker, one op per 64-packet round after
// every flow exists. What FastTrack costs when it does not engage is the
// difference of their ns/pkt (TestFastTrackTax measures the two side by
// side).
func BenchmarkNATGraphMiss(b *testing.B) {
	for _, ft := range []bool{false, true} {
		b.Run(map[bool]string{false: "path=noft", true: "path=ft-never"}[ft], func(b *testing.B) {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			r := buildStepped(b, "bench-nat.toml", natTaxGraph(b, 10_000, ft), pipeline.Options{})
			defer r.Close()
			for warm := 0; warm < 6*10_000; {
				warm += r.Round(0)
			}
			s0 := r.Snapshot()
			pkts, cpu := stepRounds(b, r)
			b.ReportMetric(float64(pkts)/float64(b.Elapsed().Nanoseconds())*1e3, "Mpps")
			if cpu > 0 {
				b.ReportMetric(float64(cpu.Nanoseconds())/float64(pkts), "cpu-ns/pkt")
			}
			if s1 := r.Snapshot(); counter(s1, "ft", "fasttracked packets") != counter(s0, "ft", "fasttracked packets") {
				b.Error("FastTrack engaged")
			}
		})
	}
}
