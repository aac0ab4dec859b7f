package main

import (
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	_ "github.com/junction-dataplane/junction/drivers/all"
	_ "github.com/junction-dataplane/junction/elements/all"

	"github.com/junction-dataplane/junction/benchmarks"
	"github.com/junction-dataplane/junction/benchmarks/result"
	"github.com/junction-dataplane/junction/pipeline"
)

// A scenario run: the graph is started on endless gen traffic, warmed up,
// and measured over one window. A window is one repetition (one
// result.Run): the packets the sources took in (Totals.RX) over its wall
// time, the heap allocations over those packets, and every element's
// packets, sampled self time and drops. measureAll repeats a set of
// variants in rounds — every variant once per round, each time started
// afresh — so that a machine whose load changes during the report slows
// all variants alike rather than whichever ran at the time; the spread of
// the rounds is what the plots' error bars show.
type runSpec struct {
	name    string
	params  map[string]string
	src     []byte
	workers int
	// warm reports whether the router is warm (flows created and
	// fast-tracked); nil: warm after a fifth of a window.
	warm func(s *pipeline.Snapshot) bool
}

func (o *options) measureAll(specs []runSpec) ([]result.Run, error) {
	var runs []result.Run
	for rep := 0; rep < o.reps; rep++ {
		for _, spec := range specs {
			r, err := o.measure(spec, 1)
			if err != nil {
				return nil, err
			}
			runs = append(runs, r...)
		}
	}
	if o.verbose {
		for _, spec := range specs {
			var ms []string
			for _, x := range runs {
				if x.Name == spec.name {
					ms = append(ms, fmt.Sprintf("%.2f", x.Mpps))
				}
			}
			fmt.Fprintf(os.Stderr, "  %s: Mpps %s\n", spec.name, strings.Join(ms, " "))
		}
	}
	return runs, nil
}

func (o *options) measure(spec runSpec, reps int) ([]result.Run, error) {
	g, err := pipeline.Parse(spec.name+".toml", spec.src)
	if err != nil {
		return nil, err
	}
	// Unpinned: on a shared machine a pinned worker cannot move away from
	// the other jobs. The drivers' messages (a fast path falling back)
	// go to stderr with the progress.
	r, err := pipeline.Start(g, pipeline.Options{Workers: spec.workers, NoPin: true, Log: os.Stderr})
	if err != nil {
		return nil, err
	}
	defer func() {
		r.Stop()
		r.Wait()
	}()
	// Warm: traffic flowing (on a loaded machine the worker may take a
	// while to be scheduled), and whatever the variant needs.
	warm := spec.warm
	if warm == nil {
		warm = func(s *pipeline.Snapshot) bool { return s.Totals.RX > 0 }
	}
	deadline := time.Now().Add(3 * time.Minute)
	for !warm(r.Snapshot()) {
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("%s: not warm after 3 minutes", spec.name)
		}
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(o.window / 5)
	var runs []result.Run
	for i := 0; i < reps; i++ {
		var m0, m1 runtime.MemStats
		runtime.ReadMemStats(&m0)
		s0 := r.Snapshot()
		t0 := time.Now()
		time.Sleep(o.window)
		s1 := r.Snapshot()
		secs := time.Since(t0).Seconds()
		runtime.ReadMemStats(&m1)
		pkts := s1.Totals.RX - s0.Totals.RX
		if pkts == 0 {
			return nil, fmt.Errorf("%s: no packets in a %v window", spec.name, o.window)
		}
		run := result.Run{
			Name: spec.name, Params: spec.params, Packets: pkts, Seconds: secs,
			Mpps:            float64(pkts) / secs / 1e6,
			AllocsPerPacket: float64(m1.Mallocs-m0.Mallocs) / float64(pkts),
			Elements:        result.ElementDeltas(s0, s1),
		}
		if spec.workers == 1 {
			run.NsPerPacket = secs * 1e9 / float64(pkts)
		}
		// The rate per second of the workers' own CPU time (their
		// threads' CPU clocks): what the code does, without the time
		// the machine's other jobs took from it.
		var cpu uint64
		for i, w := range s1.Workers {
			if i < len(s0.Workers) {
				cpu += w.CPUNanos - s0.Workers[i].CPUNanos
			}
		}
		if cpu > 0 {
			run.Metrics = map[string]float64{
				"mpps_per_cpu_second": float64(pkts) / float64(cpu) * 1e3,
				"cpu_seconds":         float64(cpu) / 1e9,
			}
		}
		runs = append(runs, run)
	}
	return runs, nil
}

func (o *options) config(name string) (string, error) {
	b, err := os.ReadFile(filepath.Join(o.root, "configs", name))
	return string(b), err
}

// replace edits a config the way the benchmark needs; a missing anchor is
// an error (the config changed under the report).
func replace(s, file, old, new string) (string, error) {
	if !strings.Contains(s, old) {
		return "", fmt.Errorf("%s: %q not found (the report edits it)", file, old)
	}
	return strings.Replace(s, old, new, 1), nil
}

// l3Workers: configs/bench-l3.toml on 1 and 2 workers.
func (o *options) l3Workers() (*result.Result, error) {
	res := o.newResult("l3-workers",
		"configs/bench-l3.toml (Classifier, CheckIPHeader, DecTTL, IPLookup with 4 routes, EtherRewrite) on gen traffic, "+
			"aggregate rate of all workers; each worker has its own gen queue (split_flows), generator and sink included")
	res.Traffic = map[string]string{"size": "64", "proto": "udp", "flows": "256", "dst": "10.16.0.0/12"}
	src, err := o.config("bench-l3.toml")
	if err != nil {
		return nil, err
	}
	var specs []runSpec
	for w := 1; w <= min(2, runtime.NumCPU()); w++ {
		specs = append(specs, runSpec{name: fmt.Sprintf("workers=%d", w), params: map[string]string{"workers": fmt.Sprint(w)},
			src: []byte(src), workers: w})
	}
	res.Runs, err = o.measureAll(specs)
	return res, err
}

