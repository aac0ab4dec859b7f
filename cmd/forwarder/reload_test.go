package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
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
	if code := Main([]string{"reload", "-config", nw}, &out, &errb); code != 1 || !strings.Contains(errb.String(), "SIGHUP") {
		t.Errorf("live reload without a control socket: exit %d, %q", code, errb.String())
	}
}
