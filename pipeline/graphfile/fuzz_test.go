package graphfile

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/BurntSushi/toml"

	"github.com/junction-dataplane/junction/packet"
)

// FuzzParse feeds whole files to Parse: it must never panic, and it returns
// either a graph that holds together or no graph and located errors.
func FuzzParse(f *testing.F) {
	f.Add([]byte(validGraph))
	f.Add([]byte(dev + "[graph]\nlinks = [" + okLink + "]\n"))
	seeds, _ := filepath.Glob("testdata/bad/*.toml")
	for _, path := range seeds {
		if data, err := os.ReadFile(path); err == nil {
			f.Add(data)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		g, err := parseBudget(t, data)
		if err != nil {
			if g != nil {
				t.Fatal("a graph together with an error")
			}
			list, ok := err.(ErrorList)
			if !ok || len(list) == 0 {
				t.Fatalf("error %T %v, want a non-empty ErrorList", err, err)
			}
			lines := bytes.Count(data, []byte("\n")) + 1
			for _, e := range list {
				if e.Pos.File != "f.toml" || e.Pos.Line < 1 || e.Pos.Line > lines {
					t.Fatalf("error without a valid location (file has %d lines): %v", lines, e)
				}
			}
			return
		}
		if g == nil {
			t.Fatal("neither a graph nor an error")
		}
		checkGraph(t, g)
	})
}

// parseBudget parses data as "f.toml" and fails if that takes more than
// fuzzTime plus fuzzTimePerByte per input byte or allocates more than
// fuzzAlloc plus fuzzAllocPerByte per input byte: the loader's cost must
// follow the size of its input.
func parseBudget(t *testing.T, data []byte) (*Graph, error) {
	t.Helper()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	start := time.Now()
	g, err := Parse("f.toml", data)
	took := time.Since(start)
	runtime.ReadMemStats(&after)
	if max := fuzzTime + fuzzTimePerByte*time.Duration(len(data)); took > max {
		t.Fatalf("Parse of %d bytes took %v (budget %v)", len(data), took, max)
	}
	if a, max := after.TotalAlloc-before.TotalAlloc, fuzzAlloc+fuzzAllocPerByte*uint64(len(data)); a > max {
		t.Fatalf("Parse of %d bytes allocated %d KB (budget %d KB)", len(data), a>>10, max>>10)
	}
	return g, err
}

// The budget of one fuzz input: generous for a loaded machine and the
// race detector, far below what an unbounded loader takes on the inputs
// FuzzParseLimits builds (minutes, gigabytes). A file of short keys is the
// costliest per byte: the TOML decoder alone allocates about 80 bytes per
// input byte for it, the whole load about 150 (100,000 keys: 130 MB, 0.9 s;
// 6.5 s for 131,000 keys under the fuzzer's instrumentation on a loaded
// machine). A depth bomb of 12 KB took minutes.
const (
	fuzzTime         = 2 * time.Second
	fuzzTimePerByte  = 10 * time.Microsecond
	fuzzAlloc        = 64 << 20
	fuzzAllocPerByte = 256
)

// FuzzParseLimits explores depth and size, which byte mutations of small
// files rarely reach: the fuzzer picks a shape, a size n and a fragment,
// and the test builds a file nesting or repeating to that size. Beyond
// every limit the error must be the limit's; within them, never a limit
// error; and always within the time and memory budget. A non-empty
// fragment is appended as a line of its own, for syntax around the shapes
// (then only the budget and located, bounded errors are checked).
func FuzzParseLimits(f *testing.F) {
	for _, seed := range []struct {
		shape uint8
		n     uint32
		frag  string
	}{
		{0, 3000, ""}, {0, 10000, ""}, {0, MaxDepth - 3, ""}, {0, MaxDepth - 2, ""},
		{1, 100000, ""}, {1, MaxDepth - 3, ""}, {1, MaxDepth - 2, ""},
		{2, 10000, ""}, {2, MaxDepth - 3, ""}, {2, MaxDepth - 2, ""},
		{3, 10000, ""}, {3, MaxDepth - 2, ""}, {3, MaxDepth - 1, ""},
		{4, 10 << 20, ""}, {4, MaxStringLen - 2, ""}, {4, MaxStringLen - 1, ""},
		{5, 70000, ""}, {5, MaxArrayLen, ""}, {5, MaxArrayLen + 1, ""},
		{6, 300000, ""}, {6, 1000, ""},
		{0, 40, `y = [{a = 1}, [2], "s"]`}, {1, 31, "[elements.y]\nz = '''\n]]]\n'''"},
	} {
		f.Add(seed.shape, seed.n, seed.frag)
	}
	f.Fuzz(func(t *testing.T, shape uint8, n uint32, frag string) {
		n = min(n, 1<<21) // the file stays under a few MB before the fragment
		src, limit, beyond := limitShape(shape, int(n))
		if frag != "" {
			src += "\n" + frag + "\n"
		}
		g, err := parseBudget(t, []byte(src))
		if err == nil {
			if frag == "" && beyond {
				t.Fatalf("shape %d, n %d: beyond %s, but loaded", shape, n, limit)
			}
			checkGraph(t, g)
			return
		}
		list, ok := err.(ErrorList)
		if !ok || len(list) == 0 {
			t.Fatalf("error %T %v, want a non-empty ErrorList", err, err)
		}
		lines := strings.Count(src, "\n") + 1
		for _, e := range list {
			if e.Pos.File != "f.toml" || e.Pos.Line < 1 || e.Pos.Line > lines {
				t.Fatalf("error without a valid location (file has %d lines): %.300s", lines, e)
			}
			if len(e.Error()) > 2*maxMsg {
				t.Fatalf("error of %d bytes: %.300s", len(e.Error()), e)
			}
		}
		if frag != "" {
			return
		}
		// Beyond one limit, another may be met first (10,000 dotted
		// parts are also a word longer than MaxStringLen; 2M braces a
		// file larger than MaxFileSize): any limit's error will do.
		if got := strings.Contains(list.Error(), "(Max"); got != beyond {
			t.Fatalf("shape %d, n %d: beyond %s: %v; errors:\n%.1000s", shape, n, limit, beyond, list.Error())
		}
	})
}

