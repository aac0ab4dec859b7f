package main

import (
	_ "embed"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"

	"github.com/junction-dataplane/junction/drivers"
	_ "github.com/junction-dataplane/junction/drivers/all"
	"github.com/junction-dataplane/junction/elements"
	_ "github.com/junction-dataplane/junction/elements/all"
	"github.com/junction-dataplane/junction/internal/suggest"
	"github.com/junction-dataplane/junction/pipeline"
)

// defaultGraph is what `run`, `check` and `graph` use without -config.
//
//go:embed default.toml
var defaultGraph []byte

// defaultGraphName names the embedded graph in messages.
const defaultGraphName = "default.toml (embedded)"

func main() {
	os.Exit(Main(os.Args[1:], os.Stdout, os.Stderr))
}

const usage = `forwarder — Junction, a Click-style modular software router

Usage:
  forwarder run      [-config FILE] [-duration D] [-workers N] [-nopin] [-cpus LIST]
                     [-stats ADDR] [-stats-public] [-quiet] [-per-worker] [-control PATH]
  forwarder check    [-config FILE] [-strict] [-plugins]
  forwarder graph    [-config FILE] [-stats ADDR | -control PATH | -live] [-interval D]
                     [-format dot|svg|png] [-plain]
  forwarder elements [TYPE]
  forwarder drivers  [NAME]
  forwarder stats    [-addr ADDR] [-format table|json|prom] [-per-worker]
  forwarder bench    -element TYPE [-plugin PATH] [-set key=value ...] [-traffic gen-keys] [-batch N] [-duration D]
  forwarder bench    -config FILE [-duration D] [-json]
  forwarder routes   [-config FILE] [-element NAME] [ADDR ...]
  forwarder routes   -generate N [-generate6 M] [-seed S] [-nexthops K] [-ports P] [-ecmp F] [-default]
  forwarder show     [CONTROL] flows [-n N] [-count] [FILTER] | routes [-table NAME | -element NAME] [ADDR|PREFIX]
  forwarder show     [CONTROL] nat [-n N] [ADDR] | neighbors | interfaces [DEV...] | runtime [-workers] | errors [-workers] [-all]
  forwarder clear    [CONTROL] counters
  forwarder route    [CONTROL] add|replace PREFIX [via NH]... out PORT|DEVICE... | del PREFIX | reload [-table NAME | -element NAME]
  forwarder trace    [CONTROL] [-n N] [-timeout D] [FILTER]
  forwarder capture  [CONTROL] -element NAME [-port P] [-n N] [-timeout D] -w FILE.pcap [-force] [FILTER]
  forwarder reload   [CONTROL] [-dry-run] [-running FILE]
  forwarder features [-format table|json]
  forwarder completion bash|zsh|fish
  forwarder man      [-dir DIR] [COMMAND]
  forwarder version
  forwarder help     [COMMAND]

run       runs the graph (without -config: the embedded default graph, a router
          between two synthetic gen devices); prints a rate line every second
          and, on exit, the per-element table. Stops on Ctrl-C/SIGTERM, after
          -duration, or when every source is drained.
check     validates a graph as run would, short of starting it: "ok: N elements,
          M links, K devices" and warnings, or every error with its file:line.
          A Plugin's program is not executed unless -plugins is given.
graph     prints the graph in Graphviz DOT (forwarder graph | dot -Tsvg > g.svg), or
          renders it (-format svg|png, with Graphviz installed); -stats ADDR
          (or -control PATH, -live: its control socket) draws a running
          forwarder's rates, ns/packet and drops on it.
elements  lists the element types, or prints one type's manual.
drivers   lists the drivers, or prints one driver's manual.
stats     reads a running forwarder's stats endpoint (default ` + pipeline.DefaultStatsAddr + `).
bench     runs one element (built-in, compiled-in custom, or -plugin PATH) or a
          whole graph on synthetic traffic: ns/packet, Mpps, packets per port,
          allocations per packet.
routes    prints a graph's route tables: size, memory, and the route for ADDR.
show      reads a running forwarder's state over its control socket: tracked
          flows (filtered in Classifier's syntax), SNAT's endpoint mappings,
          routes, neighbours, interfaces with rates, the per-element runtime
          and error counters.
clear     clear counters: show runtime, errors and interfaces count from now.
route     adds, replaces or deletes a route of a running IPLookup, or re-reads
          its routes_file.
trace     follows the next N packets matching FILTER through the running graph:
          headers, elements passed, output ports, drop reasons.
capture   writes N packets leaving an element (or one of its ports) to a pcap.
reload    validates a graph file and switches the running forwarder to it
          without stopping (state of unchanged elements kept), or with -dry-run
          prints what would change (elements added/removed/replaced/kept with
          state, devices opened and closed, links). Without -config: the file
          it runs. SIGHUP does the same. -dry-run -running FILE compares two
          files offline, without a running forwarder.
features  probes the kernel features the drivers use: which this kernel has,
          and what Junction does without each.
completion prints a bash, zsh or fish completion script (written from the
          commands' flag sets).
man       prints forwarder's manual page, or COMMAND's, in roff (forwarder
          man run | man -l -); -dir DIR writes them all, forwarder.1 and
          forwarder-COMMAND.1 (written from the commands' flag sets).
version   prints the module version, VCS revision and Go version.

CONTROL stands for [-control PATH] [-config FILE] [-format table|json].
"forwarder help COMMAND" or "forwarder COMMAND -h" prints a command's flags.
Exit status: 0 done, 1 failed, 2 wrong usage.
`

