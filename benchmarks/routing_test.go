package benchmarks

import (
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/junction-dataplane/junction/elements"
	"github.com/junction-dataplane/junction/elements/ip"
	"github.com/junction-dataplane/junction/packet"
	"github.com/junction-dataplane/junction/pipeline"
)

// The routing benchmarks run the L3 graph of bench-l3.toml with a full
// table: 1M synthetic IPv4 prefixes (ip.GenerateRoutes, seed 1, 300 next
// hops, all out of port 1 so that every variant takes the same output path)
// loaded through routes_file, written at benchmark time. Traffic goes to
// one destination, or is spread uniformly over the 1.25M addresses
// 10.0.0.0-10.18.255.255 (the range of the Linux 3.1 route-cache collapse).
// The "naive-cache" variant puts a per-destination map in front of the
// lookup, as the old route cache did, to show what the collapse looks like.

const (
	spreadDst = "10.0.0.0-10.18.255.255"
	singleDst = "10.5.6.7"
)

var (
	fullOnce sync.Once
	fullFile string
	fullErr  error
)

// fullTable writes the 1M-prefix routes file once per test binary.
func fullTable(t testing.TB) string {
	fullOnce.Do(func() {
		dir, err := os.MkdirTemp("", "junction-routes")
		if err != nil {
			fullErr = err
			return
		}
		fullFile = filepath.Join(dir, "full.routes")
		fullErr = WriteRoutes(fullFile, 1_000_000)
	})
	if fullErr != nil {
		t.Fatal(fullErr)
	}
	return fullFile
}

// routingGraph returns bench-l3.toml with the full table, the given dst,
// count packets (0: endless) and, with naive, the map-cache lookup.
func routingGraph(t testing.TB, dst string, count int, naive bool) []byte {
	src, err := os.ReadFile("../configs/bench-l3.toml")
	if err != nil {
		t.Fatal(err)
	}
	s := string(src)
	i := strings.Index(s, "routes = [")
	j := strings.Index(s[i:], "]\n")
	if i < 0 || j < 0 {
		t.Fatal("bench-l3.toml: no routes list")
	}
	s = s[:i] + fmt.Sprintf("routes_file = %q\n", fullTable(t)) + s[i+j+2:]
	if naive {
		s = strings.Replace(s, `type   = "IPLookup"`, `type   = "NaiveCacheLookup"`, 1)
	}
	s = strings.Replace(s, `dst       = "10.16.0.0/12"`, fmt.Sprintf("dst       = %q", dst), 1)
	if !strings.Contains(s, dst) {
		t.Fatal("bench-l3.toml: dst not replaced")
	}
	if count > 0 {
		s = strings.Replace(s, "[devices.lan]\n", fmt.Sprintf("[devices.lan]\ncount = %d\n", count), 1)
	}
	return []byte(s)
}

// BenchmarkL3Routing: ns/packet of the whole L3 graph (generator and sink
// included) with the 1M-prefix table, one worker: one destination against
// 1.25M; and the naive per-destination cache for contrast. The spread
// rate must be >= 95% of the single-destination rate.
func BenchmarkL3Routing(b *testing.B) {
	for _, v := range []struct {
		name  string
		dst   string
		naive bool
	}{{"single", singleDst, false}, {"spread", spreadDst, false}, {"spread-naive-cache", spreadDst, true}} {
		b.Run(v.name, func(b *testing.B) {
			n := max(b.N, 64)
			src := routingGraph(b, v.dst, n, v.naive)
			g, err := pipeline.Parse("bench-routing.toml", src)
			if err != nil {
				b.Fatal(err)
			}
			r, err := pipeline.Start(g, pipeline.Options{Workers: 1})
			if err != nil {
				b.Fatal(err)
			}
			// Start returns once the table is built; time the forwarding.
			b.ResetTimer()
			t0 := time.Now()
			if err := r.Wait(); err != nil {
				b.Fatal(err)
			}
			d := time.Since(t0)
			b.StopTimer()
			b.ReportMetric(float64(n)/d.Seconds()/1e6, "Mpps")
		})
	}
}

