package benchmarks

import (
	"fmt"
	"os"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/junction-dataplane/junction/pipeline"
)

// The same graph hand-written (configs/bench-l3.toml) and with compound
// elements (bench-l3-compound.toml): the compounds are flattened when the
// file is loaded, so both run the same elements.
var compoundPair = []struct{ name, file string }{
	{"hand-written", "../configs/bench-l3.toml"},
	{"compound", "bench-l3-compound.toml"},
}

func parseFile(t testing.TB, file string) *pipeline.Graph {
	src, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	g, err := pipeline.Parse(file, src)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// graphShape is every link as its two elements' types and keys and its
// ports, sorted: the graph without its element names.
func graphShape(g *pipeline.Graph) []string {
	var out []string
	for _, lk := range g.Links {
		f, t := g.Element(lk.From), g.Element(lk.To)
		out = append(out, fmt.Sprintf("%s%s[%d] -> [%d]%s%s", f.Type.Name, keys(f.Config), lk.FromPort, lk.ToPort, t.Type.Name, keys(t.Config)))
	}
	sort.Strings(out)
	return out
}

// keys writes a config's keys (its exported fields): what the file set.
func keys(cfg any) string {
	v := reflect.ValueOf(cfg)
	if !v.IsValid() || v.Kind() != reflect.Pointer || v.IsNil() {
		return "{}"
	}
	v = v.Elem()
	var b strings.Builder
	b.WriteString("{")
	for i := 0; i < v.NumField(); i++ {
		if f := v.Type().Field(i); f.IsExported() {
			fmt.Fprintf(&b, "%s:%#v ", f.Name, v.Field(i).Interface())
		}
	}
	b.WriteString("}")
	return b.String()
}

// TestCompoundFlattensToHandWritten: both files give the same elements,
// configs and links, but for the names; so the benchmark below compares
// like with like.
func TestCompoundFlattensToHandWritten(t *testing.T) {
	a, b := parseFile(t, compoundPair[0].file), parseFile(t, compoundPair[1].file)
	if len(a.Elements) != len(b.Elements) {
		t.Fatalf("%d elements hand-written, %d with compounds", len(a.Elements), len(b.Elements))
	}
	sa, sb := graphShape(a), graphShape(b)
	for i := range max(len(sa), len(sb)) {
		if i >= len(sa) || i >= len(sb) || sa[i] != sb[i] {
			t.Fatalf("link %d of %d differs:\nhand-written: %q\ncompound:     %q", i, len(sa), sa[min(i, len(sa)-1)], sb[min(i, len(sb)-1)])
		}
	}
}

// BenchmarkCompoundL3 steps both graphs on one worker, element timing off:
// ns/pkt (generator included) must be the same within noise.
func BenchmarkCompoundL3(b *testing.B) {
	for _, c := range compoundPair {
		b.Run(c.name, func(b *testing.B) {
			r, err := pipeline.Build(parseFile(b, c.file), pipeline.Options{Workers: 1, NoPin: true, TimingEvery: 1 << 30})
			if err != nil {
				b.Fatal(err)
			}
			defer r.Close()
			benchRounds(b, r)
		})
	}
}

// BenchmarkCompoundL3Interleaved steps both graphs in turns of 16 rounds
// (1,024 packets), the first of each turn alternating, and times each
// apart: on a loaded machine both see the same load, which the runs one
// after the other above do not. Reports each graph's ns/pkt and the ratio
// compound / hand-written.
func BenchmarkCompoundL3Interleaved(b *testing.B) {
	var rs [2]*pipeline.Router
	for i, c := range compoundPair {
		r, err := pipeline.Build(parseFile(b, c.file), pipeline.Options{Workers: 1, NoPin: true, TimingEvery: 1 << 30})
		if err != nil {
			b.Fatal(err)
		}
		defer r.Close()
		for range 10 {
			r.Round(0)
		}
		rs[i] = r
	}
	var elapsed [2]time.Duration
	var pkts [2]int
	turn := 0
	b.ReportAllocs()
	for b.Loop() {
		for k := range 2 {
			i := (turn + k) % 2
			t0 := time.Now()
			for range 16 {
				pkts[i] += rs[i].Round(0)
			}
			elapsed[i] += time.Since(t0)
		}
		turn++
	}
	nsPkt := func(i int) float64 { return float64(elapsed[i].Nanoseconds()) / float64(pkts[i]) }
	b.ReportMetric(nsPkt(0), "hand-ns/pkt")
	b.ReportMetric(nsPkt(1), "compound-ns/pkt")
	b.ReportMetric(nsPkt(1)/nsPkt(0), "ratio")
}
