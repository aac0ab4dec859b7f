package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/junction-dataplane/junction/benchmarks/result"
	"github.com/junction-dataplane/junction/internal/netns"
)

// TestE2ERunLines: e2e-lib.sh's e2e_run, called as e2e-idle.sh and
// e2e-iperf.sh call it, writes JSON lines that -runs turns into runs of
// the schema; without RESULT_JSON it writes nothing.
func TestE2ERunLines(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash")
	}
	tmp := t.TempDir()
	script := `. ../e2e-lib.sh
e2e_run after binary=after idle_cpu_ms=12,idle_cs_per_s=40,ping_cpu_ms=3,rtt_med_ms=0.051,rtt_p99_ms=0.2,replies=50,tcp_mbps=4012
CFG=router GRO=off fwd=junction
e2e_run "$CFG/gro-$GRO/$fwd/P8" "config=$CFG,gro=$GRO,forwarder=$fwd,streams=8" "Mbit/s=$((6012345678 / 1000000)),failed=$((6012345678 == 0)),fastpath_forwarded=0,wan_offload_off=1"
e2e_run "$CFG/gro-$GRO/linux/P1" "config=$CFG,gro=$GRO,forwarder=linux,streams=1" "Mbit/s=0,failed=$((0 == 0))"
`
	runBash := func(env ...string) {
		cmd := exec.Command(bash, "-euo", "pipefail", "-c", script)
		cmd.Env = append(os.Environ(), append([]string{"TMP=" + tmp}, env...)...)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
	}
	runBash("RESULT_JSON=")
	if _, err := os.Stat(filepath.Join(tmp, "runs")); err == nil {
		t.Fatal("e2e_run wrote runs without RESULT_JSON")
	}
	runBash("RESULT_JSON=" + filepath.Join(tmp, "r.json"))
	var out bytes.Buffer
	if err := run([]string{"-name", "e2e-iperf", "-runs", filepath.Join(tmp, "runs")}, strings.NewReader(""), &out); err != nil {
		t.Fatal(err)
	}
	r, err := result.Decode(&out)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Runs) != 3 {
		t.Fatalf("%d runs: %+v", len(r.Runs), r.Runs)
	}
	idle, p8, failed := r.Runs[0], r.Runs[1], r.Runs[2]
	if idle.Name != "after" || idle.Params["binary"] != "after" || idle.Metrics["rtt_med_ms"] != 0.051 || idle.Metrics["tcp_mbps"] != 4012 {
		t.Errorf("idle: %+v", idle)
	}
	if p8.Name != "router/gro-off/junction/P8" || p8.Params["streams"] != "8" || p8.Metrics["Mbit/s"] != 6012 || p8.Metrics["failed"] != 0 || p8.Metrics["wan_offload_off"] != 1 {
		t.Errorf("P8: %+v", p8)
	}
	if failed.Metrics["failed"] != 1 {
		t.Errorf("a run that received nothing is not failed: %+v", failed)
	}
}

// TestE2EAlive: e2e-lib.sh's e2e_alive, as e2e-idle.sh calls it before
// it reads /proc/PID: a process that runs passes; one that has exited, or
// was killed, ends the script with exit status 1, saying which process,
// its exit status or signal and the tail of its log.
func TestE2EAlive(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash")
	}
	tmp := t.TempDir()
	run := func(body string) (string, int) {
		t.Helper()
		cmd := exec.Command(bash, "-euo", "pipefail", "-c", ". ../e2e-lib.sh\n"+body)
		cmd.Env = append(os.Environ(), "TMP="+tmp)
		out, err := cmd.CombinedOutput()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return string(out), code
	}
	log := filepath.Join(tmp, "fwd.log")
	// Running: e2e_alive returns and the script goes on.
	out, code := run(`sleep 30 & p=$!
e2e_alive $p ` + log + ` "the sleeper"
echo still here
kill $p`)
	if code != 0 || !strings.Contains(out, "still here") {
		t.Errorf("a running process: exit %d\n%s", code, out)
	}
	// Exited with a status, reaped already (bash collects its background
	// children): what e2e-idle.sh met as "awk: cannot open /proc/PID/stat".
	out, code = run(`sh -c 'for i in $(seq 30); do echo line $i; done; echo "run: lan0: no such interface" >&2; exit 3' >` + log + ` 2>&1 & p=$!
while [ -e /proc/$p/stat ] && [ "$(sed 's/^.*) //' /proc/$p/stat | cut -d' ' -f1)" != Z ]; do sleep 0.01; done
sleep 0.1
e2e_alive $p ` + log + ` "the forwarder (before: /x/forwarder, round 1)"
echo not reached`)
	for _, want := range []string{"the forwarder (before: /x/forwarder, round 1) stopped: exit status 3",
		"  | run: lan0: no such interface", "  | line 30", "(" + log + ")"} {
		if !strings.Contains(out, want) {
			t.Errorf("an exited process: no %q in\n%s", want, out)
		}
	}
	if code != 1 || strings.Contains(out, "not reached") || strings.Contains(out, "line 10\n") {
		t.Errorf("an exited process: exit %d (want 1, the log's last 20 lines only)\n%s", code, out)
	}
	// Killed.
	out, code = run(`sleep 30 >` + log + ` 2>&1 & p=$!
kill -9 $p
sleep 0.1
e2e_alive $p ` + log + ` "the forwarder (after, round 2)"`)
	if code != 1 || !strings.Contains(out, "the forwarder (after, round 2) stopped: killed by signal 9 (KILL)") {
		t.Errorf("a killed process: exit %d\n%s", code, out)
	}
}

