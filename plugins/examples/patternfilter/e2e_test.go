package patternfilter_test

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/gopacket/layers"

	_ "github.com/junction-dataplane/junction/drivers/all"
	_ "github.com/junction-dataplane/junction/elements/all"
	"github.com/junction-dataplane/junction/elements/elementtest"
	"github.com/junction-dataplane/junction/pipeline"
	"github.com/junction-dataplane/junction/plugins/examples/internal/extest"
	"github.com/junction-dataplane/junction/plugins/examples/patternfilter"
	"github.com/junction-dataplane/junction/plugins/host"
)

// TestEndToEnd: pcap in → configs/plugins/pattern-filter.toml (the filter
// as a plugin) → out.pcap and matched.pcap, decoded with gopacket.
func TestEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the plugin and runs graphs through it: seconds")
	}
	dir := t.TempDir()
	bin := builds.Get(t, pluginPkg)
	var frames [][]byte
	want := map[bool][]string{}
	for i := 0; i < 300; i++ {
		payload := []byte(fmt.Sprintf("packet %d says hello", i))
		match := false
		switch i % 7 {
		case 3:
			payload = append(payload, []byte(" ... attack at dawn")...)
			match = true
		case 5:
			payload = append(payload, 0xde, 0xad, 0xbe, 0xef)
			match = true
		}
		frames = append(frames, extest.UDP(t, "10.0.0.1", "10.0.0.2", uint16(1000+i), 9999, payload))
		want[match] = append(want[match], string(payload))
	}
	extest.WritePcap(t, filepath.Join(dir, "in.pcap"), frames)
	graph := extest.Graph(t, dir, "pattern-filter.toml", `path       = "./bin/patternfilter"`, `path = "`+bin+`"`)
	g, err := pipeline.Load(graph)
	if err != nil {
		t.Fatal(err)
	}
	r, err := pipeline.Start(g, pipeline.Options{Workers: 1, NoPin: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Wait(); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		file  string
		match bool
	}{{"out.pcap", false}, {"matched.pcap", true}} {
		pkts := extest.ReadPcap(t, filepath.Join(dir, c.file))
		if len(pkts) != len(want[c.match]) {
			t.Fatalf("%s: %d packets, want %d", c.file, len(pkts), len(want[c.match]))
		}
		for i, p := range pkts {
			udp, ok := p.Layer(layers.LayerTypeUDP).(*layers.UDP)
			if !ok || p.ErrorLayer() != nil {
				t.Fatalf("%s packet %d: not a clean UDP packet", c.file, i)
			}
			if string(udp.Payload) != want[c.match][i] {
				t.Fatalf("%s packet %d: payload %q, want %q", c.file, i, udp.Payload, want[c.match][i])
			}
		}
	}
}

// TestSameAsInProcess: the plugin and the in-process element send the same
// frames to the same ports on random traffic.
func TestSameAsInProcess(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the plugin: seconds (21 s under load)")
	}
	bin := builds.Get(t, pluginPkg)
	tbl := map[string]any{"patterns": []any{"ab", "hex:00ff"}, "scope": "frame"}
	cfg := &patternfilter.Config{Patterns: []string{"ab", "hex:00ff"}, Scope: "frame"}
	opts := &elementtest.Options{PoolSize: 4096}
	in := elementtest.New(t, "PatternFilter", cfg, opts)
	pl := elementtest.New(t, "Plugin", &host.Config{Path: bin, Element: "PatternFilter", Config: tbl,
		OnFailure: "drop", Timeout: slackTimeout}, opts)
	r := rand.New(rand.NewPCG(3, 4))
	for round := 0; round < 30; round++ {
		var frames [][]byte
		for i := 0; i < 1+r.IntN(64); i++ {
			f := make([]byte, r.IntN(200))
			for j := range f {
				f[j] = "ab\x00\xffxyz"[r.IntN(7)]
			}
			frames = append(frames, f)
		}
		in.Push(0, frames...)
		pl.Push(0, frames...)
	}
	for port := 0; port < 2; port++ {
		a, b := in.Outs[port].Frames(), pl.Outs[port].Frames()
		if len(a) != len(b) || len(a) == 0 {
			t.Fatalf("port %d: in-process %d frames, plugin %d", port, len(a), len(b))
		}
		for i := range a {
			if !bytes.Equal(a[i], b[i]) {
				t.Fatalf("port %d frame %d differs", port, i)
			}
		}
	}
}

func TestConfigErrors(t *testing.T) {
	for _, c := range []struct {
		cfg  patternfilter.Config
		want string
	}{
		{patternfilter.Config{Scope: "payload"}, `key "patterns": required`},
		{patternfilter.Config{Patterns: []string{"hex:zz"}, Scope: "payload"}, `bad hex`},
		{patternfilter.Config{Patterns: []string{""}, Scope: "payload"}, `empty pattern`},
		{patternfilter.Config{Patterns: []string{"x"}, Scope: "l7"}, `key "scope"`},
	} {
		err := c.cfg.Validate()
		if err == nil || !bytes.Contains([]byte(err.Error()), []byte(c.want)) {
			t.Errorf("%+v: %v, want %q", c.cfg, err, c.want)
		}
	}
}

const pluginPkg = "plugins/examples/patternfilter/cmd/patternfilter"

var builds extest.Builds

func TestMain(m *testing.M) {
	host.SetLog(os.Stderr)
	code := m.Run()
	builds.Cleanup()
	os.Exit(code)
}

// slackTimeout is the per-batch timeout of tests whose subject is not the
// timeout: generous, so that a loaded CI machine cannot turn a slow batch
// into an on_failure drop.
const slackTimeout = 5 * time.Second
