package control

import (
	"context"
	"fmt"
	"net"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// logs records logf while a test runs.
func logs(t *testing.T) func() []string {
	var mu sync.Mutex
	var lines []string
	old := logf
	logf = func(format string, args ...any) {
		mu.Lock()
		lines = append(lines, fmt.Sprintf(format, args...))
		mu.Unlock()
	}
	t.Cleanup(func() { logf = old })
	return func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), lines...)
	}
}

// TestAcceptAtDescriptorLimit: connections that take the process to its
// descriptor limit make accept fail (EMFILE); once they close, the next
// command is answered within a second, and the episode was logged once.
// An accept loop that ended on the first failure would leave every later
// command waiting in the backlog until the forwarder restarted.
func TestAcceptAtDescriptorLimit(t *testing.T) {
	_, path := start(t, t.TempDir())
	got := logs(t)
	var old syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &old); err != nil {
		t.Fatal(err)
	}
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skip(err)
	}
	low := old
	low.Cur = uint64(len(fds) + 64)
	if low.Cur > old.Cur {
		t.Skipf("descriptor limit %d already low", old.Cur)
	}
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &low); err != nil {
		t.Skip(err)
	}
	restored := false
	restore := func() {
		if !restored {
			syscall.Setrlimit(syscall.RLIMIT_NOFILE, &old)
			restored = true
		}
	}
	defer restore()
	// Dial until the process has no descriptor left: the server's
	// accepts fail from then on.
	var conns []net.Conn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for range 10000 {
		c, err := net.Dial("unix", path)
		if err != nil {
			break
		}
		conns = append(conns, c)
	}
	// The server may have taken the last descriptor with nothing left in
	// the backlog: then a client's descriptor is traded for one more
	// connection, which the server cannot accept.
	deadline := time.Now().Add(5 * time.Second)
	for len(got()) == 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
		if len(got()) == 0 && len(conns) > 0 {
			conns[0].Close()
			conns = conns[1:]
			if c, err := net.Dial("unix", path); err == nil {
				conns = append(conns, c)
			}
		}
	}
	for _, c := range conns {
		c.Close()
	}
	conns = nil
	restore()

	// Within a second: the handlers of the connections just closed may
	// still hold their slots for a moment (a busy answer), never longer.
	t0 := time.Now()
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		data, err := Call(ctx, path, "echo", []string{"x"})
		cancel()
		if err == nil && string(data) == `["x"]` {
			break
		}
		if time.Since(t0) > time.Second {
			t.Fatalf("a command after the descriptors were freed: %s %v (after %v)", data, err, time.Since(t0))
		}
		time.Sleep(10 * time.Millisecond)
	}
	lines := got()
	fails := 0
	for _, l := range lines {
		if strings.Contains(l, "too many open files") {
			fails++
		}
	}
	if fails != 1 || !strings.Contains(strings.Join(lines, "\n"), "accepting again") {
		t.Errorf("log: %q, want the failure once and the recovery", lines)
	}
}

// TestClientLimit: clients beyond MaxClients that hold their connection
// without a request do not make commands wait: a command meanwhile is
// told the forwarder is busy at once, and answered once they are gone.
func TestClientLimit(t *testing.T) {
	_, path := start(t, t.TempDir())
	var conns []net.Conn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for range 4 * MaxClients {
		c, err := net.Dial("unix", path)
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if _, err := Call(ctx, path, "echo", nil); err == nil || !strings.Contains(err.Error(), "busy") {
		t.Errorf("a command with %d idle clients connected: %v, want busy", len(conns), err)
	}
	for _, c := range conns {
		c.Close()
	}
	conns = nil
	// The idle clients' handlers see their hang-up and give back their
	// slots.
	deadline := time.Now().Add(time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		data, err := Call(ctx, path, "echo", []string{"y"})
		cancel()
		if err == nil && string(data) == `["y"]` {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("a command after the clients left: %s %v", data, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestUnreadResponse: clients that send a command and never read its
// (large) response give their slots back after responseTimeout, instead
// of holding them, and the control socket, for good.
func TestUnreadResponse(t *testing.T) {
	old := responseTimeout
	responseTimeout = 200 * time.Millisecond
	defer func() { responseTimeout = old }()
	s, path := start(t, t.TempDir())
	big := strings.Repeat("x", 1<<20) // beyond the socket buffer (208 KiB)
	s.Handle("big", func(ctx context.Context, args []string) (any, error) { return big, nil })
	var conns []net.Conn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for range MaxClients {
		c, err := net.Dial("unix", path)
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
		if _, err := c.Write([]byte(`{"cmd":"big"}` + "\n")); err != nil {
			t.Fatal(err)
		}
	}
	t0 := time.Now()
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		data, err := Call(ctx, path, "echo", []string{"z"})
		cancel()
		if err == nil && string(data) == `["z"]` {
			break
		}
		if time.Since(t0) > 5*time.Second {
			t.Fatalf("a command with %d clients not reading their responses: %v after %v", len(conns), err, time.Since(t0))
		}
		time.Sleep(20 * time.Millisecond)
	}
}