// Main runs the forwarder command line and returns the exit status.
func Main(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	cmd, rest := args[0], args[1:]
	var err error
	switch cmd {
	case "run":
		err = runCmd(rest, stdout, stderr)
	case "check":
		err = checkCmd(rest, stdout, stderr)
	case "graph":
		err = graphCmd(rest, stdout, stderr)
	case "elements":
		err = elementsCmd(rest, stdout, stderr)
	case "drivers":
		err = driversCmd(rest, stdout, stderr)
	case "bench":
		err = benchCmd(rest, stdout, stderr)
	case "routes":
		err = routesCmd(rest, stdout, stderr)
	case "stats":
		err = statsCmd(rest, stdout, stderr)
	case "reload":
		err = reloadCmd(rest, stdout, stderr)
	case "show":
		err = showCmd(rest, stdout, stderr)
	case "clear":
		err = clearCmd(rest, stdout, stderr)
	case "route":
		err = routeCmd(rest, stdout, stderr)
	case "trace":
		err = traceCmd(rest, stdout, stderr)
	case "capture":
		err = captureCmd(rest, stdout, stderr)
	case "features":
		err = featuresCmd(rest, stdout, stderr)
	case "completion":
		err = completionCmd(rest, stdout, stderr)
	case "man":
		err = manCmd(rest, stdout, stderr)
	case "version":
		err = versionCmd(rest, stdout, stderr)
	case "help":
		return helpCmd(rest, stdout, stderr)
	case "-h", "-help", "--help":
		fmt.Fprint(stdout, usage)
		return 0
	default:
		msg := fmt.Sprintf("forwarder: unknown command %q", cmd)
		if s := nearest(cmd, commandNames); s != "" {
			msg += fmt.Sprintf(", did you mean %q?", s)
		}
		fmt.Fprintln(stderr, msg)
		fmt.Fprint(stderr, usage)
		return 2
	}
	switch {
	case err == nil:
		return 0
	case errors.Is(err, flag.ErrHelp):
		return 0
	case errors.Is(err, errUsage):
		return 2
	case isUsage(err):
		fmt.Fprintf(stderr, "forwarder %s: %v\n(forwarder help %s shows its usage)\n", cmd, err, cmd)
		return 2
	default:
		fmt.Fprintln(stderr, "forwarder "+cmd+": "+indentLines(err.Error()))
		return 1
	}
}

// errUsage marks an error already reported by the flag package.
var errUsage = errors.New("usage")