// lookupDests: the L3 graph with a synthetic full table (prefixes routes,
// ip.GenerateRoutes seed 1, every route out of port 1) and destinations
// drawn uniformly from the first n addresses of 10.0.0.0, one worker.
func (o *options) lookupDests() (*result.Result, error) {
	prefixes := 1_000_000
	dests := []int{1, 10, 100, 1_000, 10_000, 100_000, 1_000_000, 2_000_000}
	if o.quick {
		prefixes = 100_000
		dests = []int{1, 1_000, 100_000}
	}
	res := o.newResult("lookup-dests", fmt.Sprintf("configs/bench-l3.toml with a %d-prefix synthetic table (routes_file), "+
		"one worker, destinations drawn uniformly from the first N addresses of 10.0.0.0; whole graph, generator and sink included", prefixes))
	res.Traffic = map[string]string{"size": "64", "proto": "udp", "flows": "256", "prefixes": fmt.Sprint(prefixes)}
	file, err := o.routesFile(prefixes)
	if err != nil {
		return nil, err
	}
	base, err := o.config("bench-l3.toml")
	if err != nil {
		return nil, err
	}
	i := strings.Index(base, "routes = [")
	j := strings.Index(base[i:], "]\n")
	if i < 0 || j < 0 {
		return nil, fmt.Errorf("bench-l3.toml: no routes list")
	}
	base = base[:i] + fmt.Sprintf("routes_file = %q\n", file) + base[i+j+2:]
	first := netip.MustParseAddr("10.0.0.0")
	var specs []runSpec
	for _, n := range dests {
		last := first
		for k := 1; k < n; k++ { // n is at most a few million
			last = last.Next()
		}
		dst := first.String()
		if n > 1 {
			dst += "-" + last.String()
		}
		src, err := replace(base, "bench-l3.toml", `dst       = "10.16.0.0/12"`, fmt.Sprintf("dst       = %q", dst))
		if err != nil {
			return nil, err
		}
		specs = append(specs, runSpec{name: fmt.Sprintf("dests=%d", n),
			params: map[string]string{"destinations": fmt.Sprint(n), "prefixes": fmt.Sprint(prefixes)}, src: []byte(src), workers: 1})
	}
	res.Runs, err = o.measureAll(specs)
	return res, err
}

// routesFile writes the synthetic table once per report run.
func (o *options) routesFile(n int) (string, error) {
	path := filepath.Join(o.tmp, fmt.Sprintf("table-%d.routes", n))
	return path, benchmarks.WriteRoutes(path, n)
}

// natFlows: configs/bench-nat.toml with n live UDP flows (Conntrack
// capacity 5/4 n), through the slow path alone (the FastTrack elements
// taken out) and with FastTrack, one worker. Measured once every flow has
// been seen four times on average (created, and fast-tracked).
func (o *options) natFlows() (*result.Result, error) {
	flows := []int{1_000, 10_000, 100_000, 1_000_000}
	if o.quick {
		flows = []int{1_000, 10_000}
	}
	res := o.newResult("nat-flows", "configs/bench-nat.toml (FastTrack, Classifier, Conntrack, DNAT, IPLookup, DecTTL, "+
		"EtherRewrite, FastTrackLearn) with N live UDP flows, one worker; slow path: the FastTrack elements taken out; "+
		"whole graph, generator and sink included")
	res.Traffic = map[string]string{"size": "64", "proto": "udp", "dst": "203.0.113.1:9"}
	base, err := o.config("bench-nat.toml")
	if err != nil {
		return nil, err
	}
	var specs []runSpec
	for _, n := range flows {
		for _, path := range []string{"slow", "fast"} {
			src, err := natGraph(base, n, path == "fast")
			if err != nil {
				return nil, err
			}
			want := uint64(4 * n)
			specs = append(specs, runSpec{name: fmt.Sprintf("flows=%d/path=%s", n, path),
				params: map[string]string{"flows": fmt.Sprint(n), "path": path}, src: []byte(src), workers: 1,
				warm: func(s *pipeline.Snapshot) bool { return s.Totals.RX >= want }})
		}
	}
	res.Runs, err = o.measureAll(specs)
	return res, err
}

// natGraph edits bench-nat.toml as benchmarks/nat_test.go does.
func natGraph(s string, flows int, fast bool) (string, error) {
	const file = "bench-nat.toml"
	var err error
	edit := func(old, new string) {
		if err == nil {
			s, err = replace(s, file, old, new)
		}
	}
	edit("flows     = 10000", fmt.Sprintf("flows     = %d", flows))
	edit("capacity = 65536", fmt.Sprintf("capacity = %d", flows+flows/4))
	if !fast {
		edit(`"FromDevice(wan) -> ft :: FastTrack(2, either-direction)",`, `"FromDevice(wan) -> cls",`)
		edit(`"ft[0] -> cls :: Classifier(ip, -)",`, `"cls :: Classifier(ip, -)",`)
		edit(`-> [0]ftl :: FastTrackLearn(2)"`, `-> ToDevice(lan)"`)
		edit(`-> [1]ftl"`, `-> ToDevice(wan)"`)
		var keep []string
		for _, l := range strings.Split(s, "\n") {
			t := strings.TrimSpace(l)
			if !strings.HasPrefix(t, `"ftl[`) && !strings.HasPrefix(t, `"ft[`) {
				keep = append(keep, l)
			}
		}
		s = strings.Join(keep, "\n")
	}
	return s, err
}
