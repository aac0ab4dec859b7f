package host_test

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/junction-dataplane/junction/elements/elementtest"
	"github.com/junction-dataplane/junction/pipeline"
	"github.com/junction-dataplane/junction/plugins/host"
	"github.com/junction-dataplane/junction/plugins/internal/wire"
)

// shortDeadlines makes the host's deadlines and backoff test-sized. The
// start deadline still leaves a healthy plugin time to start on a loaded
// machine (an exec and a handshake took over 400 ms there).
func shortDeadlines(t *testing.T) {
	t.Helper()
	st, ct, sp, mb := host.StartTimeout, host.CallTimeout, host.StopTimeout, host.MaxBackoff
	host.StartTimeout, host.CallTimeout, host.StopTimeout, host.MaxBackoff =
		1500*time.Millisecond, 400*time.Millisecond, time.Second, 40*time.Millisecond
	t.Cleanup(func() {
		host.StartTimeout, host.CallTimeout, host.StopTimeout, host.MaxBackoff = st, ct, sp, mb
	})
}

// install copies the faulty test plugin to dst (mode 0755), by rename so
// that a running copy is replaced rather than rewritten.
func install(t *testing.T, dst string) {
	t.Helper()
	data, err := os.ReadFile(pluginPath("faulty"))
	if err != nil {
		t.Fatal(err)
	}
	writeExec(t, dst, data)
}

func writeExec(t *testing.T, dst string, data []byte) {
	t.Helper()
	tmp := dst + ".new"
	if err := os.WriteFile(tmp, data, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(tmp, 0o755); err != nil { // whatever the umask
		t.Fatal(err)
	}
	if err := os.Rename(tmp, dst); err != nil {
		t.Fatal(err)
	}
}

// hangScript writes to dst a plugin that never completes a start: it
// prints a fake handshake line (naming a socket nobody listens on) if
// handshake is set, after forking a sleeper that holds its standard
// output — in its own session, out of reach of a process-group kill, if
// escape is set — and waits. Every pid it starts is appended to pidFile.
func hangScript(t *testing.T, dst, pidFile string, handshake, escape bool) {
	t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "#!/bin/sh\necho $$ >> %s\n", pidFile)
	// The sleeper first: it must hold the pipe before the host can react
	// to the handshake line.
	if escape {
		b.WriteString("setsid sleep 30 &\n")
	} else {
		b.WriteString("sleep 30 &\n")
	}
	fmt.Fprintf(&b, "echo $! >> %s\n", pidFile)
	if handshake {
		fmt.Fprintf(&b, "echo '1|%d|unix|%s|grpc'\n", wire.ProtocolVersion, filepath.Join(filepath.Dir(pidFile), "nosocket"))
	}
	b.WriteString("wait\n")
	writeExec(t, dst, []byte(b.String()))
}

// readPids returns the pids a hang script recorded.
func readPids(t *testing.T, pidFile string) []int {
	t.Helper()
	data, _ := os.ReadFile(pidFile)
	var pids []int
	for _, f := range strings.Fields(string(data)) {
		if n, err := strconv.Atoi(f); err == nil {
			pids = append(pids, n)
		}
	}
	return pids
}

// alive: the process exists and is not a zombie.
func alive(pid int) bool {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	s := string(data)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] != 'Z'
}

