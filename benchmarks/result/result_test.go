package result

import (
	"bytes"
	"strings"
	"testing"

	"github.com/junction-dataplane/junction/pipeline"
)

func TestRoundTrip(t *testing.T) {
	r := New("element DecTTL")
	r.Traffic = map[string]string{"size": "64"}
	r.Runs = []Run{{Name: "batch=64", Params: map[string]string{"batch": "64"}, Packets: 1000, Seconds: 0.001,
		NsPerPacket: 12.5, Mpps: 80, Elements: []Element{{Name: "bench", Type: "DecTTL", Packets: 1000, NsPerPacket: 3,
			Drops: map[string]uint64{"ttl expired": 2}}}}}
	var buf bytes.Buffer
	if err := r.Write(&buf); err != nil {
		t.Fatal(err)
	}
	got, err := Decode(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if got.Name != r.Name || got.Machine.Cores == 0 || got.Machine.Go == "" || len(got.Runs) != 1 ||
		got.Runs[0].Elements[0].Drops["ttl expired"] != 2 || got.Runs[0].Mpps != 80 {
		t.Errorf("decoded %+v", got)
	}
	if _, err := Decode(strings.NewReader(`{"schema":"other/1"}`)); err == nil {
		t.Error("a foreign schema decoded")
	}
	if _, err := Decode(strings.NewReader(`{"schema":"junction-bench/1","nme":"x"}`)); err == nil {
		t.Error("an unknown field decoded")
	}
}

func TestParseGoTest(t *testing.T) {
	out := `goos: linux
goarch: amd64
pkg: github.com/junction-dataplane/junction/benchmarks
cpu: Intel(R) Xeon(R) Processor
BenchmarkNATGraph/flows=10k/path=fast-2         	   20000	      3021 ns/op	        47.20 ns/pkt	        21.19 Mpps	         1.000 fast-share	       0 B/op	       0 allocs/op
BenchmarkOverhead/plugin/batch=64
    bench_test.go:12: a log line
BenchmarkOverhead/plugin/batch=64-2             	  100000	     152.0 ns/op
PASS
ok  	github.com/junction-dataplane/junction/benchmarks	3.2s
`
	runs, conf, err := ParseGoTest(strings.NewReader(out))
	if err != nil {
		t.Fatal(err)
	}
	if conf["cpu"] != "Intel(R) Xeon(R) Processor" || conf["pkg"] == "" {
		t.Errorf("config %v", conf)
	}
	if len(runs) != 2 {
		t.Fatalf("%d runs: %+v", len(runs), runs)
	}
	a := runs[0]
	if a.Name != "NATGraph/flows=10k/path=fast" || a.Params["flows"] != "10k" || a.Params["path"] != "fast" ||
		a.Params["procs"] != "2" || a.NsPerPacket != 47.2 || a.Mpps != 21.19 || a.Metrics["fast-share"] != 1 ||
		a.Metrics["allocs/op"] != 0 {
		t.Errorf("run 0: %+v", a)
	}
	b := runs[1]
	if _, ok := b.Params["plugin"]; !ok || b.Params["batch"] != "64" || b.NsPerPacket != 152 {
		t.Errorf("run 1: %+v", b)
	}
	if _, _, err := ParseGoTest(strings.NewReader("BenchmarkX-2 10 abc ns/op\n")); err == nil {
		t.Error("a non-numeric value parsed")
	}
}

func TestSummarize(t *testing.T) {
	s := Summarize([]float64{3, 1, 2, 10})
	if s.Median != 2.5 || s.Min != 1 || s.Max != 10 || s.N != 4 {
		t.Errorf("%+v", s)
	}
}

// TestElementDeltasConsumed: what an element consumed by design is kept
// apart from its drops, by reason, over the interval.
func TestElementDeltasConsumed(t *testing.T) {
	snap := func(drops, consumed uint64) *pipeline.Snapshot {
		return &pipeline.Snapshot{Elements: []pipeline.ElementStats{{Element: "d", Type: "Discard", Packets: drops + consumed,
			Counters: []pipeline.Counter{{Name: "bad", Drop: true, Value: drops}, {Name: "firewall", Consumed: true, Value: consumed}}}}}
	}
	es := ElementDeltas(snap(1, 10), snap(3, 40))
	if len(es) != 1 || es[0].Packets != 32 || len(es[0].Drops) != 1 || es[0].Drops["bad"] != 2 ||
		len(es[0].Consumed) != 1 || es[0].Consumed["firewall"] != 30 {
		t.Errorf("%+v", es)
	}
}
