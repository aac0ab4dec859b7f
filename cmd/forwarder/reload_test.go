package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestReloadDryRunOffline: forwarder reload -dry-run compares the new file
// with the running one and lists every kind of change; a bad new file
// gives its located error and exit status 1.
func TestReloadDryRunOffline(t *testing.T) {
	dir := t.TempDir()
	old := filepath.Join(dir, "old.toml")
	nw := filepath.Join(dir, "new.toml")
	bad := filepath.Join(dir, "bad.toml")
	os.WriteFile(old, []byte(`[devices.a]
driver = "gen"
[devices.b]
driver = "gen"
[elements.ct]
type = "Conntrack"
[elements.c]
type = "Counter"
[graph]
links = ["FromDevice(a) -> ct -> c -> ToDevice(b)"]
`), 0o644)
	os.WriteFile(nw, []byte(`[devices.a]
driver = "gen"
[devices.c]
driver = "gen"
[elements.ct]
type = "Conntrack"
capacity = 1000
[elements.c]
type = "Discard"
[elements.n]
type = "Counter"
[graph]
links = ["FromDevice(a) -> ct -> n -> c", "FromDevice(c) -> Discard"]
`), 0o644)
	os.WriteFile(bad, []byte("[elements.ct]\ntype = \"Conntrack\"\ncapacity = -1\n[graph]\nlinks = [\"ct -> Discard\"]\n"), 0o644)

	var out, errb bytes.Buffer
	if code := Main([]string{"reload", "-config", nw, "-dry-run", "-running", old}, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	for _, want := range []string{
		"would reload " + nw,
		"element added          n (Counter)",
		"element replaced       c (Counter → Discard)",
		"element reconfigured   ct (Conntrack)",
		"kept with state        ct (Conntrack)",
		"device opened          c (gen)",
		"device closed          b (gen)",
		"device kept open       a (gen)",
		"link added             ct[0] -> [0]n",
		"link removed           ct[0] -> [0]c",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("dry run does not say %q:\n%s", want, out.String())
		}
	}

	out.Reset()
	errb.Reset()
	if code := Main([]string{"reload", "-config", bad, "-dry-run", "-running", old}, &out, &errb); code != 1 {
		t.Errorf("bad file: exit %d, want 1", code)
	}
	if !strings.Contains(errb.String(), "bad.toml:3") {
		t.Errorf("bad file: %q does not locate the error", errb.String())
	}
	errb.Reset()
	if code := Main([]string{"reload", "-control", filepath.Join(dir, "none.sock"), "-config", nw}, &out, &errb); code != 1 || !strings.Contains(errb.String(), "no forwarder") {
		t.Errorf("live reload without a running forwarder: exit %d, %q", code, errb.String())
	}
}

// TestRunReloadsOnSIGHUP: forwarder run re-reads its file on SIGHUP and
// prints what changed; a file with an error is reported with its line and
// changes nothing; the final output names the generation that ran.
func TestRunReloadsOnSIGHUP(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "g.toml")
	sock := filepath.Join(dir, "g.sock")
	graphOf := func(extra string) string {
		return "[devices.a]\ndriver = \"gen\"\nrate = 10000\n\n[graph]\nlinks = [\"FromDevice(a) -> " + extra + "Discard\"]\n"
	}
	os.WriteFile(path, []byte(graphOf("")), 0o644)
	var out, errb lockedBuffer
	code := make(chan int, 1)
	go func() {
		code <- Main([]string{"run", "-config", path, "-duration", "4s", "-workers", "1", "-stats", "off", "-nopin", "-control", sock}, &out, &errb)
	}()
	waitFor := func(b *lockedBuffer, s string) {
		t.Helper()
		for deadline := time.Now().Add(3 * time.Second); !strings.Contains(b.String(), s); time.Sleep(10 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("no %q in:\n%s\n%s", s, out.String(), errb.String())
			}
		}
	}
	waitFor(&out, "junction: "+path)
	os.WriteFile(path, []byte(graphOf("c :: Counter -> ")), 0o644)
	syscall.Kill(os.Getpid(), syscall.SIGHUP)
	waitFor(&out, "reloaded "+path+": generation 2")
	waitFor(&out, "element added          c (Counter)")
	os.WriteFile(path, []byte(graphOf("c :: Counter(")), 0o644)
	syscall.Kill(os.Getpid(), syscall.SIGHUP)
	waitFor(&errb, "reload failed, the running graph is unchanged")
	waitFor(&errb, path+":")

	// Over the control socket: a dry run of another file, then the reload.
	other := filepath.Join(dir, "other.toml")
	os.WriteFile(other, []byte(graphOf("c :: Counter -> d :: Counter -> ")), 0o644)
	var o, e bytes.Buffer
	if c := Main([]string{"reload", "-control", sock, "-config", other, "-dry-run"}, &o, &e); c != 0 || !strings.Contains(o.String(), "would reload "+other+": generation 3") || !strings.Contains(o.String(), "element added          d (Counter)") {
		t.Errorf("live dry run: exit %d\n%s%s", c, o.String(), e.String())
	}
	o.Reset()
	if c := Main([]string{"reload", "-control", sock, "-config", path}, &o, &e); c != 1 || !strings.Contains(e.String(), path+":") {
		t.Errorf("live reload of the bad file: exit %d, %q", c, e.String())
	}
	if c := Main([]string{"reload", "-control", sock, "-config", other}, &o, &e); c != 0 || !strings.Contains(o.String(), "reloaded "+other+": generation 3") {
		t.Errorf("live reload: exit %d\n%s%s", c, o.String(), e.String())
	}
	o.Reset()
	if c := Main([]string{"show", "runtime", "-control", sock}, &o, &e); c != 0 || !strings.Contains(o.String(), "graph "+other+", generation 3, loaded ") {
		t.Errorf("show runtime does not name the generation: exit %d\n%s%s", c, o.String(), e.String())
	}
	if c := <-code; c != 0 {
		t.Fatalf("exit %d: %s", c, errb.String())
	}
	if !strings.Contains(out.String(), "graph generation 3 ("+other) {
		t.Errorf("the final output does not name generation 3:\n%s", out.String())
	}
}