func newFlags(name string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("forwarder "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		writeCmdUsage(fs.Output(), name)
		var any bool
		fs.VisitAll(func(*flag.Flag) { any = true })
		if any {
			fmt.Fprintln(fs.Output(), "\nFlags:")
			fs.PrintDefaults()
		}
	}
	return fs
}

func parseFlags(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return errUsage
	}
	return nil
}

// loadGraph loads the -config file, or the embedded default graph.
func loadGraph(path string) (*pipeline.Graph, error) {
	if path == "" {
		return pipeline.Parse(defaultGraphName, defaultGraph)
	}
	return pipeline.Load(path)
}

// configArg takes the graph file from -config or from a single positional
// argument (forwarder check router.toml).
func configArg(fs *flag.FlagSet, config string) (string, error) {
	switch fs.NArg() {
	case 0:
		return config, nil
	case 1:
		if config != "" {
			return "", usageErrorf("both -config %s and %s given", config, fs.Arg(0))
		}
		return fs.Arg(0), nil
	default:
		return "", usageErrorf("unexpected arguments: %s", strings.Join(fs.Args(), " "))
	}
}

func graphCmd(args []string, stdout, stderr io.Writer) error {
	return graphLiveCmd(args, stdout, stderr)
}

// catalogue is what `forwarder elements` and `forwarder drivers` print
// from: a registry's index and its manual pages.
type catalogue struct {
	cmd     string // the subcommand
	what    string // "element type", "driver"
	index   func(w io.Writer) error
	page    func(w io.Writer, name string) (found bool, err error)
	suggest func(name string) string
}

// run is `forwarder CMD [NAME]`: the index, or NAME's manual page.
func (c catalogue) run(args []string, stdout, stderr io.Writer) error {
	fs := newFlags(c.cmd, stderr)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	args = fs.Args()
	switch len(args) {
	case 0:
		return c.index(stdout)
	case 1:
		found, err := c.page(stdout, args[0])
		if found {
			return err
		}
		msg := fmt.Sprintf("unknown %s %q", c.what, args[0])
		if s := c.suggest(args[0]); s != "" {
			msg += fmt.Sprintf(", did you mean %q?", s)
		}
		return fmt.Errorf("%s (forwarder %s lists them)", msg, c.cmd)
	default:
		return usageErrorf("one %s at a time, got %d", c.what, len(args))
	}
}

func elementsCmd(args []string, stdout, stderr io.Writer) error {
	return catalogue{cmd: "elements", what: "element type",
		index: func(w io.Writer) error {
			var types []*elements.Type
			for _, n := range elements.Names() {
				t, _ := elements.Lookup(n)
				types = append(types, t)
			}
			return elements.WriteIndex(w, types)
		},
		page: func(w io.Writer, name string) (bool, error) {
			t, ok := elements.Lookup(name)
			if !ok {
				return false, nil
			}
			return true, elements.WriteDoc(w, t)
		},
		suggest: elements.SuggestType,
	}.run(args, stdout, stderr)
}

func driversCmd(args []string, stdout, stderr io.Writer) error {
	return catalogue{cmd: "drivers", what: "driver",
		index: func(w io.Writer) error {
			var ds []*drivers.Driver
			for _, n := range drivers.Names() {
				d, _ := drivers.Lookup(n)
				ds = append(ds, d)
			}
			return drivers.WriteIndex(w, ds)
		},
		page: func(w io.Writer, name string) (bool, error) {
			d, ok := drivers.Lookup(name)
			if !ok {
				return false, nil
			}
			return true, drivers.WriteDoc(w, d)
		},
		suggest: func(name string) string { return nearest(name, drivers.Names()) },
	}.run(args, stdout, stderr)
}

// nearest returns the candidate closest to name (case-insensitive edit
// distance), if it is close enough to be a plausible typo.
func nearest(name string, candidates []string) string {
	sorted := append([]string(nil), candidates...)
	sort.Strings(sorted)
	return suggest.Nearest(name, sorted)
}

// indentLines puts a multi-line error (one config error per line) under
// its command prefix.
func indentLines(s string) string {
	if !strings.Contains(s, "\n") {
		return s
	}
	return "\n  " + strings.ReplaceAll(s, "\n", "\n  ")
}