// TestL3RoutingLongRun is the long-run measurement: it forwards for
// JUNCTION_LONGRUN (e.g. 10m) per variant and prints the rate every
// JUNCTION_LONGRUN_EVERY (default 1m). JUNCTION_LONGRUN_MODES picks the
// variants, run one after another (default "single,spread,naive"); modes
// joined by "+" (e.g. "single+spread") run at the same time, each router's
// one worker pinned to its own CPU (the first, second, … CPU of the
// process), so that whatever else the machine does hits them alike and
// their ratio is taken sample by sample; modes joined by "/" (e.g.
// "single/spread") run at the same time pinned to one and the same CPU, so
// that the scheduler time-slices them a few milliseconds at a time and a
// slow spell of that CPU (a busy neighbour on the host) hits both alike.
// Not run unless JUNCTION_LONGRUN is set, so `go test ./...` and CI never
// run it.
//
//	JUNCTION_LONGRUN=10m go test ./benchmarks -run LongRun -v -timeout 0
//	JUNCTION_LONGRUN=10m JUNCTION_LONGRUN_MODES=single+spread go test ./benchmarks -run LongRun -v -timeout 0
//	JUNCTION_LONGRUN=10m JUNCTION_LONGRUN_MODES=single/spread go test ./benchmarks -run LongRun -v -timeout 0
func TestL3RoutingLongRun(t *testing.T) {
	total := measureFor(t, "JUNCTION_LONGRUN", "10m")
	every := time.Minute
	if e, err := time.ParseDuration(os.Getenv("JUNCTION_LONGRUN_EVERY")); err == nil && e > 0 {
		every = e
	}
	modes := "single,spread,naive"
	if m := os.Getenv("JUNCTION_LONGRUN_MODES"); m != "" {
		modes = m
	}
	for _, group := range strings.Split(modes, ",") {
		if strings.Contains(group, "/") {
			longRun(t, strings.Split(group, "/"), total, every, true)
		} else {
			longRun(t, strings.Split(group, "+"), total, every, false)
		}
	}
}

// longRun runs the routing graph of each mode at once (one worker each;
// pinned to CPUs 0, 1, … of the process when there are several, or all to
// the first with oneCPU) and prints every router's rate each interval, then
// a summary per mode.
func longRun(t *testing.T, modes []string, total, every time.Duration, oneCPU bool) {
	rs := make([]*pipeline.Router, len(modes))
	for i, mode := range modes {
		dst, naive := spreadDst, false
		switch mode {
		case "single":
			dst = singleDst
		case "spread":
		case "naive":
			naive = true
		default:
			t.Fatalf("unknown mode %q", mode)
		}
		g, err := pipeline.Parse("bench-routing.toml", routingGraph(t, dst, 0, naive))
		if err != nil {
			t.Fatal(err)
		}
		o := pipeline.Options{Workers: 1} // stopped after the last sample
		if len(modes) > 1 {
			cpus := pipeline.ProcessCPUs()
			if len(cpus) < len(modes) {
				t.Fatalf("%d modes at once need as many CPUs, the process has %v", len(modes), cpus)
			}
			o.CPUs = []int{cpus[i]}
			if oneCPU {
				o.CPUs = []int{cpus[0]}
			}
		}
		r, err := pipeline.Start(g, o)
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		rs[i] = r
	}
	// Every router has loaded its table and is forwarding before the
	// first interval starts.
	time.Sleep(longRunWarmup)
	t0 := time.Now()
	last := make([]uint64, len(rs))
	for i, r := range rs {
		last[i] = r.Snapshot().Totals.TX
	}
	lastT, lastCPU := t0, processCPU()
	rates := make([][]float64, len(rs))
	tick := time.NewTicker(every)
	defer tick.Stop()
	for n := 0; n < int(total/every); n++ {
		now := <-tick.C
		cpu := processCPU()
		var line strings.Builder
		var sum uint64
		for i, r := range rs {
			tx := r.Snapshot().Totals.TX
			rate := float64(tx-last[i]) / now.Sub(lastT).Seconds() / 1e6
			rates[i] = append(rates[i], rate)
			fmt.Fprintf(&line, "%-7s %6s  %.2f Mpps   ", modes[i], now.Sub(t0).Round(time.Second), rate)
			sum += tx - last[i]
			last[i] = tx
		}
		// On a shared machine the wall-clock rate also measures the
		// neighbours; packets per CPU-second of this process (about one
		// core per router when alone) does not.
		fmt.Fprintf(&line, "(%.2f M packets per CPU-second", float64(sum)/(cpu-lastCPU).Seconds()/1e6)
		if len(rs) == 2 {
			k := len(rates[0]) - 1
			fmt.Fprintf(&line, "; %s/%s %.3f", modes[1], modes[0], rates[1][k]/rates[0][k])
		}
		fmt.Println(line.String() + ")")
		lastT, lastCPU = now, cpu
	}
	for i, r := range rs {
		r.Stop()
		if err := r.Wait(); err != nil {
			t.Fatal(err)
		}
		if xs := rates[i]; len(xs) > 0 {
			lo, hi := slices.Min(xs), slices.Max(xs)
			fmt.Printf("%-7s over %v: first %.2f, last %.2f, min %.2f, max %.2f Mpps\n", modes[i], total, xs[0], xs[len(xs)-1], lo, hi)
		}
	}
	if len(rs) == 2 && len(rates[0]) > 0 {
		ratios := make([]float64, len(rates[0]))
		for k := range ratios {
			ratios[k] = rates[1][k] / rates[0][k]
		}
		fmt.Printf("%s/%s per interval: min %.3f, max %.3f\n", modes[1], modes[0], slices.Min(ratios), slices.Max(ratios))
	}
}

