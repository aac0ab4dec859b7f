package pipeline

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

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
		g, err := Parse("f.toml", data)
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
