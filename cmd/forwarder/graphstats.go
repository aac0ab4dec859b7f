package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"sort"
	"strings"
	"time"

	"github.com/junction-dataplane/junction/pipeline"
)

const graphUsage = `usage: forwarder graph [-config FILE] [-stats ADDR [-interval D]] [-format dot|svg|png] [-plain]

Draws the graph: top to bottom, devices named on their FromDevice and
ToDevice boxes, Classifier outputs labelled with their rules. With -stats
ADDR (a running forwarder's stats endpoint, as given to forwarder run
-stats), the counters over -interval are drawn on it: packets/s on each
element and link (pen width), sampled ns/packet as the element's fill
colour, drops by reason on the element. A link's rate is derived from its
elements' counters ("?" where they do not settle it).
-format svg or png runs Graphviz's dot (without it: DOT, and a note on
stderr); dot prints
the DOT text (forwarder graph | dot -Tsvg > g.svg). -plain prints the
unlabelled left-to-right DOT of earlier versions.

Flags:
`

func graphLiveCmd(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("graph", stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, graphUsage)
		fs.PrintDefaults()
	}
	config := fs.String("config", "", "graph file (default: the embedded default graph)")
	stats := fs.String("stats", "", "stats endpoint of a forwarder running this graph: draw its counters")
	interval := fs.Duration("interval", time.Second, "with -stats: the interval the rates are measured over (0: averages since start)")
	format := fs.String("format", "dot", "dot, svg or png (svg and png need Graphviz's dot)")
	plain := fs.Bool("plain", false, "the plain DOT (every port labelled, device nodes, left to right)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	path, err := configArg(fs, *config)
	if err != nil {
		return err
	}
	if *format != "dot" && *format != "svg" && *format != "png" {
		return fmt.Errorf("-format must be dot, svg or png, got %q", *format)
	}
	if *plain && *stats != "" {
		return errors.New("-plain draws no counters: drop -plain or -stats")
	}
	if *interval < 0 {
		return errors.New("-interval must not be negative")
	}
	dotBin := ""
	if *format != "dot" {
		if dotBin, err = exec.LookPath("dot"); err != nil {
			// DOT, which any Graphviz renders later, rather than nothing.
			fmt.Fprintf(stderr, "forwarder graph: -format %s needs Graphviz's dot, which is not installed (apt-get install graphviz): printing DOT instead\n", *format)
			dotBin = ""
		}
	}
	g, err := loadGraph(path)
	if err != nil {
		return err
	}
	var text string
	switch {
	case *plain:
		text = g.DOT()
	case *stats != "":
		st, err := liveStats(g, *stats, *interval)
		if err != nil {
			return err
		}
		text = pipeline.LabelledDOT(g, st)
	default:
		text = pipeline.LabelledDOT(g, nil)
	}
	if dotBin == "" {
		_, err = io.WriteString(stdout, text)
		return err
	}
	cmd := exec.Command(dotBin, "-T"+*format)
	cmd.Stdin = bytes.NewReader([]byte(text))
	cmd.Stdout = stdout
	var errb bytes.Buffer
	cmd.Stderr = &errb
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("dot -T%s: %v\n%s", *format, err, errb.String())
	}
	return nil
}

// liveStats reads the endpoint twice, interval apart, and checks that it
// is serving this graph.
func liveStats(g *pipeline.Graph, addr string, interval time.Duration) (*pipeline.LiveStats, error) {
	var before *pipeline.Snapshot
	if interval > 0 {
		s, err := pipeline.FetchSnapshot(addr)
		if err != nil {
			return nil, err
		}
		before = s
		time.Sleep(interval)
	}
	after, err := pipeline.FetchSnapshot(addr)
	if err != nil {
		return nil, err
	}
	// The same graph: the same element names, and the same types.
	want := map[string]string{}
	for _, e := range g.Elements {
		if e.Type != nil {
			want[e.Name] = e.Type.Name
		}
	}
	var foreign []string
	running := map[string]bool{}
	for _, e := range after.Elements {
		if running[e.Element] {
			continue // another worker's
		}
		running[e.Element] = true
		if typ, ok := want[e.Element]; !ok || typ != e.Type {
			foreign = append(foreign, e.Element+" ("+e.Type+")")
		}
	}
	for name := range want {
		if !running[name] {
			foreign = append(foreign, name+" (not running)")
		}
	}
	if len(foreign) > 0 {
		sort.Strings(foreign)
		if len(foreign) > 5 {
			foreign = append(foreign[:5], "…")
		}
		return nil, fmt.Errorf("the forwarder at %s runs another graph than %s: %s", addr, g.File, strings.Join(foreign, ", "))
	}
	return &pipeline.LiveStats{Before: before, After: after, Source: addr}, nil
}