// longRunWarmup is how long the routers of a long run forward before the
// first interval (table loads, caches, page faults).
const longRunWarmup = 3 * time.Second

// TestRoutingGraph checks the benchmark graphs load and forward correctly
// with a small table, so that the benchmarks cannot silently measure a
// broken graph.
func TestRoutingGraph(t *testing.T) {
	if testing.Short() {
		t.Skip("builds 20,000-route graphs and runs them: seconds")
	}
	for _, naive := range []bool{false, true} {
		src := routingGraph(t, spreadDst, 20000, naive)
		g, err := pipeline.Parse("bench-routing.toml", src)
		if err != nil {
			t.Fatal(err)
		}
		if testing.Short() {
			return
		}
		r, err := pipeline.Start(g, pipeline.Options{Workers: 1})
		if err != nil {
			t.Fatal(err)
		}
		if err := r.Wait(); err != nil {
			t.Fatal(err)
		}
		s := r.Snapshot()
		if s.Totals.TX != 20000 || s.Totals.Drops != 0 {
			t.Errorf("naive=%v: tx %d, drops %d; want 20000, 0", naive, s.Totals.TX, s.Totals.Drops)
		}
	}
}

// NaiveCacheLookup is IPLookup behind a per-destination cache: a Go map
// from destination to path that grows without bound, as Linux's pre-3.6
// route cache did (without even its garbage collection). It exists only for
// the contrast benchmark.
type NaiveCacheLookup struct {
	table *ip.Table
	cache map[uint32]ip.Hop
	outs  []*elements.Output
	st    *elements.Stats
	miss  elements.Reason
}

func init() {
	elements.Register(elements.Type{
		Name:      "NaiveCacheLookup",
		NewConfig: func() any { return &ip.IPLookupConfig{Miss: -1} },
		New: func(cfg any, ctx *elements.Context) (elements.Element, error) {
			c := cfg.(*ip.IPLookupConfig)
			v, err := ctx.Shared(func() (any, error) {
				t, _, err := ip.BuildTable(c)
				return t, err
			})
			if err != nil {
				return nil, err
			}
			return &NaiveCacheLookup{table: v.(*ip.Table), cache: map[uint32]ip.Hop{}, outs: ctx.Outputs,
				st: ctx.Stats, miss: ctx.Stats.Reason("no route")}, nil
		},
		In: 1, Out: -1,
		Doc: elements.Doc{Synopsis: "NaiveCacheLookup(routes, routes_file)", Summary: "benchmark contrast only: IPLookup behind an unbounded per-destination map"},
	})
}

func (e *NaiveCacheLookup) Push(_ int, b *packet.Batch) {
	n := 0
	for _, p := range b.Pkts {
		h := packet.IPv4(p.Data[p.L3:])
		d := h.DstU32()
		hop, ok := e.cache[d]
		if !ok {
			hop, ok = e.table.Forward(netip.AddrFrom4(h.Dst4()), 0)
			if !ok {
				e.st.Drop(p, e.miss)
				continue
			}
			e.cache[d] = hop
		}
		p.NextHop = hop.Via
		p.Port = uint16(hop.Out)
		b.Pkts[n] = p
		n++
	}
	clear(b.Pkts[n:])
	b.Pkts = b.Pkts[:n]
	if n > 0 {
		e.outs[1].Push(b) // every route of the benchmark table is out 1
	}
}