// killLater kills whatever the hang script left behind when the test ends
// (an escaped sleeper is out of the host's reach by design).
func killLater(t *testing.T, pidFile string) {
	t.Cleanup(func() {
		for _, pid := range readPids(t, pidFile) {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	})
}

// checkAllDead: every process of the hang script (the plugin and a sleeper
// in its process group) is gone soon after (polled for up to 5 s, which a
// loaded machine may need to run and reap them).
func checkAllDead(t *testing.T, pidFile string) {
	t.Helper()
	pids := readPids(t, pidFile)
	if len(pids) == 0 {
		t.Fatal("the hang script never ran")
	}
	deadline := time.Now().Add(5 * time.Second)
	for _, pid := range pids {
		for alive(pid) {
			if time.Now().After(deadline) {
				t.Fatalf("pid %d (of %v) still running after the start was abandoned", pid, pids)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
}

// TestDirectoryChainChecked: an executable below a world-writable
// directory is refused even when its own directory is safe; a sticky
// world-writable directory (like /tmp) is allowed; a group-writable file
// is refused.
func TestDirectoryChainChecked(t *testing.T) {
	dir := t.TempDir()
	ww := filepath.Join(dir, "wwdir")
	sub := filepath.Join(ww, "sub")
	if err := os.MkdirAll(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	pf := filepath.Join(sub, "pf")
	install(t, pf)

	if err := os.Chmod(ww, 0o777); err != nil {
		t.Fatal(err)
	}
	_, err := pipeline.Parse("test.toml", []byte(graph(pf, "Mangle", "")))
	if err == nil || !strings.Contains(err.Error(), "directory "+ww+" is world-writable without the sticky bit") {
		t.Fatalf("%s below a 0777 directory: got %v", pf, err)
	}

	if err := os.Chmod(ww, 0o777|os.ModeSticky); err != nil {
		t.Fatal(err)
	}
	if _, err := pipeline.Parse("test.toml", []byte(graph(pf, "Mangle", ""))); err != nil {
		t.Fatalf("below a sticky 1777 directory: %v", err)
	}

	if err := os.Chmod(ww, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(pf, 0o775); err != nil {
		t.Fatal(err)
	}
	_, err = pipeline.Parse("test.toml", []byte(graph(pf, "Mangle", "")))
	if err == nil || !strings.Contains(err.Error(), "group-writable") {
		t.Fatalf("a group-writable executable: got %v", err)
	}
}

// crashAndWait kills the running plugin and drives the instance until
// cond holds (or fails the test after limit).
func crashAndWait(t *testing.T, h *elementtest.Harness, x *host.Instance, limit time.Duration, cond func() bool) {
	t.Helper()
	if pid := x.PID(); pid != 0 {
		syscall.Kill(pid, syscall.SIGKILL)
	}
	deadline := time.Now().Add(limit)
	for !cond() {
		x.Tick(0)
		down := x.PID() == 0
		t0 := time.Now()
		h.Push(0, testFrames(2)...)
		// A worker that waited for the plugin would wait out one of its
		// deadlines (CallTimeout 400 ms, StartTimeout 1.5 s here); a push
		// the scheduler delayed on a loaded machine took 68 ms. Down
		// after the push too: one that found it up again waited for the
		// answer, as it should.
		if d := time.Since(t0); down && x.PID() == 0 && d > 250*time.Millisecond {
			t.Fatalf("a push took %v while the plugin was down: the worker stalled", d)
		}
		if time.Now().After(deadline) {
			t.Fatalf("condition not reached within %v; counters %v", limit, h.Stats.Counters())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestPermissionsRecheckedAtRestart: a plugin whose file becomes
// world-writable (or whose directory does) after load is not executed
// again when it crashes; the failed starts are counted and logged once;
// once the permissions are fixed it comes back.
func TestPermissionsRecheckedAtRestart(t *testing.T) {
	shortDeadlines(t)
	for _, what := range []string{"file", "directory"} {
		t.Run(what, func(t *testing.T) {
			logs := &syncBuf{}
			host.SetLog(logs)
			dir := filepath.Join(t.TempDir(), "plugins")
			os.Mkdir(dir, 0o755)
			pf := filepath.Join(dir, "pf")
			install(t, pf)
			cfg := &host.Config{Path: pf, Element: "Faulty", OnFailure: "drop", Timeout: slackTimeout,
				Config: map[string]any{"mode": "ok"}}
			h := elementtest.New(t, "Plugin", cfg, &elementtest.Options{PoolSize: 512})
			x := h.Element.(*host.Instance)

			target, bad, good := pf, os.FileMode(0o777), os.FileMode(0o755)
			if what == "directory" {
				target = dir
			}
			if err := os.Chmod(target, bad); err != nil {
				t.Fatal(err)
			}
			crashAndWait(t, h, x, 3*time.Second, func() bool { return h.Counter("start failures") >= 3 })
			if x.PID() != 0 || h.Counter("restarts") != 0 {
				t.Fatalf("restarted from a world-writable %s: pid %d, restarts %d", what, x.PID(), h.Counter("restarts"))
			}
			if n := strings.Count(logs.String(), "restart failed"); n != 1 || !strings.Contains(logs.String(), "world-writable") {
				t.Fatalf("want one \"restart failed\" line naming the world-writable %s, got %d:\n%s", what, n, logs.String())
			}

			if err := os.Chmod(target, good); err != nil {
				t.Fatal(err)
			}
			crashAndWait(t, h, x, 3*time.Second, func() bool { return x.PID() != 0 })
			if !strings.Contains(logs.String(), "failed starts") {
				t.Errorf("recovery not logged:\n%s", logs.String())
			}
		})
	}
}

// TestPinRecheckedAtRestart: with sha256 set, a plugin replaced by a
// different executable after load is not started when it crashes.
func TestPinRecheckedAtRestart(t *testing.T) {
	shortDeadlines(t)
	logs := &syncBuf{}
	host.SetLog(logs)
	pf := filepath.Join(t.TempDir(), "pf")
	install(t, pf)
	cfg := &host.Config{Path: pf, Element: "Faulty", OnFailure: "drop", Timeout: slackTimeout,
		SHA256: fileSum(t, pf), Config: map[string]any{"mode": "ok"}}
	h := elementtest.New(t, "Plugin", cfg, &elementtest.Options{PoolSize: 512})
	x := h.Element.(*host.Instance)
	// The same plugin plus one byte: it would run, but it is not what the
	// graph pins.
	data, _ := os.ReadFile(pf)
	writeExec(t, pf, append(data, 0))
	crashAndWait(t, h, x, 3*time.Second, func() bool { return h.Counter("start failures") >= 2 })
	if x.PID() != 0 || h.Counter("restarts") != 0 {
		t.Fatalf("a replaced executable was started: pid %d, restarts %d", x.PID(), h.Counter("restarts"))
	}
	if !strings.Contains(logs.String(), "the graph pins") {
		t.Fatalf("log lacks the pin mismatch:\n%s", logs.String())
	}
}

// TestHungPluginAtLoad: a plugin that keeps its standard output open
// (itself or a child, inside or outside its process group), with or
// without a fake handshake line, fails the load within its deadlines,
// and nothing of it survives in its process group.
func TestHungPluginAtLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("waits out the start deadline in every case: seconds")
	}
	shortDeadlines(t)
	cases := []struct {
		name                      string
		handshake, escape, listen bool
		want                      string
	}{
		{"silent", false, false, false, "no answer to the go-plugin handshake within"},
		{"fake handshake", true, false, false, "describe"},
		// The socket the fake line names accepts and never answers.
		{"fake handshake, mute server", true, false, true, "no answer to the go-plugin handshake within"},
		{"silent, escaped child", false, true, false, "no answer to the go-plugin handshake within"},
		{"fake handshake, escaped child", true, true, false, "describe"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			pidFile := filepath.Join(dir, "pids")
			pf := filepath.Join(dir, "pf")
			hangScript(t, pf, pidFile, c.handshake, c.escape)
			killLater(t, pidFile)
			logs := &syncBuf{}
			host.SetLog(logs)
			if c.listen {
				l, err := net.Listen("unix", filepath.Join(dir, "nosocket"))
				if err != nil {
					t.Fatal(err)
				}
				defer l.Close()
				go func() {
					for {
						conn, err := l.Accept()
						if err != nil {
							return
						}
						defer conn.Close()
					}
				}()
			}
			t0 := time.Now()
			_, err := pipeline.Parse("test.toml", []byte(graph(pf, "X", "")))
			d := time.Since(t0)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("want an error with %q, got %v", c.want, err)
			}
			// Start, one call and one stop at most, plus slack.
			if limit := host.StartTimeout + host.CallTimeout + host.StopTimeout + time.Second; d > limit {
				t.Fatalf("load took %v (limit %v)", d, limit)
			}
			t.Logf("refused after %v: %v", d, err)
			// A stop that had to give up means something held the host
			// (a pipe left open by an escaped child, say).
			time.Sleep(host.StopTimeout + 100*time.Millisecond)
			if strings.Contains(logs.String(), "not waiting for it") {
				t.Fatalf("a stop gave up:\n%s", logs.String())
			}
			if !c.escape {
				checkAllDead(t, pidFile)
			}
		})
	}
}

// TestHungValidate: a plugin that completes the handshake and never
// answers the validate call fails the load within CallTimeout.
func TestHungValidate(t *testing.T) {
	shortDeadlines(t)
	host.SetLog(&syncBuf{})
	t0 := time.Now()
	_, err := pipeline.Parse("test.toml", []byte(graph(pluginPath("faulty"), "Faulty", `config = { mode = "hang-validate" }`)))
	d := time.Since(t0)
	if err == nil || !strings.Contains(err.Error(), "plugin failed to validate it: no answer within "+host.CallTimeout.String()) {
		t.Fatalf("got %v", err)
	}
	if limit := host.StartTimeout + host.CallTimeout + host.StopTimeout; d > limit {
		t.Fatalf("load took %v (limit %v)", d, limit)
	}
}

// TestHungRestart: a plugin replaced by one that hangs in its start and
// crashed: the worker never waits, the failed starts are counted (logged
// once) and each is abandoned within its deadline, the hung processes do
// not survive, and when a good executable is back the plugin recovers.
func TestHungRestart(t *testing.T) {
	shortDeadlines(t)
	logs := &syncBuf{}
	host.SetLog(logs)
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "pids")
	pf := filepath.Join(dir, "pf")
	install(t, pf)
	killLater(t, pidFile)
	cfg := &host.Config{Path: pf, Element: "Faulty", OnFailure: "bypass", Timeout: slackTimeout,
		Config: map[string]any{"mode": "ok"}}
	h := elementtest.New(t, "Plugin", cfg, &elementtest.Options{PoolSize: 512})
	x := h.Element.(*host.Instance)

	hangScript(t, pf, pidFile, true, false)
	crashAndWait(t, h, x, 5*time.Second, func() bool { return h.Counter("start failures") >= 2 })
	if n := strings.Count(logs.String(), "restart failed"); n != 1 {
		t.Fatalf("%d \"restart failed\" lines for one outage, want 1:\n%s", n, logs.String())
	}
	install(t, pf)
	crashAndWait(t, h, x, 5*time.Second, func() bool { return x.PID() != 0 })
	checkAllDead(t, pidFile)
	// The recovery is logged once the new process is up, which the
	// worker may see (its PID) a moment before the line is written.
	for deadline := time.Now().Add(2 * time.Second); !strings.Contains(logs.String(), "failed starts") && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	if !strings.Contains(logs.String(), "failed starts") {
		t.Errorf("recovery not logged:\n%s", logs.String())
	}
	before := h.Counter("bypassed")
	h.Push(0, testFrames(4)...)
	if h.Counter("bypassed") != before || x.PID() == 0 {
		t.Fatalf("after recovery: counters %v\n%s", h.Stats.Counters(), logs.String())
	}
}

// TestCloseDuringHungStart: closing the element (the router stopping)
// while a restart is stuck in the handshake returns at once, however long
// the start deadline, and kills the hung plugin's process group.
func TestCloseDuringHungStart(t *testing.T) {
	shortDeadlines(t)
	host.StartTimeout = time.Minute // the close must not wait for it
	host.SetLog(&syncBuf{})
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "pids")
	pf := filepath.Join(dir, "pf")
	install(t, pf)
	killLater(t, pidFile)
	cfg := &host.Config{Path: pf, Element: "Faulty", OnFailure: "drop", Timeout: slackTimeout,
		Config: map[string]any{"mode": "ok"}}
	h := elementtest.New(t, "Plugin", cfg, &elementtest.Options{PoolSize: 512})
	x := h.Element.(*host.Instance)

	hangScript(t, pf, pidFile, false, false)
	crashAndWait(t, h, x, 3*time.Second, func() bool { return len(readPids(t, pidFile)) >= 2 })
	time.Sleep(50 * time.Millisecond) // well inside the handshake wait
	t0 := time.Now()
	x.Close()
	if d := time.Since(t0); d > time.Second {
		t.Fatalf("Close took %v with a start hung in its handshake", d)
	}
	checkAllDead(t, pidFile)
}

// TestScriptsNeedSh: the hang scripts need /bin/sh, sleep and setsid.
func TestScriptsNeedSh(t *testing.T) {
	for _, p := range []string{"/bin/sh", "sleep", "setsid"} {
		if _, err := exec.LookPath(p); err != nil {
			t.Fatalf("%s: %v", p, err)
		}
	}
}

// TestExecutesWhatWasChecked: a plugin swapped for another file between
// the checks (and the SHA-256 comparison) and the exec does not run: the
// file that was checked does. (A swap between the checks and the open is
// refused: the opened file must be the one checked.)
func TestExecutesWhatWasChecked(t *testing.T) {
	shortDeadlines(t)
	host.SetLog(&syncBuf{})
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "pids")
	pf := filepath.Join(dir, "pf")
	install(t, pf)
	killLater(t, pidFile)
	swapped := false
	host.SetAfterCheck(func(string) {
		if !swapped {
			swapped = true
			hangScript(t, pf, pidFile, false, false)
		}
	})
	t.Cleanup(func() { host.SetAfterCheck(nil) })
	_, err := pipeline.Parse("test.toml", []byte(graph(pf, "Mangle", `sha256 = "`+fileSum(t, pluginPath("faulty"))+`"`)))
	if !swapped {
		t.Fatal("the hook did not run")
	}
	if err != nil {
		t.Fatalf("the checked plugin did not run: %v", err)
	}
	if pids := readPids(t, pidFile); len(pids) != 0 {
		t.Fatalf("the file swapped in after the checks ran (pids %v)", pids)
	}
}
