package result

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// ParseGoTest converts the standard output of `go test -bench` (the
// benchmark format: "BenchmarkName/sub=1-8  N  v unit  v unit ...",
// with "key: value" configuration lines) into Runs, one per result line,
// and returns the configuration lines it saw (goos, pkg, cpu). Each
// "k=v" part of the sub-benchmark name becomes a Param; the -GOMAXPROCS
// suffix is the "procs" Param. ns/pkt (or ns/op when no ns/pkt is
// reported), Mpps and allocs/op map onto the Run's fields; every other
// unit goes to Metrics. Lines that are not benchmark results (PASS, ok,
// logs) are skipped.
func ParseGoTest(rd io.Reader) ([]Run, map[string]string, error) {
	var runs []Run
	conf := map[string]string{}
	sc := bufio.NewScanner(rd)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	line := 0
	for sc.Scan() {
		line++
		text := sc.Text()
		if k, v, ok := strings.Cut(text, ":"); ok && !strings.HasPrefix(text, "Benchmark") &&
			k != "" && !strings.ContainsAny(k, " \t") && strings.ToLower(k[:1]) == k[:1] {
			conf[k] = strings.TrimSpace(v)
			continue
		}
		if !strings.HasPrefix(text, "Benchmark") {
			continue
		}
		f := strings.Fields(text)
		if len(f) < 4 || len(f)%2 != 0 {
			continue // a benchmark's log line, or its name printed before its result
		}
		if _, err := strconv.ParseUint(f[1], 10, 64); err != nil {
			continue
		}
		r, err := parseLine(f)
		if err != nil {
			return nil, nil, fmt.Errorf("line %d: %v", line, err)
		}
		runs = append(runs, r)
	}
	return runs, conf, sc.Err()
}

func parseLine(f []string) (Run, error) {
	name := strings.TrimPrefix(f[0], "Benchmark")
	r := Run{Params: map[string]string{}, Metrics: map[string]float64{}}
	if i := strings.LastIndexByte(name, '-'); i > 0 {
		if _, err := strconv.Atoi(name[i+1:]); err == nil {
			r.Params["procs"] = name[i+1:]
			name = name[:i]
		}
	}
	r.Name = name
	parts := strings.Split(name, "/")
	r.Params["benchmark"] = parts[0]
	for _, p := range parts[1:] {
		if k, v, ok := strings.Cut(p, "="); ok {
			r.Params[k] = v
		} else {
			r.Params[p] = ""
		}
	}
	iters, _ := strconv.ParseUint(f[1], 10, 64)
	r.Metrics["iterations"] = float64(iters)
	for i := 2; i+1 < len(f); i += 2 {
		v, err := strconv.ParseFloat(f[i], 64)
		if err != nil {
			return r, fmt.Errorf("%q: value %q is not a number", f[0], f[i])
		}
		switch unit := f[i+1]; unit {
		case "ns/pkt":
			r.NsPerPacket = v
		case "Mpps":
			r.Mpps = v
		case "allocs/op":
			r.Metrics[unit] = v
		default:
			r.Metrics[unit] = v
		}
	}
	if r.NsPerPacket == 0 {
		if v, ok := r.Metrics["ns/op"]; ok {
			r.NsPerPacket = v
		}
	}
	return r, nil
}
