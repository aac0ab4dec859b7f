package host_test

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// children lists the direct children of pid.
func children(pid int) []int {
	var out []int
	tasks, _ := filepath.Glob("/proc/" + strconv.Itoa(pid) + "/task/*/children")
	for _, f := range tasks {
		data, _ := os.ReadFile(f)
		for _, s := range strings.Fields(string(data)) {
			if n, err := strconv.Atoi(s); err == nil {
				out = append(out, n)
			}
		}
	}
	return out
}

// TestForwarderStopsWithHungPlugin runs the forwarder binary with a plugin
// that is replaced, mid-run, by one that hangs in its handshake, and
// crashed: the forwarder stops within its grace period — on SIGTERM, and
// at the end of -duration — although the plugin start deadline is longer,
// and leaves no process of the hung plugin behind.
func TestForwarderStopsWithHungPlugin(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the forwarder")
	}
	fwd := filepath.Join(bin, "forwarder")
	if _, err := os.Stat(fwd); err != nil {
		build := exec.Command("go", "build", "-o", fwd, "../../cmd/forwarder")
		if out, err := build.CombinedOutput(); err != nil {
			t.Fatalf("building the forwarder: %v\n%s", err, out)
		}
	}
	const grace = 3 * time.Second // far below the default StartTimeout (10 s)
	for _, how := range []string{"sigterm", "duration"} {
		t.Run(how, func(t *testing.T) {
			dir := t.TempDir()
			pidFile := filepath.Join(dir, "pids")
			pf := filepath.Join(dir, "pf")
			install(t, pf)
			killLater(t, pidFile)
			g := filepath.Join(dir, "g.toml")
			graph := `[devices.in]
driver = "gen"
rate = 10000

[elements.p]
type = "Plugin"
path = "` + pf + `"
element = "Faulty"
on_failure = "drop"

[graph]
links = ["FromDevice(in) -> p", "p[0] -> Discard", "p[1] -> Discard"]
`
			if err := os.WriteFile(g, []byte(graph), 0o644); err != nil {
				t.Fatal(err)
			}
			args := []string{"run", "-config", g, "-stats", "off", "-workers", "1", "-nopin"}
			duration := 4 * time.Second
			if how == "duration" {
				args = append(args, "-duration", duration.String())
			}
			cmd := exec.Command(fwd, args...)
			stdout, _ := cmd.StdoutPipe()
			cmd.Stderr = os.Stderr
			t0 := time.Now()
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			exited := make(chan error, 1)
			lines := bufio.NewScanner(stdout)
			if !lines.Scan() || !strings.HasPrefix(lines.Text(), "junction:") {
				cmd.Process.Kill()
				t.Fatalf("no start banner: %q", lines.Text())
			}
			go func() {
				for lines.Scan() {
				}
				exited <- cmd.Wait()
			}()

			// Swap in the hanging plugin and crash the running one.
			hangScript(t, pf, pidFile, false, false)
			plugins := children(cmd.Process.Pid)
			if len(plugins) == 0 {
				cmd.Process.Kill()
				t.Fatal("no plugin process under the forwarder")
			}
			for _, pid := range plugins {
				syscall.Kill(pid, syscall.SIGKILL)
			}
			for deadline := time.Now().Add(5 * time.Second); len(readPids(t, pidFile)) < 2; {
				if time.Now().After(deadline) {
					cmd.Process.Kill()
					t.Fatal("the hanging plugin was never started")
				}
				time.Sleep(10 * time.Millisecond)
			}

			stopAt := t0.Add(duration)
			if how == "sigterm" {
				stopAt = time.Now()
				cmd.Process.Signal(syscall.SIGTERM)
			}
			select {
			case err := <-exited:
				late := time.Since(stopAt)
				t.Logf("exited %v after the stop (%v)", late.Round(time.Millisecond), err)
				if err != nil {
					t.Errorf("exit: %v", err)
				}
				if late > grace {
					t.Errorf("stopped %v after it should have (grace %v)", late, grace)
				}
			case <-time.After(time.Until(stopAt) + grace + 10*time.Second):
				cmd.Process.Kill()
				t.Fatalf("still running %v after it should have stopped", grace+10*time.Second)
			}
			checkAllDead(t, pidFile)
		})
	}
}
