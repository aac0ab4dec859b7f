package pipeline

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// startStatsRouter starts the fake graph and serves its stats with o.
func startStatsRouter(t *testing.T, o StatsOptions) (string, *statsCache) {
	t.Helper()
	resetRtCounters()
	c := rtGraph{workers: 1, queues: 1, failOn: -1}
	r, err := Start(c.graph(t), Options{NoPin: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Stop(); waitRouter(t, r, 5*time.Second) })
	addr, cache, err := r.serveStats("127.0.0.1:0", o)
	if err != nil {
		t.Fatal(err)
	}
	return addr.String(), cache
}

// rawGet sends GET path on c (keep-alive) and reads the response.
func rawGet(t *testing.T, c net.Conn, br *bufio.Reader, path string) *http.Response {
	t.Helper()
	if _, err := io.WriteString(c, "GET "+path+" HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp
}

// TestStatsIdleTimeout: a keep-alive connection left idle is closed by
// the server after its idle timeout (without one, 900 idle connections
// were still open 20 s after their last request).
func TestStatsIdleTimeout(t *testing.T) {
	addr, _ := startStatsRouter(t, StatsOptions{IdleTimeout: 200 * time.Millisecond, Rate: -1})
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	br := bufio.NewReader(c)
	if resp := rawGet(t, c, br, "/stats"); resp.StatusCode != 200 || resp.Close {
		t.Fatalf("first request: %s, close %v", resp.Status, resp.Close)
	}
	start := time.Now()
	c.SetReadDeadline(start.Add(3 * time.Second))
	_, err = br.ReadByte()
	if !errors.Is(err, io.EOF) {
		t.Fatalf("idle connection: read returned %v after %v, want the server to close it", err, time.Since(start))
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("closed after %v, idle timeout 200ms", d)
	}
}

// TestStatsConnLimit: with every slot held by a connection, another is
// not served until one of them closes (the held ones send nothing, so
// statsBusyHeaderTimeout, which would close them, is set beyond the test:
// TestStatsSlowloris tests it).
func TestStatsConnLimit(t *testing.T) {
	old := statsBusyHeaderTimeout
	statsBusyHeaderTimeout = time.Hour
	defer func() { statsBusyHeaderTimeout = old }()
	addr, _ := startStatsRouter(t, StatsOptions{MaxConns: 2, Rate: -1})
	var held []net.Conn
	for range 2 {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		held = append(held, c)
	}
	// The held connections are accepted (and send nothing); a third
	// connects (the kernel completes the handshake) but is not served.
	time.Sleep(50 * time.Millisecond)
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	io.WriteString(c, "GET /stats HTTP/1.1\r\nHost: x\r\n\r\n")
	br := bufio.NewReader(c)
	c.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
	if _, err := br.ReadByte(); err == nil {
		t.Fatal("a third connection was served with the limit at 2")
	}
	held[0].Close()
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("after a slot freed: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Errorf("after a slot freed: %s", resp.Status)
	}
	// Every slot is taken (held[1] and c): the response closes c, so that
	// a waiting client gets its turn.
	if !resp.Close {
		t.Error("a response with every slot taken kept its connection")
	}
}

// TestStatsIdleDrained: a kept-alive connection idle when the last slot
// is taken is closed at once, not after its idle timeout, so that idle
// clients cannot keep others out.
func TestStatsIdleDrained(t *testing.T) {
	addr, _ := startStatsRouter(t, StatsOptions{MaxConns: 2, Rate: -1})
	a, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	br := bufio.NewReader(a)
	if resp := rawGet(t, a, br, "/stats"); resp.Close {
		t.Fatal("the only connection was not kept alive")
	}
	time.Sleep(20 * time.Millisecond) // a is idle
	b, err := net.Dial("tcp", addr)   // takes the last slot
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	start := time.Now()
	a.SetReadDeadline(start.Add(3 * time.Second))
	if _, err := br.ReadByte(); !errors.Is(err, io.EOF) {
		t.Fatalf("idle connection with every slot taken: %v after %v, want it closed", err, time.Since(start))
	}
	// The freed slot serves a third client.
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(3 * time.Second))
	if resp := rawGet(t, c, bufio.NewReader(c), "/stats"); resp.StatusCode != 200 {
		t.Errorf("third client: %s", resp.Status)
	}
}