// TestReloadDryRunOfflineWorkers: the offline dry run says that the
// number of workers changes and which devices stay open, told the count.
func TestReloadDryRunOfflineWorkers(t *testing.T) {
	dir := t.TempDir()
	old := filepath.Join(dir, "old.toml")
	nw := filepath.Join(dir, "new.toml")
	graph := "[devices.a]\ndriver = \"gen\"\n[devices.b]\ndriver = \"gen\"\n[graph]\nlinks = [\"FromDevice(a) -> ToDevice(b)\"]\n"
	os.WriteFile(old, []byte("[forwarder]\nworkers = 2\n"+graph), 0o644)
	os.WriteFile(nw, []byte("[forwarder]\nworkers = 3\n"+graph), 0o644)
	var out, errb bytes.Buffer
	if code := Main([]string{"reload", "-config", nw, "-dry-run", "-running", old}, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	for _, want := range []string{
		"would reload " + nw + ": generation",
		"3 workers",
		"workers                2 → 3",
		"device told workers    a (gen): kept open, TX for 3 workers",
		"device told workers    b (gen): kept open, TX for 3 workers",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("dry run does not say %q:\n%s", want, out.String())
		}
	}
	if strings.Contains(out.String(), "no change") {
		t.Errorf("a change of workers reported as no change:\n%s", out.String())
	}
}

// TestSIGHUPReloadsLastFile: after `forwarder reload -config F` switched
// the router to F, SIGHUP re-reads F (the file running), not the file run
// was started with, which would switch the router back without a word.
func TestSIGHUPReloadsLastFile(t *testing.T) {
	dir := t.TempDir()
	first := filepath.Join(dir, "first.toml")
	second := filepath.Join(dir, "second.toml")
	sock := filepath.Join(dir, "g.sock")
	graphOf := func(extra string) []byte {
		return []byte("[devices.a]\ndriver = \"gen\"\nrate = 10000\n\n[graph]\nlinks = [\"FromDevice(a) -> " + extra + "Discard\"]\n")
	}
	os.WriteFile(first, graphOf(""), 0o644)
	os.WriteFile(second, graphOf("c :: Counter -> "), 0o644)
	var out, errb lockedBuffer
	code := make(chan int, 1)
	go func() {
		code <- Main([]string{"run", "-config", first, "-duration", "4s", "-workers", "1", "-stats", "off", "-nopin", "-control", sock}, &out, &errb)
	}()
	waitFor := func(b *lockedBuffer, s string) {
		t.Helper()
		for deadline := time.Now().Add(3 * time.Second); !strings.Contains(b.String(), s); time.Sleep(10 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("no %q in:\n%s\n%s", s, out.String(), errb.String())
			}
		}
	}
	waitFor(&out, "junction: "+first)
	var o, e bytes.Buffer
	if c := Main([]string{"reload", "-control", sock, "-config", second}, &o, &e); c != 0 || !strings.Contains(o.String(), "reloaded "+second+": generation 2") {
		t.Fatalf("live reload: exit %d\n%s%s", c, o.String(), e.String())
	}
	os.WriteFile(second, graphOf("c :: Counter -> d :: Counter -> "), 0o644)
	syscall.Kill(os.Getpid(), syscall.SIGHUP)
	waitFor(&out, "reloaded "+second+": generation 3")
	waitFor(&out, "element added          d (Counter)")
	o.Reset()
	if c := Main([]string{"show", "runtime", "-control", sock}, &o, &e); c != 0 || !strings.Contains(o.String(), "graph "+second+", generation 3, loaded ") {
		t.Errorf("show runtime: exit %d\n%s%s", c, o.String(), e.String())
	}
	if c := <-code; c != 0 {
		t.Fatalf("exit %d: %s", c, errb.String())
	}
	if strings.Contains(out.String(), "reloaded "+first) {
		t.Errorf("SIGHUP reloaded the file run started with:\n%s", out.String())
	}
}
