package pipeline

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"
)

// TestStatsSlowloris: clients that send their request header a line at a
// time, and connect again when cut, do not keep a normal request waiting:
// while every slot is taken, one still reading its header after
// statsBusyHeaderTimeout is closed. Before, each held its slot for the
// whole header timeout (5 s), and 500 of them kept a request unanswered
// for 40 s.
func TestStatsSlowloris(t *testing.T) {
	old := statsBusyHeaderTimeout
	statsBusyHeaderTimeout = 200 * time.Millisecond
	defer func() { statsBusyHeaderTimeout = old }()
	addr, _ := startStatsRouter(t, StatsOptions{MaxConns: 4, Rate: -1})

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
