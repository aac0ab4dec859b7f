package main

import (
	"bytes"
	"testing"

	"github.com/junction-dataplane/junction/benchmarks/result"
)

// TestBenchJSON: bench -json prints one object of the result schema, for
// an element and for a whole graph, with the element's figures in it.
func TestBenchJSON(t *testing.T) {
	for _, args := range [][]string{
		{"bench", "-element", "DecTTL", "-traffic", "size=64,flows=16", "-duration", "50ms", "-json"},
		{"bench", "-config", "../../configs/bench-l3.toml", "-duration", "50ms", "-json"},
	} {
		var out, errb bytes.Buffer
		if code := Main(args, &out, &errb); code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, errb.String())
		}
		r, err := result.Decode(&out)
		if err != nil {
			t.Fatalf("%v: %v\n%s", args, err, out.String())
		}
		if len(r.Runs) != 1 {
			t.Fatalf("%v: %d runs", args, len(r.Runs))
		}
		run := r.Runs[0]
		if run.Packets == 0 || run.Mpps <= 0 || run.NsPerPacket <= 0 || r.Machine.Cores == 0 || r.Machine.CPU == "" ||
			r.Machine.Kernel == "" || r.Traffic == nil {
			t.Errorf("%v: %+v", args, r)
		}
		want := map[string]string{"bench": "DecTTL"}
		if args[1] == "-config" {
			want = map[string]string{"rt": "IPLookup", "ttl": "DecTTL", "cls": "Classifier"}
		}
		for _, e := range run.Elements {
			if typ, ok := want[e.Name]; ok && e.Type == typ && e.Packets > 0 && e.NsPerPacket > 0 {
				delete(want, e.Name)
			}
		}
		if len(want) > 0 {
			t.Errorf("%v: elements without figures: %v (got %+v)", args, want, run.Elements)
		}
	}
}
