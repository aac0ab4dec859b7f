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
