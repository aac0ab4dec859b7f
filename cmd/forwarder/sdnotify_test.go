package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/junction-dataplane/junction/internal/control"
	"github.com/junction-dataplane/junction/internal/netns"
	"github.com/junction-dataplane/junction/pipeline"
)

// serviceGraph is a gen device writing into a pcap file: the file exists
// exactly when the devices have been opened.
func serviceGraph(t *testing.T) (config, pcap string) {
	dir := t.TempDir()
	pcap = filepath.Join(dir, "out.pcap")
	config = filepath.Join(dir, "svc.toml")
	text := fmt.Sprintf(`[forwarder]
workers = 1

[devices.src]
driver = "gen"
rate   = 1000

[devices.out]
driver = "pcap"
write  = %q

[graph]
links = ["FromDevice(src) -> ToDevice(out)"]
`, pcap)
	if err := os.WriteFile(config, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return config, pcap
}

// fakeNotifySocket is a service manager's end of $NOTIFY_SOCKET: the
// datagrams the forwarder sends, one message each.
func fakeNotifySocket(t *testing.T) <-chan string {
	path := filepath.Join(t.TempDir(), "notify")
	c, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	t.Setenv("NOTIFY_SOCKET", path)
	msgs := make(chan string, 16)
	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := c.Read(buf)
			if err != nil {
				close(msgs)
				return
			}
			msgs <- string(buf[:n])
		}
	}()
	return msgs
}

func nextNotify(t *testing.T, msgs <-chan string, want string) string {
	t.Helper()
	select {
	case m := <-msgs:
		if !strings.HasPrefix(m, want) {
			t.Fatalf("notification %q, want %s first", m, want)
		}
		return m
	case <-time.After(10 * time.Second):
		t.Fatalf("no %s notification within 10s", want)
	}
	return ""
}

