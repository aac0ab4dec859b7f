package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestSIGHUPReloadsRoutes runs the forwarder as a process on a graph whose
// IPLookup reads a routes_file: SIGHUP replaces the table with the file's
// new content (a route added live is applied again on top, and the
// report says so), and a file with an error leaves the table as it was
// and says why.
func TestSIGHUPReloadsRoutes(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the forwarder")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "forwarder")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	routes := filepath.Join(dir, "routes.txt")
	write := func(s string) {
		if err := os.WriteFile(routes, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("10.1.0.0/24 out 0\n0.0.0.0/0 via 10.2.0.2 out 1\n")
	cfg := strings.Replace(string(defaultGraph), `routes = [
  "10.1.0.0/24 out 0",
  "10.0.0.0/16 via 10.2.0.2 out 1",
  "0.0.0.0/0 via 10.2.0.2 out 1",
]`, `routes_file = "`+routes+`"`, 1)
	if cfg == string(defaultGraph) {
		t.Fatal("default.toml's routes changed: update this test")
	}
	config := filepath.Join(dir, "hup.toml")
	if err := os.WriteFile(config, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "hup.sock")
	cmd := exec.Command(bin, "run", "-config", config, "-quiet", "-stats", "off", "-workers", "1", "-nopin", "-control", sock)
	var out lockedBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		cmd.Process.Signal(syscall.SIGINT)
		cmd.Wait()
		if t.Failed() {
			t.Logf("forwarder output:\n%s", out.String())
		}
	}()
	routesNow := func() []string {
		var rr routesResult
		var o, e bytes.Buffer
		if code := Main([]string{"show", "routes", "-control", sock, "-format", "json"}, &o, &e); code != 0 {
			return nil
		}
		if err := json.Unmarshal(o.Bytes(), &rr); err != nil {
			t.Fatal(err)
		}
		var s []string
		for _, r := range rr.Routes {
			for j := range r.Hops {
				r.Hops[j].Device = "" // the port numbers, as the routes file says them
			}
			s = append(s, strings.ReplaceAll(routeLine(r), "\n", " "))
		}
		return s
	}
	waitFor := func(want string) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for {
			got := strings.Join(routesNow(), "; ")
			if got == want {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("routes %q, want %q", got, want)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	waitFor("0.0.0.0/0 via 10.2.0.2 out 1; 10.1.0.0/24 connected out 0")
	if code := Main([]string{"route", "add", "-control", sock, "10.7.0.0/16", "out", "1"}, &bytes.Buffer{}, &bytes.Buffer{}); code != 0 {
		t.Fatal("route add failed")
	}
	waitFor("0.0.0.0/0 via 10.2.0.2 out 1; 10.1.0.0/24 connected out 0; 10.7.0.0/16 connected out 1  [live]")

	write("10.1.0.0/24 out 0\n10.0.0.0/16 via 10.2.0.2 out 1\n0.0.0.0/0 via 10.2.0.3 out 1\n")
	cmd.Process.Signal(syscall.SIGHUP)
	waitFor("0.0.0.0/0 via 10.2.0.3 out 1; 10.0.0.0/16 via 10.2.0.2 out 1; 10.1.0.0/24 connected out 0; 10.7.0.0/16 connected out 1  [live]")
	if !strings.Contains(out.String(), "reloaded "+config+": generation 2") || !strings.Contains(out.String(), "element reconfigured   rt (IPLookup)") {
		t.Errorf("no reload message in %q", out.String())
	}
	if !strings.Contains(out.String(), "rt (IPLookup): live route kept: 10.7.0.0/16 out 1 (applied over the file's routes)") {
		t.Errorf("the reload does not say that the live route is kept: %q", out.String())
	}

	write("10.1.0.0/24 out 0\n10.9.0.0/33 out 1\n")
	cmd.Process.Signal(syscall.SIGHUP)
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(out.String(), "reload failed, the running graph is unchanged") {
		if time.Now().After(deadline) {
			t.Fatalf("no error for a bad routes file: %q", out.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	if !strings.Contains(out.String(), "10.9.0.0/33") {
		t.Errorf("the error does not say which line: %q", out.String())
	}
	waitFor("0.0.0.0/0 via 10.2.0.3 out 1; 10.0.0.0/16 via 10.2.0.2 out 1; 10.1.0.0/24 connected out 0; 10.7.0.0/16 connected out 1  [live]")
}
