package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestStatsLoad runs the default graph as a separate process with 200
// concurrent keep-alive clients hammering its stats endpoint in every
// other phase of 3 seconds (off, on, off, on, ...), and compares the
// forwarding rate of the seconds with clients against the seconds without,
// side by side in one run: the machine's background load drifts less
// between adjacent seconds than between runs. The first second of each
// phase (the switch) is left out. It takes about half a minute per round
// and binary, so it runs only with JUNCTION_STATSLOAD=1
// (JUNCTION_STATSLOAD_ROUNDS rounds, default 2; JUNCTION_STATSLOAD_BIN: a
// comma-separated list of forwarder binaries to measure, interleaved,
// instead of this tree's; JUNCTION_STATSLOAD_ARGS: more `forwarder run`
// arguments, such as -workers 1). With JUNCTION_STATSLOAD_MIN=0.9 it fails when
// the median rate with clients is below 90% of the median without.
//
//	JUNCTION_STATSLOAD=1 go test ./cmd/forwarder -run TestStatsLoad -v
func TestStatsLoad(t *testing.T) {
	if os.Getenv("JUNCTION_STATSLOAD") == "" {
		t.Skip("set JUNCTION_STATSLOAD=1 to run the stats-load benchmark (about a minute)")
	}
	bins := strings.Split(os.Getenv("JUNCTION_STATSLOAD_BIN"), ",")
	if bins[0] == "" {
		bins[0] = filepath.Join(t.TempDir(), "forwarder")
		if out, err := exec.Command("go", "build", "-o", bins[0], ".").CombinedOutput(); err != nil {
			t.Fatalf("go build: %v\n%s", err, out)
		}
	}
	rounds := 2
	if s := os.Getenv("JUNCTION_STATSLOAD_ROUNDS"); s != "" {
		rounds, _ = strconv.Atoi(s)
	}
	quiet := make([][]float64, len(bins))
	loaded := make([][]float64, len(bins))
	for i := range rounds {
		for b, bin := range bins {
			r := runUnderStatsLoad(t, bin, 200, 8)
			t.Logf("round %d, %s: %s", i+1, filepath.Base(bin), r)
			quiet[b] = append(quiet[b], r.quiet...)
			loaded[b] = append(loaded[b], r.loaded...)
		}
	}
	for b, bin := range bins {
		q, l := median(quiet[b]), median(loaded[b])
		t.Logf("%s: median %.2f Mpps without clients, %.2f Mpps with 200 clients (%.0f%%; %d seconds each)",
			filepath.Base(bin), q, l, 100*l/q, len(quiet[b]))
		if s := os.Getenv("JUNCTION_STATSLOAD_MIN"); s != "" {
			want, _ := strconv.ParseFloat(s, 64)
			if l < want*q {
				t.Errorf("%s: with 200 clients the rate fell to %.0f%% of %.2f Mpps, want ≥ %.0f%%", bin, 100*l/q, q, 100*want)
			}
		}
	}
}

type loadResult struct {
	quiet, loaded []float64 // Mpps of each measured second without and with clients
	requests      uint64    // stats requests answered
	errors        uint64    // requests that failed
	peakRSS       uint64    // the forwarder's peak resident set after the last phase with clients, kB
	// otherCPU is the CPU time of the forwarder's threads other than the
	// pinned workers until the end of the last phase with clients, which
	// lasted loadedTime in all.
	otherCPU, loadedTime time.Duration
	preempted            string // the workers' preempted time, from the final table
}

func (r loadResult) String() string {
	return fmt.Sprintf("%.2f Mpps without clients, %.2f with; %d requests answered, %d failed; peak RSS %d MB; "+
		"non-worker threads' CPU %v over %v with clients (%.0f%% of a CPU); preempted: %s",
		median(r.quiet), median(r.loaded), r.requests, r.errors, r.peakRSS>>10,
		r.otherCPU, r.loadedTime, 100*r.otherCPU.Seconds()/r.loadedTime.Seconds(), r.preempted)
}

var (
	statsAtRE    = regexp.MustCompile(`stats at (http://\S+)/stats`)
	rateLineRE   = regexp.MustCompile(`^(\d+)s\s+rx \S+ \S+\s+tx ([0-9.]+) (Mpps|kpps|pps)`)
	workerCPUsRE = regexp.MustCompile(`^workers on CPUs ([0-9,]+);`)
	preemptedRE  = regexp.MustCompile(`preempted ([0-9.]+[µmn]?s)`)
)

// statsLoadPhase is how long the clients are on, then off.
const statsLoadPhase = 3 * time.Second

