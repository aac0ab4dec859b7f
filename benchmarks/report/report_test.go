package main

import (
	"bytes"
	"encoding/xml"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/junction-dataplane/junction/benchmarks/result"
)

// TestQuickReport runs the report with -quick into a temporary directory
// and checks that every result decodes (schema, machine, runs with
// figures) and that every plot whose result exists was written as a
// non-empty SVG that parses as XML. It checks that the report builds, not
// its numbers.
func TestQuickReport(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the benchmarks for about a minute")
	}
	dir := t.TempDir()
	var log bytes.Buffer
	if err := run([]string{"-quick", "-e2e", "no", "-out", dir}, &log); err != nil {
		t.Fatalf("%v\n%s", err, log.String())
	}
	for _, name := range []string{"l3-workers", "lookup-dests", "nat-flows", "plugin-batch"} {
		r, err := result.ReadFile(filepath.Join(dir, "results", name+".json"))
		if err != nil {
			t.Fatal(err)
		}
		if r.Name != name || r.Machine.CPU == "" || r.Machine.Cores == 0 || len(r.Runs) == 0 {
			t.Errorf("%s: %+v", name, r)
		}
		for _, run := range r.Runs {
			if run.Mpps <= 0 && run.NsPerPacket <= 0 {
				t.Errorf("%s: run %s without a rate: %+v", name, run.Name, run)
			}
		}
	}
	n := 0
	for _, p := range plots {
		if _, err := os.Stat(filepath.Join(dir, "results", p.result+".json")); err != nil {
			continue
		}
		n++
		path := filepath.Join(dir, "plots", p.file)
		b, err := os.ReadFile(path)
		if err != nil {
			t.Error(err)
			continue
		}
		if len(b) == 0 {
			t.Errorf("%s: empty", p.file)
			continue
		}
		if err := wellFormed(b); err != nil {
			t.Errorf("%s: not XML: %v", p.file, err)
		}
	}
	if n < 6 {
		t.Errorf("%d plots drawn, want at least 6", n)
	}
}

func wellFormed(b []byte) error {
	d := xml.NewDecoder(bytes.NewReader(b))
	root := ""
	for {
		tok, err := d.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
		if se, ok := tok.(xml.StartElement); ok && root == "" {
			root = se.Name.Local
		}
	}
	if root != "svg" {
		return io.ErrUnexpectedEOF
	}
	return nil
}

// TestPlotsFromResults draws every plot from hand-made results, the
// end-to-end ones included (which the quick run does not produce).
func TestPlotsFromResults(t *testing.T) {
	dir := t.TempDir()
	res, plotsDir := filepath.Join(dir, "results"), filepath.Join(dir, "plots")
	os.MkdirAll(res, 0o755)
	os.MkdirAll(plotsDir, 0o755)
	write := func(name string, runs []result.Run, traffic map[string]string) {
		r := result.New(name)
		r.Description = name + " test; second part"
		r.Traffic = traffic
		r.Runs = runs
		if err := r.WriteFile(filepath.Join(res, name+".json")); err != nil {
			t.Fatal(err)
		}
	}
	el := []result.Element{{Name: "rt", Type: "IPLookup", Packets: 10, NsPerPacket: 5}, {Name: "FromDevice@1", Type: "FromDevice", Packets: 10, NsPerPacket: 9}}
	var l3, look, nat, plug, e2e []result.Run
	for rep := 0; rep < 3; rep++ {
		f := float64(rep)
		for _, w := range []string{"1", "2"} {
			l3 = append(l3, result.Run{Name: "workers=" + w, Params: map[string]string{"workers": w}, Mpps: 20 + f, Elements: el})
		}
		for _, d := range []string{"1", "1000", "1000000"} {
			look = append(look, result.Run{Name: d, Params: map[string]string{"destinations": d}, Mpps: 21 + f})
		}
		for _, fl := range []string{"1000", "10000"} {
			for _, p := range []string{"slow", "fast"} {
				nat = append(nat, result.Run{Name: fl + p, Params: map[string]string{"flows": fl, "path": p}, Mpps: 10 + f, Elements: el})
			}
		}
		for _, b := range []string{"1", "64"} {
			for _, wh := range []string{"inprocess", "plugin"} {
				plug = append(plug, result.Run{Name: b + wh, Params: map[string]string{"batch": b, "where": wh}, NsPerPacket: 100 + f})
			}
		}
		e2e = append(e2e, result.Run{Name: "linux", Mpps: 0.6 + f/10}, result.Run{Name: "junction", Mpps: 0.3 + f/10})
	}
	write("l3-workers", l3, nil)
	write("lookup-dests", look, map[string]string{"prefixes": "1000000"})
	write("nat-flows", nat, nil)
	write("plugin-batch", plug, nil)
	write("e2e-router", e2e, nil)
	write("e2e-nat", e2e, nil)
	var tcp []result.Run
	for rep := 0; rep < 3; rep++ {
		for _, cfg := range []string{"router", "nat"} {
			for _, c := range []string{"p1", "p1-R", "p8", "p8-R"} {
				for i, fwd := range []string{"linux", "junction"} {
					tcp = append(tcp, result.Run{Name: cfg + "/" + fwd + "/" + c, Params: map[string]string{"config": cfg, "forwarder": fwd, "case": c},
						Metrics: map[string]float64{"Mbit/s": 4000 + 1000*float64(i+rep), "retransmits": 3}})
				}
			}
		}
	}
	write("e2e-tcp", tcp, map[string]string{"runs": "3", "duration": "3"})
	var log bytes.Buffer
	if err := renderPlots(res, plotsDir, false, &log); err != nil {
		t.Fatalf("%v\n%s", err, log.String())
	}
	for _, p := range plots {
		b, err := os.ReadFile(filepath.Join(plotsDir, p.file))
		if err != nil {
			t.Error(err)
			continue
		}
		if err := wellFormed(b); err != nil || len(b) < 1000 {
			t.Errorf("%s: %d bytes, %v", p.file, len(b), err)
		}
	}
}
