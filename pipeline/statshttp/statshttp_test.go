package statshttp

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	_ "github.com/junction-dataplane/junction/drivers/all"
	_ "github.com/junction-dataplane/junction/elements/all"
	"github.com/junction-dataplane/junction/pipeline"
)

// testGraph: one worker forwarding endless generated traffic to a sink.
const testGraph = `
[forwarder]
workers = 1

[devices.src]
driver = "gen"
rate   = 100000

[graph]
links = ["FromDevice(src) -> Counter -> Discard"]
`

// startRouter starts testGraph (stopped at the test's end) and returns
// once it has received packets.
func startRouter(t *testing.T) *pipeline.Router {
	t.Helper()
	g, err := pipeline.Parse("stats.toml", []byte(testGraph))
	if err != nil {
		t.Fatal(err)
	}
	r, err := pipeline.Start(g, pipeline.Options{NoPin: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		r.Stop()
		select {
		case <-r.Done():
		case <-time.After(10 * time.Second):
			t.Error("the router did not stop")
		}
		r.Close()
	})
	for deadline := time.Now().Add(10 * time.Second); r.Snapshot().Totals.RX == 0; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("no packet received in 10 s")
		}
	}
	return r
}

// startStatsRouter starts testGraph and serves its stats with o.
func startStatsRouter(t *testing.T, o Options) (string, *cache) {
	t.Helper()
	r := startRouter(t)
	addr, c, err := serve(r, "127.0.0.1:0", o)
	if err != nil {
		t.Fatal(err)
	}
	return addr.String(), c
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
	addr, _ := startStatsRouter(t, Options{IdleTimeout: 200 * time.Millisecond, Rate: -1})
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
// busyHeaderTimeout, which would close them, is set beyond the test:
// TestStatsSlowloris tests it).
func TestStatsConnLimit(t *testing.T) {
	old := busyHeaderTimeout
	busyHeaderTimeout = time.Hour
	defer func() { busyHeaderTimeout = old }()
	addr, _ := startStatsRouter(t, Options{MaxConns: 2, Rate: -1})
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
	addr, _ := startStatsRouter(t, Options{MaxConns: 2, Rate: -1})
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
	addr, _ := startStatsRouter(t, Options{MaxRequests: 3, Rate: -1})
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
	addr, cache := startStatsRouter(t, Options{Rate: -1})
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
		if time.Since(start) >= Refresh/2 {
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
	time.Sleep(Refresh + 10*time.Millisecond)
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
	addr, _ := startStatsRouter(t, Options{Rate: 20})
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
	r := startRouter(t)
	for _, addr := range []string{":0", "0.0.0.0:0", "[::]:0", "192.0.2.1:0", "example.com:0"} {
		if _, err := ServeWith(r, addr, Options{}); !errors.Is(err, ErrNotLoopback) || !strings.Contains(err.Error(), addr) {
			t.Errorf("%s: %v, want ErrNotLoopback naming the address", addr, err)
		}
	}
	if _, err := Serve(r, ":0"); !errors.Is(err, ErrNotLoopback) {
		t.Errorf("Serve(\":0\"): %v", err)
	}
	for _, addr := range []string{"127.0.0.1:0", "localhost:0", "127.0.0.2:0"} {
		if _, err := Serve(r, addr); err != nil {
			t.Errorf("%s: %v", addr, err)
		}
	}
	if err := checkLoopback("[::1]:0"); err != nil {
		t.Errorf("[::1]: %v", err)
	}
	if _, err := ServeWith(r, ":0", Options{Public: true}); err != nil {
		t.Errorf(":0 with Public: %v", err)
	}
}

// TestStatsSlowloris: clients that send their request header a line at a
// time, and connect again when cut, do not keep a normal request waiting:
// while every slot is taken, one still reading its header after
// busyHeaderTimeout is closed. Before, each held its slot for the
// whole header timeout (5 s), and 500 of them kept a request unanswered
// for 40 s.
func TestStatsSlowloris(t *testing.T) {
	old := busyHeaderTimeout
	busyHeaderTimeout = 200 * time.Millisecond
	defer func() { busyHeaderTimeout = old }()
	addr, _ := startStatsRouter(t, Options{MaxConns: 4, Rate: -1})

	stop := make(chan struct{})
	var wg sync.WaitGroup
	defer func() { close(stop); wg.Wait() }()
	for range 12 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				c, err := net.Dial("tcp", addr)
				if err != nil {
					return
				}
				io.WriteString(c, "GET /stats HTTP/1.1\r\nHost: x\r\n")
				for {
					select {
					case <-stop:
						c.Close()
						return
					case <-time.After(50 * time.Millisecond):
					}
					if _, err := io.WriteString(c, "X-Slow: 1\r\n"); err != nil {
						break
					}
				}
				c.Close()
			}
		}()
	}
	time.Sleep(300 * time.Millisecond) // the slow clients hold the slots

	for i := range 3 {
		t0 := time.Now()
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		// Before, the first waited at least the 5 s header timeout.
		c.SetDeadline(t0.Add(4 * time.Second))
		io.WriteString(c, "GET /stats HTTP/1.1\r\nHost: x\r\n\r\n")
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			c.Close()
			t.Fatalf("request %d among slow clients: %v after %v", i+1, err, time.Since(t0))
		}
		resp.Body.Close()
		c.Close()
		if resp.StatusCode != 200 {
			t.Errorf("request %d: %s", i+1, resp.Status)
		}
		t.Logf("request %d answered after %v", i+1, time.Since(t0).Round(time.Millisecond))
	}
}

// TestStatsEndpoint serves a running router's stats over HTTP and reads
// them back as JSON and Prometheus text.
func TestStatsEndpoint(t *testing.T) {
	r := startRouter(t)
	addr, err := Serve(r, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s, err := Fetch(addr.String())
	if err != nil {
		t.Fatal(err)
	}
	if s.Totals.RX == 0 || len(s.Workers) != 1 || !s.Workers[0].Running {
		t.Errorf("fetched snapshot: %+v", s.Totals)
	}
	m, err := FetchRaw(addr.String(), "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(m, []byte("junction_element_packets_total{")) {
		t.Errorf("metrics: %s", m)
	}
	resp, err := http.Post("http://"+addr.String()+"/stats", "text/plain", nil)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST /stats: %s", resp.Status)
	}
}