// TestStatsKeepAliveLimit: a connection is closed after MaxRequests.
func TestStatsKeepAliveLimit(t *testing.T) {
	addr, _ := startStatsRouter(t, StatsOptions{MaxRequests: 3, Rate: -1})
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	br := bufio.NewReader(c)
	for i := 1; i <= 3; i++ {
		if resp := rawGet(t, c, br, "/metrics"); resp.Close != (i == 3) {
			t.Errorf("request %d: close %v", i, resp.Close)
		}
	}
}

// TestStatsSnapshotCached: requests within the refresh interval get the
// same snapshot, built once; a request after it gets a new one.
func TestStatsSnapshotCached(t *testing.T) {
	addr, cache := startStatsRouter(t, StatsOptions{Rate: -1})
	// A connection per try: a connection serves DefaultStatsMaxRequests
	// requests, fewer than the tries of a slow machine make in all.
	var c net.Conn
	var br *bufio.Reader
	dial := func() {
		if c != nil {
			c.Close()
		}
		var err error
		if c, err = net.Dial("tcp", addr); err != nil {
			t.Fatal(err)
		}
		br = bufio.NewReader(c)
	}
	defer func() { c.Close() }()
	body := func(path string) []byte {
		io.WriteString(c, "GET "+path+" HTTP/1.1\r\nHost: x\r\n\r\n")
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return b
	}
	var first []byte
	for try := 0; ; try++ {
		dial()
		before, start := cache.builds.Load(), time.Now()
		first = body("/stats")
		same := true
		for range 20 {
			same = same && bytes.Equal(body("/stats"), first)
			body("/metrics")
		}
		if time.Since(start) >= StatsRefresh/2 {
			if try < 5 {
				continue // too slow a machine to tell: again
			}
			t.Skip("41 requests took longer than half the refresh interval")
		}
		if !same {
			t.Error("requests within 100 ms got different snapshots")
		}
		if n := cache.builds.Load() - before; n > 1 {
			t.Errorf("41 requests within 100 ms built %d snapshots, want 1", n)
		}
		break
	}
	time.Sleep(StatsRefresh + 10*time.Millisecond)
	before := cache.builds.Load()
	if bytes.Equal(body("/stats"), first) {
		t.Error("a request after the refresh interval got the old snapshot")
	}
	if cache.builds.Load() != before+1 {
		t.Error("a request after the refresh interval built no snapshot")
	}
}

// TestStatsPacing: requests beyond the rate wait for their turn.
func TestStatsPacing(t *testing.T) {
	addr, _ := startStatsRouter(t, StatsOptions{Rate: 20})
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	br := bufio.NewReader(c)
	start := time.Now()
	for range 6 {
		rawGet(t, c, br, "/stats")
	}
	// 20/s: the sixth is answered 250 ms after the first.
	if d := time.Since(start); d < 240*time.Millisecond {
		t.Errorf("6 requests at 20/s took %v", d)
	}
}

// TestStatsNotLoopback: an address that is not loopback is refused
// unless Public is set (":7999" listened on every interface silently).
func TestStatsNotLoopback(t *testing.T) {
	resetRtCounters()
	c := rtGraph{workers: 1, queues: 1, failOn: -1}
	r, err := Start(c.graph(t), Options{NoPin: true})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { r.Stop(); waitRouter(t, r, 5*time.Second) }()
	for _, addr := range []string{":0", "0.0.0.0:0", "[::]:0", "192.0.2.1:0", "example.com:0"} {
		if _, err := r.ServeStatsWith(addr, StatsOptions{}); !errors.Is(err, ErrStatsNotLoopback) || !strings.Contains(err.Error(), addr) {
			t.Errorf("%s: %v, want ErrStatsNotLoopback naming the address", addr, err)
		}
	}
	if _, err := r.ServeStats(":0"); !errors.Is(err, ErrStatsNotLoopback) {
		t.Errorf("ServeStats(\":0\"): %v", err)
	}
	for _, addr := range []string{"127.0.0.1:0", "localhost:0", "127.0.0.2:0"} {
		if _, err := r.ServeStats(addr); err != nil {
			t.Errorf("%s: %v", addr, err)
		}
	}
	if err := checkLoopback("[::1]:0"); err != nil {
		t.Errorf("[::1]: %v", err)
	}
	if _, err := r.ServeStatsWith(":0", StatsOptions{Public: true}); err != nil {
		t.Errorf(":0 with Public: %v", err)
	}
}

