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
)

// TestStatsLoad runs the default graph as a separate process, side by side
// with and without 200 concurrent keep-alive clients hammering its stats
// endpoint, in interleaved rounds, and reports the median forwarding rate
// of each. It takes about a minute, so it runs only with
// JUNCTION_STATSLOAD=1 (JUNCTION_STATSLOAD_ROUNDS rounds of each, default 3;
// JUNCTION_STATSLOAD_BIN: a forwarder binary to measure instead of this
// tree's). With JUNCTION_STATSLOAD_MIN=0.9 it fails below 90% of the rate.
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
	rounds := 3
	if s := os.Getenv("JUNCTION_STATSLOAD_ROUNDS"); s != "" {
		rounds, _ = strconv.Atoi(s)
	}
	quiet := make([][]float64, len(bins))
	loaded := make([][]float64, len(bins))
	for i := range rounds {
		for b, bin := range bins {
			for _, clients := range []int{0, 200} {
				r := runUnderStatsLoad(t, bin, clients, 8*time.Second)
				t.Logf("round %d, %s, %3d clients: %s", i+1, filepath.Base(bin), clients, r)
				if clients == 0 {
					quiet[b] = append(quiet[b], r.mpps)
				} else {
					loaded[b] = append(loaded[b], r.mpps)
				}
			}
		}
	}
	for b, bin := range bins {
		q, l := median(quiet[b]), median(loaded[b])
		t.Logf("%s: median %.2f Mpps without clients, %.2f Mpps with 200 clients (%.0f%%)", filepath.Base(bin), q, l, 100*l/q)
		if s := os.Getenv("JUNCTION_STATSLOAD_MIN"); s != "" {
			want, _ := strconv.ParseFloat(s, 64)
			if l < want*q {
				t.Errorf("%s: with 200 clients the rate fell to %.0f%% of %.2f Mpps, want ≥ %.0f%%", bin, 100*l/q, q, 100*want)
			}
		}
	}
}

type loadResult struct {
	mpps      float64 // median of the per-second tx rates after warm-up
	requests  uint64  // stats requests answered
	errors    uint64  // requests that failed
	preempted string  // the workers' preempted time, from the final table
}

func (r loadResult) String() string {
	return fmt.Sprintf("%.2f Mpps, %d requests answered, %d failed; preempted: %s", r.mpps, r.requests, r.errors, r.preempted)
}

var (
	statsAtRE   = regexp.MustCompile(`stats at (http://\S+)/stats`)
	rateLineRE  = regexp.MustCompile(`^\d+s\s+rx \S+ \S+\s+tx ([0-9.]+) (Mpps|kpps|pps)`)
	preemptedRE = regexp.MustCompile(`preempted ([0-9.]+[µmn]?s)`)
)

// runUnderStatsLoad runs the default graph for d with clients goroutines
// fetching /stats in a loop over keep-alive connections.
func runUnderStatsLoad(t *testing.T, bin string, clients int, d time.Duration) loadResult {
	t.Helper()
	cmd := exec.Command(bin, "run", "-duration", d.String(), "-stats", "127.0.0.1:0")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var requests, failures atomic.Uint64
	var wg sync.WaitGroup
	var rates []float64
	var preempted []string
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		line := sc.Text()
		if m := statsAtRE.FindStringSubmatch(line); m != nil && clients > 0 {
			// The clients stop a second before the forwarder does: what
			// fails while it shuts its endpoint down is no failure.
			time.AfterFunc(d-time.Second, cancel)
			url := m[1] + "/stats"
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
		}
		if m := rateLineRE.FindStringSubmatch(line); m != nil {
			v, _ := strconv.ParseFloat(m[1], 64)
			switch m[2] {
			case "kpps":
				v /= 1e3
			case "pps":
				v /= 1e6
			}
			rates = append(rates, v)
		}
		if m := preemptedRE.FindStringSubmatch(line); m != nil {
			preempted = append(preempted, m[1])
		}
	}
	cancel()
	wg.Wait()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("forwarder: %v", err)
	}
	// The first two seconds warm up (and the clients connect).
	if len(rates) < 4 {
		t.Fatalf("only %d rate lines", len(rates))
	}
	p := strings.Join(preempted, ", ")
	if p == "" {
		p = "none"
	}
	return loadResult{mpps: median(rates[2:]), requests: requests.Load(), errors: failures.Load(), preempted: p}
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