// TestSDNotify runs the forwarder as systemd's Type=notify would, with a
// fake $NOTIFY_SOCKET: READY=1 comes once the devices are open (the pcap
// device's file exists by then), SIGHUP brings RELOADING=1 (with
// MONOTONIC_USEC) and then READY=1 for generation 2, and the end brings
// STOPPING=1. Plugins the graph would start do not inherit the variable.
func TestSDNotify(t *testing.T) {
	config, pcap := serviceGraph(t)
	sock := filepath.Join(t.TempDir(), "svc.sock")
	msgs := fakeNotifySocket(t)
	var out, errs lockedBuffer
	done := make(chan int, 1)
	go func() {
		done <- Main([]string{"run", "-config", config, "-duration", "4s", "-stats", "off", "-control", sock, "-nopin", "-quiet"}, &out, &errs)
	}()
	ready := nextNotify(t, msgs, "READY=1")
	if _, err := os.Stat(pcap); err != nil {
		t.Errorf("READY=1 before the devices were opened: %v", err)
	}
	if !strings.Contains(ready, "STATUS=running "+config+" (generation 1): 1 worker, ") {
		t.Errorf("READY=1 status: %q", ready)
	}
	if v, ok := os.LookupEnv("NOTIFY_SOCKET"); ok {
		t.Errorf("NOTIFY_SOCKET=%q still set: a plugin would inherit it", v)
	}

	syscall.Kill(os.Getpid(), syscall.SIGHUP)
	reloading := nextNotify(t, msgs, "RELOADING=1")
	if !strings.Contains(reloading, "\nMONOTONIC_USEC=") {
		t.Errorf("RELOADING=1 without MONOTONIC_USEC: %q", reloading)
	}
	if again := nextNotify(t, msgs, "READY=1"); !strings.Contains(again, "(generation 2)") {
		t.Errorf("READY=1 after the reload: %q", again)
	}
	// A reload over the control socket (no SIGHUP): the status follows
	// within a second.
	if code, out, errs := forwarder(t, "reload", "-control", sock); code != 0 {
		t.Fatalf("reload over the control socket: exit %d\n%s%s", code, out, errs)
	}
	if st := nextNotify(t, msgs, "STATUS=running"); !strings.Contains(st, "(generation 3)") {
		t.Errorf("status after a reload over the control socket: %q", st)
	}

	// A reload that fails: READY=1 again, the same generation, and a
	// status saying so.
	if err := os.WriteFile(config, []byte("[graph]\nlinks = [\"FromDevice(nosuch) -> Discard\"]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	syscall.Kill(os.Getpid(), syscall.SIGHUP)
	nextNotify(t, msgs, "RELOADING=1")
	if failed := nextNotify(t, msgs, "READY=1"); !strings.Contains(failed, "(generation 3)") || !strings.Contains(failed, "; the last reload failed, graph unchanged: "+config+":") {
		t.Errorf("READY=1 after a failed reload: %q", failed)
	}
	if stop := nextNotify(t, msgs, "STOPPING=1"); !strings.Contains(stop, "STATUS=stopping") {
		t.Errorf("STOPPING=1: %q", stop)
	}
	if code := <-done; code != 0 {
		t.Fatalf("exit %d: %s", code, errs.String())
	}
}

// TestSDNotifyAddress: a NOTIFY_SOCKET that is no unix socket address is a
// located error before anything starts; an unset one is no notifier.
func TestSDNotifyAddress(t *testing.T) {
	t.Setenv("NOTIFY_SOCKET", "")
	if n, err := newSDNotifier(); n != nil || err != nil {
		t.Errorf("unset: %v, %v", n, err)
	}
	t.Setenv("NOTIFY_SOCKET", "vsock:2:1234")
	code, _, errs := forwarder(t, "run", "-duration", "1s", "-stats", "off", "-control", "off")
	if code != 1 || !strings.Contains(errs, `NOTIFY_SOCKET="vsock:2:1234": not a unix socket path`) {
		t.Errorf("vsock: exit %d, %q", code, errs)
	}
	t.Setenv("NOTIFY_SOCKET", filepath.Join(t.TempDir(), "nobody"))
	if code, _, errs := forwarder(t, "run", "-duration", "1s", "-stats", "off", "-control", "off"); code != 1 || !strings.Contains(errs, "NOTIFY_SOCKET: dial unixgram") {
		t.Errorf("no listener: exit %d, %q", code, errs)
	}
}

// TestControlSocketInUse: a second forwarder given the control socket a
// live one serves (a unit started beside its service by hand) is refused
// with the socket's path and the holder's process id, before it opens a
// device; a socket left by a dead forwarder is taken over.
func TestControlSocketInUse(t *testing.T) {
	config, pcap := serviceGraph(t)
	sock := filepath.Join(t.TempDir(), "svc.sock")
	live := control.NewServer()
	if err := live.Listen(sock); err != nil {
		t.Fatal(err)
	}
	code, out, errs := forwarder(t, "run", "-config", config, "-duration", "1s", "-stats", "off", "-control", sock, "-nopin")
	want := fmt.Sprintf("control socket %s: forwarder process %d (", sock, os.Getpid())
	if code != 1 || !strings.Contains(errs, want) || !strings.Contains(errs, "give this one another -control PATH") {
		t.Errorf("exit %d, stderr %q; want exit 1 and %q", code, errs, want)
	}
	if _, err := os.Stat(pcap); err == nil {
		t.Errorf("the devices were opened before the refusal (stdout %q)", out)
	}
	live.Close()

	// A stale socket file: nobody answers, it is replaced.
	l, err := net.ListenUnix("unix", &net.UnixAddr{Name: sock, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	l.SetUnlinkOnClose(false)
	l.Close()
	if code, _, errs := forwarder(t, "run", "-config", config, "-duration", "300ms", "-stats", "off", "-control", sock, "-nopin", "-quiet"); code != 0 {
		t.Errorf("stale socket: exit %d, %q", code, errs)
	}
}

// TestGraphRunningTwice: without -control, a forwarder is refused when
// the forwarder on its default socket runs the same file (the graph
// started by hand beside its service), naming that process; one that
// runs another file of the same base name is no reason to refuse (this
// one runs without a control socket, with a warning).
func TestGraphRunningTwice(t *testing.T) {
	config, pcap := serviceGraph(t)
	// A base name of this process's own: the default socket is in the
	// shared /run/junction.
	named := filepath.Join(filepath.Dir(config), fmt.Sprintf("jsvc%d.toml", os.Getpid()))
	if err := os.Rename(config, named); err != nil {
		t.Fatal(err)
	}
	live := control.NewServer()
	live.Handle("snapshot", func(context.Context, []string) (any, error) {
		return &pipeline.Snapshot{Graph: pipeline.GraphGeneration{Generation: 1, File: named}}, nil
	})
	sock := control.DefaultPath(named)
	if err := live.Listen(sock); err != nil {
		t.Skipf("cannot serve the default socket %s: %v", sock, err)
	}
	defer live.Close()
	code, _, errs := forwarder(t, "run", "-config", named, "-duration", "1s", "-stats", "off", "-nopin")
	want := fmt.Sprintf("%s: forwarder process %d (", named, os.Getpid())
	if code != 1 || !strings.Contains(errs, want) || !strings.Contains(errs, "runs this graph already (control socket "+sock+")") {
		t.Errorf("same file: exit %d, stderr %q; want exit 1 and %q", code, errs, want)
	}
	if _, err := os.Stat(pcap); err == nil {
		t.Error("the devices were opened before the refusal")
	}

	// Another file of the same name: it runs, without the socket.
	other := filepath.Join(t.TempDir(), filepath.Base(named))
	text, _ := os.ReadFile(named)
	if err := os.WriteFile(other, text, 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, errs = forwarder(t, "run", "-config", other, "-duration", "300ms", "-stats", "off", "-nopin", "-quiet")
	if code != 0 || !strings.Contains(errs, "another forwarder is serving it") {
		t.Errorf("another file of the same name: exit %d, stderr %q", code, errs)
	}
}

// TestOtherNetns: this process is in its own namespace; a process in a
// namespace of the test's is in another (root only).
func TestOtherNetns(t *testing.T) {
	if otherNetns(os.Getpid()) {
		t.Error("this process is in another namespace than itself")
	}
	netns.RequireRoot(t)
	env := netns.New(t)
	p := env.NS("ctlns").Start("sleep", "30")
	deadline := time.Now().Add(5 * time.Second)
	for !otherNetns(p.Cmd.Process.Pid) {
		// ip netns exec enters the namespace, then execs sleep.
		if time.Now().After(deadline) {
			t.Fatal("a process in another namespace is not told apart")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestSDWatchdog: with WATCHDOG_USEC (systemd's WatchdogSec=) the
// forwarder sends WATCHDOG=1 twice per period while its workers make
// rounds; WATCHDOG_PID naming another process means no watchdog here.
func TestSDWatchdog(t *testing.T) {
	config, _ := serviceGraph(t)
	for _, c := range []struct {
		pid   string
		pings bool
	}{{"", true}, {strconv.Itoa(os.Getpid()), true}, {"1", false}} {
		msgs := fakeNotifySocket(t)
		t.Setenv("WATCHDOG_USEC", "200000")
		t.Setenv("WATCHDOG_PID", c.pid)
		var out, errs lockedBuffer
		if code := Main([]string{"run", "-config", config, "-duration", "1s", "-stats", "off", "-control", "off", "-nopin", "-quiet"}, &out, &errs); code != 0 {
			t.Fatalf("exit %d: %s", code, errs.String())
		}
		pings := 0
		for len(msgs) > 0 {
			if m := <-msgs; m == "WATCHDOG=1\n" {
				pings++
			}
		}
		// Every 100 ms for a second: at least a few, however loaded.
		if c.pings && pings < 3 || !c.pings && pings > 0 {
			t.Errorf("WATCHDOG_PID=%q: %d pings in 1 s at WATCHDOG_USEC=200000", c.pid, pings)
		}
		for _, v := range []string{"WATCHDOG_USEC", "WATCHDOG_PID"} {
			if _, ok := os.LookupEnv(v); ok {
				t.Errorf("%s still set: a plugin would inherit it", v)
			}
		}
	}
	if _, err := watchdogEnv("x", "", 1); err == nil {
		t.Error("WATCHDOG_USEC=x accepted")
	}
}

// TestStalledWorkers: a worker that ran in both snapshots with the same
// round count is stalled; one that made rounds, started or stopped since
// is not.
func TestStalledWorkers(t *testing.T) {
	snap := func(ws ...pipeline.WorkerStats) *pipeline.Snapshot { return &pipeline.Snapshot{Workers: ws} }
	prev := snap(
		pipeline.WorkerStats{Worker: 0, Rounds: 10, Running: true},
		pipeline.WorkerStats{Worker: 1, Rounds: 10, Running: true},
		pipeline.WorkerStats{Worker: 2, Rounds: 10, Running: true},
	)
	cur := snap(
		pipeline.WorkerStats{Worker: 0, Rounds: 11, Running: true},
		pipeline.WorkerStats{Worker: 1, Rounds: 10, Running: true},
		pipeline.WorkerStats{Worker: 2, Rounds: 10, Running: false},
		pipeline.WorkerStats{Worker: 3, Rounds: 0, Running: true},
	)
	if got := stalledWorkers(prev, cur); len(got) != 1 || got[0] != 1 {
		t.Errorf("stalled %v, want [1]", got)
	}
}
