package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCheckDoesNotRunPlugins: forwarder check on a graph whose Plugin
// names a program does not execute it (not even for the handshake);
// check -plugins does, as run does. graph and routes do not.
func TestCheckDoesNotRunPlugins(t *testing.T) {
	dir := t.TempDir()
	marker := filepath.Join(dir, "ran")
	prog := filepath.Join(dir, "plugin.sh")
	if err := os.WriteFile(prog, []byte("#!/bin/sh\necho ran >> "+marker+"\nexit 1\n"), 0o700); err != nil {
		t.Fatal(err)
	}
	graph := filepath.Join(dir, "g.toml")
	src := `[devices.in]
driver = "gen"

[elements.p]
type    = "Plugin"
path    = "` + prog + `"
element = "Anything"

[graph]
links = ["FromDevice(in) -> p", "p[0] -> Discard", "p[1] -> Discard"]
`
	if err := os.WriteFile(graph, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"check", "-config", graph},
		{"check", "-strict", graph},
		{"graph", "-config", graph},
		{"routes", "-config", graph},
	} {
		code, out, errs := forwarder(t, args...)
		if _, err := os.Stat(marker); err == nil {
			t.Fatalf("%v executed the plugin (exit %d %q %q)", args, code, out, errs)
		}
		if args[0] == "check" && (code != 0 || !strings.Contains(out, "ok: ")) {
			t.Errorf("%v: exit %d %q %q", args, code, out, errs)
		}
	}
	// A key error is still found without starting the plugin.
	bad := strings.Replace(src, `element = "Anything"`, `element = "Anything"`+"\non_failure = \"explode\"", 1)
	os.WriteFile(graph, []byte(bad), 0o600)
	if code, _, errs := forwarder(t, "check", graph); code != 1 || !strings.Contains(errs, `key "on_failure"`) {
		t.Errorf("bad on_failure: exit %d %q", code, errs)
	}
	os.WriteFile(graph, []byte(src), 0o600)
	// -plugins starts it, as run would: the handshake fails.
	code, out, errs := forwarder(t, "check", "-plugins", graph)
	if _, err := os.Stat(marker); err != nil || code != 1 {
		t.Errorf("check -plugins: exit %d %q %q; plugin ran: %v", code, out, errs, err == nil)
	}
}
