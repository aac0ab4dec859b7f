package sampler_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/gopacket/layers"

	_ "github.com/junction-dataplane/junction/drivers/all"
	_ "github.com/junction-dataplane/junction/elements/all"
	"github.com/junction-dataplane/junction/pipeline"
	"github.com/junction-dataplane/junction/plugins/examples/internal/extest"
	"github.com/junction-dataplane/junction/plugins/examples/sampler"
	"github.com/junction-dataplane/junction/plugins/host"
)

// TestEndToEnd: pcap in → configs/plugins/flow-sampler.toml → out.pcap has
// every frame unchanged; sample.pcap, written by the plugin, has exactly
// the packets of the flows the hash picks (both directions), in order.
func TestEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the plugin and runs graphs through it: seconds")
	}
	dir := t.TempDir()
	bin := extest.Build(t, dir, "plugins/examples/sampler/cmd/sampler")
	var frames [][]byte
	var want []int
	for i := 0; i < 400; i++ {
		flow := i % 37
		src, dst, sp, dp := "10.0.0.1", "10.0.9.9", uint16(2000+flow), uint16(80)
		if i%2 == 1 { // the reply direction of the same flow
			src, dst, sp, dp = dst, src, dp, sp
		}
		f := extest.UDP(t, src, dst, sp, dp, []byte{byte(i), byte(i >> 8), 'x'})
		frames = append(frames, f)
		if sampler.FlowHash(f)%4 == 0 {
			want = append(want, i)
		}
	}
	if len(want) == 0 || len(want) == len(frames) {
		t.Fatalf("bad test traffic: %d of %d sampled", len(want), len(frames))
	}
	extest.WritePcap(t, filepath.Join(dir, "in.pcap"), frames)
	sample := filepath.Join(dir, "sample.pcap")
	graph := extest.Graph(t, dir, "flow-sampler.toml",
		// A generous per-batch timeout: the test is about what is sampled,
		// and a loaded machine must not turn a slow batch into a bypass.
		`path       = "./bin/sampler"`, `path = "`+bin+`"`+"\ntimeout = \"5s\"",
		`file = "sample.pcap"`, `file = "`+sample+`"`)
	g, err := pipeline.Load(graph)
	if err != nil {
		t.Fatal(err)
	}
	r, err := pipeline.Start(g, pipeline.Options{NoPin: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Wait(); err != nil {
		t.Fatal(err)
	}
	out := extest.ReadPcap(t, filepath.Join(dir, "out.pcap"))
	if len(out) != len(frames) {
		t.Fatalf("out.pcap: %d packets, want %d", len(out), len(frames))
	}
	for i, p := range out {
		if string(p.Data()) != string(frames[i]) {
			t.Fatalf("out.pcap packet %d changed", i)
		}
	}
	got := extest.ReadPcap(t, sample)
	if len(got) != len(want) {
		t.Fatalf("sample.pcap: %d packets, want %d", len(got), len(want))
	}
	dirs := map[bool]int{}
	for k, p := range got {
		udp, ok := p.Layer(layers.LayerTypeUDP).(*layers.UDP)
		if !ok {
			t.Fatalf("sample %d: no UDP layer", k)
		}
		i := want[k]
		if int(udp.Payload[0])|int(udp.Payload[1])<<8 != i {
			t.Fatalf("sample %d is packet %d, want %d", k, int(udp.Payload[0])|int(udp.Payload[1])<<8, i)
		}
		dirs[udp.DstPort == 80]++
	}
	if dirs[true] == 0 || dirs[false] == 0 {
		t.Errorf("flow sampling must take both directions: %v", dirs)
	}
}

func TestConfigErrors(t *testing.T) {
	for _, c := range []struct {
		cfg  sampler.Config
		want string
	}{
		{sampler.Config{N: 0, By: "packet", File: "x", Snaplen: 100}, `key "n"`},
		{sampler.Config{N: 1, By: "bytes", File: "x", Snaplen: 100}, `key "by"`},
		{sampler.Config{N: 1, By: "flow", Snaplen: 100}, `key "file"`},
		{sampler.Config{N: 1, By: "flow", File: "x", Snaplen: 10}, `key "snaplen"`},
	} {
		if err := c.cfg.Validate(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", c.cfg, err, c.want)
		}
	}
}

func TestMain(m *testing.M) {
	host.SetLog(os.Stderr)
	os.Exit(m.Run())
}
