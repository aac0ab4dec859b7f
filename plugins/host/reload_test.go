package host_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/junction-dataplane/junction/pipeline"
)

// pluginChildren lists the process's children (the plugin processes).
func pluginChildren(t *testing.T) []string {
	t.Helper()
	tasks, _ := filepath.Glob("/proc/self/task/*/children")
	var kids []string
	for _, f := range tasks {
		b, _ := os.ReadFile(f)
		kids = append(kids, strings.Fields(string(b))...)
	}
	slices.Sort(kids)
	return kids
}

// TestReloadKeepsPluginProcess: a reload that leaves a Plugin element as it
// was keeps its processes (the same PIDs, still forwarding); one that
// changes its config starts new ones and stops the old; one naming a
// plugin that cannot start fails with the located error and changes
// nothing.
func TestReloadKeepsPluginProcess(t *testing.T) {
	dir := t.TempDir()
	write := func(name, extra, links string) string {
		src := strings.Replace(graph(pluginPath("faulty"), "Mangle", extra), "count  = 100", "rate   = 20000", 1)
		if links != "" {
			src = strings.Replace(src, `"p[1] -> Discard"]`, `"p[1] -> `+links+`"]`, 1)
		}
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	slack := "timeout = \"10s\"\n"
	a := write("a.toml", slack+"config = { min = 20 }", "")
	same := write("same.toml", slack+"config = { min = 20 }", "Counter -> Discard") // the plugin unchanged, the graph not
	changed := write("changed.toml", slack+"config = { min = 30 }", "")
	bad := write("bad.toml", slack+"config = { min = 20 }", "")
	os.WriteFile(bad, []byte(strings.Replace(mustRead(t, bad), pluginPath("faulty"), filepath.Join(dir, "gone"), 1)), 0o644)

	before := pluginChildren(t)
	g, err := pipeline.Load(a)
	if err != nil {
		t.Fatal(err)
	}
	r, err := pipeline.Start(g, pipeline.Options{Workers: 2, NoPin: true})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { r.Stop(); r.Wait() }()
	procs := pluginChildren(t)
	if len(procs) != len(before)+2 {
		t.Fatalf("%d plugin processes for 2 workers, want 2 (%v → %v)", len(procs)-len(before), before, procs)
	}
	packets := func() uint64 {
		var n uint64
		for _, e := range r.Snapshot().Elements {
			if e.Element == "p" {
				n += e.Packets
			}
		}
		return n
	}

	if _, err := r.Reload(same, false); err != nil {
		t.Fatal(err)
	}
	if now := pluginChildren(t); !slices.Equal(now, procs) {
		t.Errorf("an unchanged Plugin got new processes: %v → %v", procs, now)
	}
	n0 := packets()
	time.Sleep(100 * time.Millisecond)
	if packets() <= n0 {
		t.Error("the kept plugin forwards nothing after the reload")
	}

	if _, err := r.Reload(bad, false); err == nil || !strings.Contains(err.Error(), `bad.toml:7: element "p" (Plugin): key "path"`) {
		t.Errorf("a plugin that cannot start: %v, want the located error", err)
	}
	if now := pluginChildren(t); !slices.Equal(now, procs) {
		t.Errorf("a failed reload changed the plugin processes: %v → %v", procs, now)
	}

	if _, err := r.Reload(changed, false); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		now := pluginChildren(t)
		fresh := len(now) == len(procs)
		for _, p := range now {
			fresh = fresh && !slices.Contains(procs, p) || slices.Contains(before, p)
		}
		if fresh {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("a reconfigured Plugin: processes %v → %v, want two new ones instead of the old", procs, now)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func mustRead(t *testing.T, p string) string {
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