// TestE2EIdleForwarderStops: e2e-idle.sh with a "forwarder" that exits at
// once (as one refusing its graph does) stops at the first check, saying
// which binary stopped, its exit status and the end of its log, instead
// of failing later to read /proc/PID/stat. Root (namespaces); seconds.
func TestE2EIdleForwarderStops(t *testing.T) {
	if testing.Short() {
		t.Skip("builds namespaces")
	}
	netns.RequireRoot(t)
	for _, tool := range []string{"iperf3", "ethtool", "python3"} {
		netns.RequireTool(t, tool)
	}
	dir := t.TempDir()
	fwd := filepath.Join(dir, "forwarder")
	if err := os.WriteFile(fwd, []byte("#!/bin/sh\necho \"configs/router-veth.toml:12: device lan: no interface lan0\" >&2\nexit 2\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("bash", filepath.Join("..", "e2e-idle.sh"))
	cmd.Env = append(os.Environ(), "ROUNDS=1", "IDLE=1", "DURATION=1", "BEFORE="+fwd, "AFTER="+fwd, "RESULT_JSON=")
	t0 := time.Now()
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("e2e-idle.sh succeeded with a forwarder that exits:\n%s", out)
	}
	for _, want := range []string{"the forwarder (before: " + fwd + ", round 1) stopped: exit status 2",
		"  | configs/router-veth.toml:12: device lan: no interface lan0"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("no %q in\n%s", want, out)
		}
	}
	if strings.Contains(string(out), "cannot open") || time.Since(t0) > 60*time.Second {
		t.Errorf("in %v:\n%s", time.Since(t0).Round(time.Second), out)
	}
}

// TestE2EScriptsJSON runs e2e-drops.sh, e2e-idle.sh and e2e-iperf.sh as
// root with the shortest settings and RESULT_JSON, and decodes what each
// wrote: every run named, with a rate, and the params the script
// documents. Minutes of iperf3; skipped with -short and without root.
func TestE2EScriptsJSON(t *testing.T) {
	if testing.Short() {
		t.Skip("runs three end-to-end scripts (minutes)")
	}
	netns.RequireRoot(t)
	for _, tool := range []string{"iperf3", "ethtool", "python3", "nstat", "curl", "nft"} {
		netns.RequireTool(t, tool)
	}
	dir := t.TempDir()
	fwd := filepath.Join(dir, "forwarder")
	if out, err := exec.Command("go", "build", "-o", fwd, "../../cmd/forwarder").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	for _, c := range []struct {
		script string
		env    []string
		runs   int      // at least
		params []string // every run has these
		metric string   // and this metric
	}{
		{"e2e-drops", []string{"SECS=1"}, 6, []string{"forwarder", "case"}, "Mbit/s"},
		{"e2e-idle", []string{"ROUNDS=1", "IDLE=1", "DURATION=1", "BEFORE=" + fwd, "AFTER=" + fwd}, 2, []string{"binary"}, "idle_cpu_ms"},
		{"e2e-iperf", []string{"DURATION=1", "ONLY=router"}, 8, []string{"config", "gro", "forwarder", "streams"}, "Mbit/s"},
	} {
		t.Run(c.script, func(t *testing.T) {
			path := filepath.Join(dir, c.script+".json")
			cmd := exec.Command("bash", filepath.Join("..", c.script+".sh"))
			cmd.Env = append(os.Environ(), append([]string{"RESULT_JSON=" + path, "FORWARDER=" + fwd}, c.env...)...)
			t0 := time.Now()
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
			t.Logf("%s.sh in %v", c.script, time.Since(t0).Round(time.Second))
			r, err := result.ReadFile(path)
			if err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
			if r.Name != c.script || r.Command != "sudo benchmarks/"+c.script+".sh" || len(r.Runs) < c.runs || r.Machine.Kernel == "" {
				t.Fatalf("%+v", r)
			}
			t.Logf("%d runs; the first and last: %+v\n%+v", len(r.Runs), r.Runs[0], r.Runs[len(r.Runs)-1])
			for _, run := range r.Runs {
				for _, p := range c.params {
					if run.Params[p] == "" {
						t.Errorf("run %s without param %s: %+v", run.Name, p, run)
					}
				}
				if _, ok := run.Metrics[c.metric]; !ok {
					t.Errorf("run %s without %s: %+v", run.Name, c.metric, run)
				}
			}
			if !bytes.Contains(out, []byte("result: "+path)) {
				t.Errorf("no result line in\n%s", out)
			}
		})
	}
}