// limitShape builds a graph with one value of the given shape and size n,
// and says which limit it concerns and whether n exceeds it.
func limitShape(shape uint8, n int) (src, limit string, beyond bool) {
	head := dev + "[graph]\nlinks = [" + okLink + "]\n[elements.x]\ntype = \"TestLdKinds\"\n"
	switch shape % 7 {
	case 0: // [elements.x] z = {a={a=...1...}}: 3 + n levels
		return head + "z = " + strings.Repeat("{a=", n) + "1" + strings.Repeat("}", n) + "\n", "MaxDepth", 3+n > MaxDepth
	case 1: // z = [[[...1...]]]
		return head + "z = " + strings.Repeat("[", n) + "1" + strings.Repeat("]", n) + "\n", "MaxDepth", 3+n > MaxDepth
	case 2: // z.a.a.a... = 1
		return head + "z" + strings.Repeat(".a", n) + " = 1\n", "MaxDepth", 3+n > MaxDepth
	case 3: // [elements.x.a.a...]
		return head + "[elements.x" + strings.Repeat(".a", n) + "]\n", "MaxDepth", 2+n > MaxDepth
	case 4: // s = 'xxx...' (n bytes between the quotes)
		return head + "s = '" + strings.Repeat("x", n) + "'\n", "MaxStringLen", n+2 > MaxStringLen
	case 5: // ii = [1,1,...] (n items)
		return head + "ii = [" + strings.Repeat("1,", n) + "]\n", "MaxArrayLen", n > MaxArrayLen
	default: // n keys k0..kn-1 in a table of their own
		var b strings.Builder
		b.WriteString(head + "[elements.y]\n")
		for i := range n {
			fmt.Fprintf(&b, "k%d=1\n", i)
		}
		// driver, links, its one item and type count too.
		return b.String(), "MaxValues", n+4 > MaxValues
	}
}

// checkGraph checks the invariants of a valid graph.
func checkGraph(t *testing.T, g *Graph) {
	t.Helper()
	if g.Batch < 1 || g.Batch > packet.MaxBatch || g.Workers < 0 {
		t.Fatalf("batch %d workers %d", g.Batch, g.Workers)
	}
	if len(g.Elements) == 0 || len(g.Links) == 0 {
		t.Fatal("a valid graph without elements or links")
	}
	for i, d := range g.Devices {
		if d.Index != i || d.Driver == nil {
			t.Fatalf("device %d: %+v", i, d)
		}
	}
	names := map[string]bool{}
	for _, e := range g.Elements {
		if names[e.Name] || e.Type == nil {
			t.Fatalf("element %q duplicated or without a type", e.Name)
		}
		names[e.Name] = true
	}
	for _, l := range g.Links {
		from, to := g.Element(l.From), g.Element(l.To)
		if from == nil || to == nil || l.FromPort >= from.Out || l.ToPort >= to.In {
			t.Fatalf("bad link %+v", l)
		}
	}
	_ = g.DOT()
}

// FuzzLinks feeds one link string to the link parser and, inside a graph
// file, to Parse.
func FuzzLinks(f *testing.F) {
	for _, s := range []string{
		"TestLdSource(d) -> TestLdSink(d)",
		"TestLdSource(d) -> f :: TestLdFilter(some, 5)[1] -> [0]TestLdSink(d)",
		"TestLdSource(d) -> r :: TestLdRules((tcp or udp) and dst port 53, \"a, b\", -) -> TestLdSink(d)",
		"a[1] -> [0]b -> c",
		"j :: TestLdJoin",
		"TestLdSource(d) -> [0]j :: TestLdJoin -> [1]j",
		`Print("a \" ) b") -> Discard`,
		"a[99999999999] -> b",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		chain, err := parseLink(s)
		if err != nil {
			if chain != nil {
				t.Fatal("a chain together with an error")
			}
		} else {
			if len(chain) == 0 {
				t.Fatal("no endpoints and no error")
			}
			for _, ep := range chain {
				if ep.Name == "" || ep.InPort > maxPort || ep.OutPort > maxPort || ep.Decl != (ep.Type != "") {
					t.Fatalf("bad endpoint %+v", ep)
				}
				for _, a := range ep.Args {
					if a == "" || strings.TrimSpace(a) != a {
						t.Fatalf("bad argument %q", a)
					}
				}
			}
		}
		var b bytes.Buffer
		b.WriteString(dev)
		if err := toml.NewEncoder(&b).Encode(map[string]any{"graph": map[string]any{"links": []string{s}}}); err != nil {
			return // not representable in TOML (e.g. invalid UTF-8)
		}
		g, err := Parse("f.toml", b.Bytes())
		if (err == nil) == (g == nil) {
			t.Fatalf("Parse = %v, %v: want exactly one of them", g, err)
		}
		if g != nil {
			checkGraph(t, g)
		}
	})
}