// runUnderStatsLoad runs the default graph for phases × statsLoadPhase,
// with clients goroutines fetching /stats in a loop over keep-alive
// connections during the odd phases but the last (the first, 0, is
// without).
func runUnderStatsLoad(t *testing.T, bin string, clients, phases int) loadResult {
	t.Helper()
	d := time.Duration(phases) * statsLoadPhase
	args := []string{"run", "-duration", d.String(), "-stats", "127.0.0.1:0"}
	args = append(args, strings.Fields(os.Getenv("JUNCTION_STATSLOAD_ARGS"))...)
	cmd := exec.Command(bin, args...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	var requests, failures, rss atomic.Uint64
	var otherCPU atomic.Int64
	var wg sync.WaitGroup
	var res loadResult
	var preempted []string
	hammer := func(ctx context.Context, url string) {
		tr := &http.Transport{MaxIdleConnsPerHost: clients, MaxConnsPerHost: clients}
		c := &http.Client{Transport: tr, Timeout: 5 * time.Second}
		for range clients {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for ctx.Err() == nil {
					req, _ := http.NewRequestWithContext(ctx, "GET", url, nil)
					resp, err := c.Do(req)
					if err != nil {
						if ctx.Err() == nil {
							if failures.Add(1) <= 3 {
								t.Logf("client: %v", err)
							}
							time.Sleep(10 * time.Millisecond)
						}
						continue
					}
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					requests.Add(1)
				}
			}()
		}
		wg.Wait()
		tr.CloseIdleConnections()
	}
	stopAll := make(chan struct{})
	defer close(stopAll)
	var workerCPUs atomic.Pointer[[]int] // from run's "workers on CPUs" line, where it prints one
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		line := sc.Text()
		if m := workerCPUsRE.FindStringSubmatch(line); m != nil {
			var cpus []int
			for _, c := range strings.Split(m[1], ",") {
				n, _ := strconv.Atoi(c)
				cpus = append(cpus, n)
			}
			workerCPUs.Store(&cpus)
		}
		if m := statsAtRE.FindStringSubmatch(line); m != nil {
			url := m[1] + "/stats"
			start := time.Now()
			go func() {
				// The last phase is without clients: the forwarder
				// shuts its endpoint down at its end.
				for p := 1; p < phases-1; p += 2 {
					select {
					case <-time.After(time.Until(start.Add(time.Duration(p) * statsLoadPhase))):
					case <-stopAll:
						return
					}
					ctx, cancel := context.WithTimeout(context.Background(), statsLoadPhase)
					hammer(ctx, url)
					cancel()
					if kb := peakRSS(cmd.Process.Pid); kb > 0 {
						rss.Store(kb)
					}
					var cpus []int
					if p := workerCPUs.Load(); p != nil {
						cpus = *p
					}
					otherCPU.Store(int64(otherThreadsCPU(cmd.Process.Pid, cpus)))
				}
			}()
		}
		if m := rateLineRE.FindStringSubmatch(line); m != nil {
			sec, _ := strconv.Atoi(m[1])
			v, _ := strconv.ParseFloat(m[2], 64)
			switch m[3] {
			case "kpps":
				v /= 1e3
			case "pps":
				v /= 1e6
			}
			// Second sec covers (sec-1, sec]: in phase (sec-1)/3; the
			// first second of a phase is the switch.
			phase, within := (sec-1)/int(statsLoadPhase/time.Second), (sec-1)%int(statsLoadPhase/time.Second)
			switch {
			case phase == 0 || within == 0 || phase >= phases:
			case phase%2 == 1:
				res.loaded = append(res.loaded, v)
			default:
				res.quiet = append(res.quiet, v)
			}
		}
		if m := preemptedRE.FindStringSubmatch(line); m != nil {
			preempted = append(preempted, m[1])
		}
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("forwarder: %v", err)
	}
	if len(res.quiet) == 0 || len(res.loaded) == 0 {
		t.Fatalf("no rate lines in the phases: %+v", res)
	}
	res.requests, res.errors, res.peakRSS = requests.Load(), failures.Load(), rss.Load()
	res.otherCPU = time.Duration(otherCPU.Load())
	res.loadedTime = time.Duration((phases-1)/2) * statsLoadPhase
	res.preempted = strings.Join(preempted, ", ")
	if res.preempted == "" {
		res.preempted = "none"
	}
	return res
}

// otherThreadsCPU sums the CPU time (user and system) of a process's
// threads other than the workers: those pinned to one of workerCPUs (nil:
// to any one CPU, for a forwarder that confines nothing else).
func otherThreadsCPU(pid int, workerCPUs []int) time.Duration {
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil {
		return 0
	}
	var ticks uint64
	for _, e := range tasks {
		tid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		var set unix.CPUSet
		if unix.SchedGetaffinity(tid, &set) != nil {
			continue
		}
		if set.Count() == 1 && (workerCPUs == nil || slices.ContainsFunc(workerCPUs, set.IsSet)) {
			continue // a worker
		}
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/stat", pid, tid))
		if err != nil {
			continue
		}
		// Fields after the command (which may hold spaces): state is
		// field 3, utime 14, stime 15.
		f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
		if len(f) > 12 {
			u, _ := strconv.ParseUint(f[11], 10, 64)
			s, _ := strconv.ParseUint(f[12], 10, 64)
			ticks += u + s
		}
	}
	return time.Duration(ticks) * time.Second / 100 // USER_HZ
}

// peakRSS reads a process's peak resident set (VmHWM), in kB.
func peakRSS(pid int) uint64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) >= 2 && f[0] == "VmHWM:" {
			kb, _ := strconv.ParseUint(f[1], 10, 64)
			return kb
		}
	}
	return 0
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