// threadAffinities maps each thread of the process to its CPU set.
func threadAffinities(t *testing.T) map[int]unix.CPUSet {
	t.Helper()
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		t.Skip(err)
	}
	m := map[int]unix.CPUSet{}
	for _, e := range tasks {
		tid, _ := strconv.Atoi(e.Name())
		var s unix.CPUSet
		if unix.SchedGetaffinity(tid, &s) == nil {
			m[tid] = s
		}
	}
	return m
}

// TestHousekeep: with a worker pinned to one CPU and others free, every
// other thread of the process is confined to the free CPUs, and the
// scheduler has a P beyond the workers'.
func TestHousekeep(t *testing.T) {
	if len(processCPUs) < 2 {
		t.Skip("needs 2 CPUs")
	}
	procs := runtime.GOMAXPROCS(0)
	defer func() {
		// Give every thread the process's CPUs back for the other tests.
		var all unix.CPUSet
		for _, c := range processCPUs {
			all.Set(c)
		}
		for tid := range threadAffinities(t) {
			unix.SchedSetaffinity(tid, &all)
		}
		runtime.GOMAXPROCS(procs)
	}()
	resetRtCounters()
	workerCPU := processCPUs[0]
	c := rtGraph{workers: 1, queues: 1, failOn: -1}
	r, err := Start(c.graph(t), Options{CPUs: []int{workerCPU}})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { r.Stop(); waitRouter(t, r, 5*time.Second) }()
	runtime.GOMAXPROCS(1) // as if there were one CPU per worker
	h, err := r.Housekeep()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(h.WorkerCPUs, []int{workerCPU}) || !slices.Equal(h.CPUs, processCPUs[1:]) || h.Threads == 0 {
		t.Fatalf("housekeeping %+v, process CPUs %v", h, processCPUs)
	}
	if runtime.GOMAXPROCS(0) < 2 || h.Procs != runtime.GOMAXPROCS(0) {
		t.Errorf("GOMAXPROCS %d, Procs %d: want ≥ workers + 1", runtime.GOMAXPROCS(0), h.Procs)
	}
	workers := 0
	for tid, s := range threadAffinities(t) {
		switch {
		case s.Count() == 1 && s.IsSet(workerCPU):
			workers++
		case s.IsSet(workerCPU):
			t.Errorf("thread %d may still run on the worker's CPU %d", tid, workerCPU)
		}
	}
	// At least the worker (a worker thread of an earlier test's router may
	// still be exiting).
	if workers < 1 {
		t.Errorf("no thread pinned to the worker's CPU")
	}
	// Closing the router gives every thread the process's CPUs back.
	r.Stop()
	waitRouter(t, r, 5*time.Second)
	for tid, s := range threadAffinities(t) {
		if s.Count() != len(processCPUs) {
			t.Errorf("after close, thread %d may run on %d CPUs, want %d", tid, s.Count(), len(processCPUs))
		}
	}
}

// TestHousekeepEveryCPU: when every CPU has a worker nothing is confined.
func TestHousekeepEveryCPU(t *testing.T) {
	if len(processCPUs) == 0 {
		t.Skip("pinning is not supported here")
	}
	procs := runtime.GOMAXPROCS(0)
	defer runtime.GOMAXPROCS(procs)
	resetRtCounters()
	c := rtGraph{workers: len(processCPUs), queues: len(processCPUs), failOn: -1}
	r, err := Start(c.graph(t), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { r.Stop(); waitRouter(t, r, 5*time.Second) }()
	h, err := r.Housekeep()
	if err != nil {
		t.Fatal(err)
	}
	if len(h.CPUs) != 0 || h.Threads != 0 || len(h.WorkerCPUs) != len(processCPUs) {
		t.Errorf("housekeeping %+v with a worker on each of %v", h, processCPUs)
	}
}
