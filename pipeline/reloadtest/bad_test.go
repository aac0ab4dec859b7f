package reloadtest

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/junction-dataplane/junction/elements"
	"github.com/junction-dataplane/junction/pipeline"
)

// slowGate holds TestSlowNew's constructor until the test lets it go.
var slowGate = make(chan struct{})

func init() {
	elements.Register(elements.Type{
		Name: "TestSlowNew", In: 1, Out: 1,
		New: func(_ any, ctx *elements.Context) (elements.Element, error) {
			<-slowGate
			return elements.Element(nil), errors.New("never built")
		},
	})
}

const goodGraph = `[forwarder]
workers = 2

[devices.g]
driver = "gen"
rate   = 200000
flows  = 16

[elements.ct]
type = "Conntrack"

[graph]
links = ["FromDevice(g) -> ct -> Discard"]
`

// running starts goodGraph from a file and returns the router and the file.
func running(t *testing.T) (*pipeline.Router, string) {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, "good.toml")
	if err := os.WriteFile(path, []byte(goodGraph), 0o644); err != nil {
		t.Fatal(err)
	}
	g, err := pipeline.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	r, err := pipeline.Start(g, pipeline.Options{NoPin: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Stop(); r.Wait() })
	return r, path
}

// stillRunning fails unless generation 1 keeps forwarding.
func stillRunning(t *testing.T, r *pipeline.Router) {
	t.Helper()
	if gen, _, _ := r.Generation(); gen != 1 {
		t.Fatalf("generation %d after a failed reload, want 1", gen)
	}
	// Some packets within 2 s: on a loaded machine the workers may get no
	// CPU for tens of milliseconds (a fixed 50 ms window failed there).
	a := r.Snapshot().Totals.RX
	for deadline := time.Now().Add(2 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		b := r.Snapshot().Totals.RX
		if b > a {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no packet received in 2 s after the failed reload (%d → %d)", a, b)
		}
	}
}

// TestReloadBadInput: a file that does not parse, an element whose config
// is invalid, a device that cannot open, a constructor that fails: each
// reload returns the located error and the running graph keeps running,
// untouched.
func TestReloadBadInput(t *testing.T) {
	r, path := running(t)
	dir := filepath.Dir(path)
	cases := []struct {
		name, src, want string
	}{
		{"syntax", strings.Replace(goodGraph, `type = "Conntrack"`, `type = "Conntrack`, 1), "bad.toml:10"},
		{"element config", strings.Replace(goodGraph, `type = "Conntrack"`, "type = \"Conntrack\"\ncapacity = 0", 1), `bad.toml:11: element "ct" (Conntrack): key "capacity"`},
		{"device", "", ""}, // a pcap device whose file does not exist: below
		{"renamed conntrack", strings.Replace(strings.Replace(goodGraph, "[elements.ct]", "[elements.ct2]", 1), "-> ct ->", "-> ct2 ->", 1), `element "ct2" (Conntrack)`},
		{"batch", strings.Replace(goodGraph, "workers = 2", "workers = 2\nbatch = 32", 1), "cannot change it"},
	}
	for _, c := range cases {
		if c.name == "device" {
			c.src = strings.Replace(goodGraph, "[elements.ct]", "[devices.p]\ndriver = \"pcap\"\nread = \"no-such.pcap\"\n\n[elements.ct]", 1)
			c.src = strings.Replace(c.src, `links = ["FromDevice(g) -> ct -> Discard"]`, `links = ["FromDevice(g) -> ct -> Discard", "FromDevice(p) -> Discard"]`, 1)
			c.want = `bad.toml:9: device "p" (driver pcap)`
		}
		bad := filepath.Join(dir, "bad.toml")
		if err := os.WriteFile(bad, []byte(c.src), 0o644); err != nil {
			t.Fatal(err)
		}
		rep, err := r.Reload(bad, false)
		if err == nil {
			t.Fatalf("%s: reload succeeded: %+v", c.name, rep)
		}
		if !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %q does not say %q", c.name, err, c.want)
		}
		stillRunning(t, r)
	}
	// And the good file still reloads.
	if _, err := r.Reload(path, false); err != nil {
		t.Fatal(err)
	}
	if gen, _, _ := r.Generation(); gen != 2 {
		t.Fatalf("generation %d, want 2", gen)
	}
}

// TestReloadOneAtATime: while a reload is preparing, TryReload is refused
// and Reload waits for it: never interleaved.
func TestReloadOneAtATime(t *testing.T) {
	r, path := running(t)
	slow := filepath.Join(filepath.Dir(path), "slow.toml")
	os.WriteFile(slow, []byte(strings.Replace(goodGraph, "-> ct ->", "-> ct -> TestSlowNew ->", 1)), 0o644)
	first := make(chan error, 1)
	go func() {
		_, err := r.Reload(slow, false)
		first <- err
	}()
	// Wait until the first reload holds the lock.
	deadline := time.Now().Add(5 * time.Second)
	for {
		_, err := r.TryReload(path, true)
		if errors.Is(err, pipeline.ErrReloadBusy) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the slow reload never became busy")
		}
		time.Sleep(time.Millisecond)
	}
	second := make(chan error, 1)
	go func() {
		_, err := r.Reload(path, false)
		second <- err
	}()
	select {
	case err := <-second:
		t.Fatalf("second reload returned while the first was preparing: %v", err)
	case <-time.After(50 * time.Millisecond):
	}
	close(slowGate)
	if err := <-first; err == nil || !strings.Contains(err.Error(), "never built") {
		t.Fatalf("first reload: %v, want its constructor's error", err)
	}
	if err := <-second; err != nil {
		t.Fatalf("second reload: %v", err)
	}
	if gen, _, _ := r.Generation(); gen != 2 {
		t.Fatalf("generation %d, want 2", gen)
	}
}

// TestReloadDryRunAndStopped: a dry run of a running router validates the
// file and says what would change without changing anything; a router that
// has stopped refuses a reload.
func TestReloadDryRunAndStopped(t *testing.T) {
	r, path := running(t)
	other := filepath.Join(filepath.Dir(path), "other.toml")
	os.WriteFile(other, []byte(strings.Replace(goodGraph, "-> ct ->", "-> ct -> n :: Counter ->", 1)), 0o644)
	rep, err := r.Reload(other, true)
	if err != nil {
		t.Fatal(err)
	}
	if !rep.DryRun || strings.Join(rep.Added, ",") != "n (Counter)" || len(rep.LinksAdded) != 2 || rep.Generation != 2 {
		t.Errorf("dry run report: %+v", rep)
	}
	stillRunning(t, r)
	for _, e := range r.Snapshot().Elements {
		if e.Element == "n" {
			t.Fatal("a dry run built the new element")
		}
	}
	r.Stop()
	r.Wait()
	if _, err := r.Reload(other, false); err == nil || !strings.Contains(err.Error(), "stopped") {
		t.Errorf("reload of a stopped router: %v", err)
	}
}
