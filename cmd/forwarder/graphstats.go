package main

import (
	"bytes"
	"fmt"
	"io"
	"os/exec"
	"sort"
	"strings"
	"time"

	"github.com/junction-dataplane/junction/pipeline"
	"github.com/junction-dataplane/junction/pipeline/livedot"
	"github.com/junction-dataplane/junction/pipeline/statshttp"
)

const graphUsage = `usage: forwarder graph [-config FILE] [-stats ADDR | -control PATH | -live] [-interval D] [-format dot|svg|png] [-plain]

Draws the graph: top to bottom, devices named on their FromDevice and
ToDevice boxes, Classifier outputs labelled with their rules. With the
counters of a forwarder running this graph, read over -interval, drawn on
it: packets/s on each element and link (pen width), sampled ns/packet as
the element's fill colour, drops by reason on the element. A link's rate
is derived from its elements' counters ("?" where they do not settle it).
The counters come from its stats endpoint (-stats ADDR, as given to
forwarder run -stats) or from its control socket: -control PATH, or -live
for the default socket, as the control client commands find it
(/run/junction/<config name>.sock, named by -config; without -config the
only socket there). With -control or -live and no -config, the graph
drawn is the one the forwarder runs (the file it last loaded, as loaded),
drawn by the forwarder itself.
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
	ctl := fs.String("control", "", "control socket of a forwarder running this graph: draw its counters")
	live := fs.Bool("live", false, "draw the counters of the forwarder running this graph, read over its default control socket (the one -config names)")
	interval := fs.Duration("interval", time.Second, "with -stats, -control or -live: the interval the rates are measured over (0: averages since start)")
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
		return usageErrorf("-format must be dot, svg or png, got %q", *format)
	}
	sources := 0
	for _, given := range []bool{*stats != "", *ctl != "", *live} {
		if given {
			sources++
		}
	}
	if sources > 1 {
		fmt.Fprintln(stderr, "forwarder graph: -stats, -control and -live each choose where the counters come from: give one")
		return errUsage
	}
	if *plain && sources > 0 {
		return usageErrorf("-plain draws no counters: drop -plain, or -stats, -control and -live")
	}
	if *interval < 0 {
		return usageErrorf("-interval must not be negative")
	}
	dotBin := ""
	if *format != "dot" {
		if dotBin, err = exec.LookPath("dot"); err != nil {
			// DOT, which any Graphviz renders later, rather than nothing.
			fmt.Fprintf(stderr, "forwarder graph: -format %s needs Graphviz's dot, which is not installed (apt-get install graphviz): printing DOT instead\n", *format)
			dotBin = ""
		}
	}
	if path == "" && (*ctl != "" || *live) {
		// No file named: the forwarder draws the graph it runs.
		sock := *ctl
		if sock == "" {
			sock = defaultSocket("")
		}
		res, err := controlGraph(sock, *interval)
		if err != nil {
			return err
		}
		return writeGraph(stdout, res.DOT, dotBin, *format)
	}
	defer withoutPlugins()()
	g, err := loadGraph(path)
	if err != nil {
		return err
	}
	var text string
	switch {
	case *plain:
		text = g.DOT()
	case sources > 0:
		src, fetch := *stats, func() (*pipeline.Snapshot, error) { return statshttp.Fetch(*stats) }
		if *stats == "" {
			sock := *ctl
			if sock == "" {
				sock = defaultSocket(path)
			}
			src, fetch = sock, func() (*pipeline.Snapshot, error) { return controlSnapshot(sock) }
		}
		st, err := liveStats(g, src, fetch, *interval)
		if err != nil {
			return err
		}
		text = livedot.DOT(g, st)
	default:
		text = livedot.DOT(g, nil)
	}
	return writeGraph(stdout, text, dotBin, *format)
}

// writeGraph writes DOT text, or with dotBin what Graphviz's dot makes of
// it in format.
func writeGraph(stdout io.Writer, text, dotBin, format string) error {
	if dotBin == "" {
		_, err := io.WriteString(stdout, text)
		return err
	}
	cmd := exec.Command(dotBin, "-T"+format)
	cmd.Stdin = bytes.NewReader([]byte(text))
	cmd.Stdout = stdout
	var errb bytes.Buffer
	cmd.Stderr = &errb
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("dot -T%s: %v\n%s", format, err, errb.String())
	}
	return nil
}

// liveStats reads the counters twice, interval apart, with fetch (from
// the stats endpoint or the control socket addr), and checks that they
// are this graph's.
func liveStats(g *pipeline.Graph, addr string, fetch func() (*pipeline.Snapshot, error), interval time.Duration) (*livedot.Stats, error) {
	var before *pipeline.Snapshot
	if interval > 0 {
		s, err := fetch()
		if err != nil {
			return nil, err
		}
		before = s
		time.Sleep(interval)
	}
	after, err := fetch()
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
		hint := ""
		if f := after.Graph.File; f != "" && f != g.File {
			// What to give instead: the file it runs, or nothing (over
			// the control socket, without -config, it draws its own).
			hint = fmt.Sprintf(" (it runs %s: give -config with that file, or -control SOCKET without -config to draw the graph it runs)", f)
		}
		return nil, fmt.Errorf("the forwarder at %s runs another graph than %s: %s%s", addr, g.File, strings.Join(foreign, ", "), hint)
	}
	return &livedot.Stats{Before: before, After: after, Source: addr}, nil
}
