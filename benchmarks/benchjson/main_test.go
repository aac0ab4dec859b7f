package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/junction-dataplane/junction/benchmarks/result"
)

func TestWindowsAndGoTest(t *testing.T) {
	dir := t.TempDir()
	win := filepath.Join(dir, "win-linux")
	os.WriteFile(win, []byte("sink: t=3s rx_pps=600000 total=1\nsink: t=4s rx_pps=700000 total=2\n"), 0o644)
	var out bytes.Buffer
	err := run([]string{"-name", "e2e-router", "-traffic", "size=64,proto=udp", "-window", "linux=" + win, "-gotest"},
		strings.NewReader("BenchmarkL3Graph/workers=1-2  100  50.0 ns/op  20.0 Mpps\n"), &out)
	if err != nil {
		t.Fatal(err)
	}
	r, err := result.Decode(&out)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Runs) != 3 || r.Runs[0].Mpps != 20 || r.Runs[1].Name != "linux" || r.Runs[2].Metrics["pps"] != 700000 ||
		r.Runs[2].Mpps != 0.7 || r.Traffic["proto"] != "udp" {
		t.Errorf("%+v", r)
	}
	rows := filepath.Join(dir, "res-router")
	os.WriteFile(rows, []byte("linux p1 7599000000 994 -\njunction p1 4458000000 0 -\njunction p8 0 0 timeout\njunction udp64 239225 0.01 -\n"), 0o644)
	out.Reset()
	if err := run([]string{"-name", "e2e-tcp", "-iperf", "router=" + rows}, strings.NewReader(""), &out); err != nil {
		t.Fatal(err)
	}
	r, err = result.Decode(&out)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Runs) != 4 || r.Runs[0].Name != "router/linux/p1" || r.Runs[0].Metrics["Mbit/s"] != 7599 ||
		r.Runs[0].Metrics["retransmits"] != 994 || r.Runs[2].Metrics["failed"] != 1 || r.Runs[1].Metrics["failed"] != 0 ||
		r.Runs[3].Metrics["pps"] != 239225 || r.Runs[3].Params["config"] != "router" {
		t.Errorf("%+v", r.Runs)
	}
	os.WriteFile(rows, []byte("linux p1 x\n"), 0o644)
	if err := run([]string{"-name", "e2e-tcp", "-iperf", "router=" + rows}, strings.NewReader(""), &out); err == nil {
		t.Error("a short row was read")
	}
	if err := run([]string{"-name", "x"}, strings.NewReader(""), &out); err == nil {
		t.Error("a result with no runs was written")
	}
}

// TestRuns: -runs reads the JSON lines e2e-drops.sh, e2e-idle.sh and
// e2e-iperf.sh write (one result.Run each), and refuses a line that is
// not one, at its line.
func TestRuns(t *testing.T) {
	dir := t.TempDir()
	rows := filepath.Join(dir, "runs")
	os.WriteFile(rows, []byte(`{"name":"router/gro-off/linux/p1","params":{"config":"router","gro":"off","forwarder":"linux","streams":"1"},"metrics":{"Mbit/s":7010}}

{"name":"after","params":{"binary":"after"},"metrics":{"idle_cpu_ms":12,"rtt_med_ms":0.051}}
`), 0o644)
	var out bytes.Buffer
	if err := run([]string{"-name", "e2e-iperf", "-runs", rows}, strings.NewReader(""), &out); err != nil {
		t.Fatal(err)
	}
	r, err := result.Decode(&out)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Runs) != 2 || r.Runs[0].Params["gro"] != "off" || r.Runs[0].Metrics["Mbit/s"] != 7010 || r.Runs[1].Metrics["rtt_med_ms"] != 0.051 {
		t.Errorf("%+v", r.Runs)
	}
	for _, bad := range []string{`{"name":"x","metrics":{"Mbit/s":"fast"}}`, `{"name":"x","mbps":1}`, `{"params":{}}`, `x=1`} {
		os.WriteFile(rows, []byte("\n"+bad+"\n"), 0o644)
		if err := run([]string{"-name", "x", "-runs", rows}, strings.NewReader(""), &out); err == nil || !strings.Contains(err.Error(), rows+":2:") {
			t.Errorf("%s: %v", bad, err)
		}
	}
}
