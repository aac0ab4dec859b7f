package main

import (
	"strings"
	"testing"
)

// TestRunStatsPublic: a stats address that is not loopback is refused,
// from -stats or the graph's [forwarder] stats, unless -stats-public is
// given (":7999" listened on every interface without a word).
func TestRunStatsPublic(t *testing.T) {
	for _, addr := range []string{":0", "0.0.0.0:0"} {
		code, out, errs := forwarder(t, "run", "-duration", "100ms", "-workers", "1", "-stats", addr)
		if code != 1 || !strings.Contains(errs, "not a loopback address") || !strings.Contains(errs, "-stats-public") {
			t.Errorf("-stats %s: exit %d, stderr %q", addr, code, errs)
		}
		if strings.Contains(out, "total: rx") {
			t.Errorf("-stats %s: ran:\n%s", addr, out)
		}
	}
	path := writeFile(t, "public.toml", "[forwarder]\nstats = \"0.0.0.0:0\"\n"+finiteGraph[strings.Index(finiteGraph, "[devices.in]"):])
	if code, _, errs := forwarder(t, "run", "-config", path, "-quiet"); code != 1 || !strings.Contains(errs, "-stats-public") {
		t.Errorf("[forwarder] stats 0.0.0.0:0: exit %d, stderr %q", code, errs)
	}
	code, out, errs := forwarder(t, "run", "-duration", "100ms", "-workers", "1", "-stats", ":0", "-stats-public")
	if code != 0 || !strings.Contains(out, "stats at http://") {
		t.Errorf("-stats :0 -stats-public: exit %d, %s\n%s", code, errs, out)
	}
	// forwarder run -h documents the flag.
	if _, _, errs := forwarder(t, "run", "-h"); !strings.Contains(errs, "-stats-public") || !strings.Contains(errs, "not loopback") {
		t.Errorf("run -h:\n%s", errs)
	}
}

// TestRunHousekeeping: run says where the workers and the other threads
// run.
func TestRunHousekeeping(t *testing.T) {
	code, out, errs := forwarder(t, "run", "-duration", "100ms", "-workers", "1", "-stats", "off")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if !strings.Contains(out, "workers on CPUs ") {
		t.Errorf("no housekeeping line:\n%s", out)
	}
}
