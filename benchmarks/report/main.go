package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/junction-dataplane/junction/benchmarks/result"
)

type options struct {
	quick, verbose bool
	root           string // the repository
	out            string // where results/ and plots/ go
	tmp            string
	reps           int
	window         time.Duration
	e2e            bool
	// machine is taken once, before the report writes its results into
	// the tree (which would mark every later result's commit modified).
	machine result.Machine
}

func main() {
	if err := run(os.Args[1:], os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "report:", err)
		os.Exit(1)
	}
}

func run(args []string, log io.Writer) error {
	fs := flag.NewFlagSet("report", flag.ContinueOnError)
	fs.SetOutput(log)
	var o options
	fs.BoolVar(&o.quick, "quick", false, "small sizes and short windows (under 2 minutes; for CI: checks that the report builds, not its numbers)")
	png := fs.Bool("png", false, "also write each plot as PNG (to look at without a browser)")
	plotsOnly := fs.Bool("plots", false, "only redraw the plots from the JSON in -out/results")
	fs.StringVar(&o.out, "out", "", "directory for results/ and plots/ (default: the repository's benchmarks/)")
	fs.IntVar(&o.reps, "reps", 0, "rounds: measurements of each variant (default 5, -quick 3)")
	fs.DurationVar(&o.window, "window", 0, "length of a measurement window (default 1s, -quick 150ms)")
	e2e := fs.String("e2e", "auto", "run the end-to-end comparisons against Linux: auto (as root, not -quick), yes, no")
	fs.BoolVar(&o.verbose, "v", true, "progress on stderr")
	only := fs.String("only", "", "run only this measurement (l3-workers, lookup-dests, nat-flows, plugin-batch, e2e-router, e2e-nat, e2e-tcp), keep the other results")
	if err := fs.Parse(args); err != nil {
		return err
	}
	root, err := repoRoot()
	if err != nil {
		return err
	}
	o.root = root
	o.machine = result.ThisMachine()
	if o.out == "" {
		o.out = filepath.Join(root, "benchmarks")
	}
	if o.reps == 0 {
		o.reps = map[bool]int{false: 5, true: 3}[o.quick]
	}
	if o.window == 0 {
		o.window = map[bool]time.Duration{false: time.Second, true: 150 * time.Millisecond}[o.quick]
	}
	switch *e2e {
	case "auto":
		o.e2e = os.Geteuid() == 0 && !o.quick
	case "yes":
		o.e2e = true
	case "no":
	default:
		return fmt.Errorf("-e2e %q: want auto, yes or no", *e2e)
	}
	resDir, plotDir := filepath.Join(o.out, "results"), filepath.Join(o.out, "plots")
	for _, d := range []string{resDir, plotDir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	if !*plotsOnly {
		o.tmp, err = os.MkdirTemp("", "junction-report")
		if err != nil {
			return err
		}
		defer os.RemoveAll(o.tmp)
		steps := []struct {
			name string
			f    func() (*result.Result, error)
		}{
			{"l3-workers", o.l3Workers},
			{"lookup-dests", o.lookupDests},
			{"nat-flows", o.natFlows},
			{"plugin-batch", o.pluginBatch},
		}
		if o.e2e {
			steps = append(steps,
				struct {
					name string
					f    func() (*result.Result, error)
				}{"e2e-router", func() (*result.Result, error) { return o.e2eScript("e2e-router") }},
				struct {
					name string
					f    func() (*result.Result, error)
				}{"e2e-nat", func() (*result.Result, error) { return o.e2eScript("e2e-nat") }},
				struct {
					name string
					f    func() (*result.Result, error)
				}{"e2e-tcp", func() (*result.Result, error) { return o.e2eScript("e2e-tcp", e2eTCPEnv...) }})
		}
		known := false
		for _, s := range steps {
			if *only != "" && s.name != *only {
				continue
			}
			known = true
			t0 := time.Now()
			if o.verbose {
				fmt.Fprintf(log, "%s...\n", s.name)
			}
			r, err := s.f()
			if err != nil {
				return fmt.Errorf("%s: %w", s.name, err)
			}
			// The load is each result's own; the build is the report's.
			r.Machine.Commit, r.Machine.Modified = o.machine.Commit, o.machine.Modified
			if err := r.WriteFile(filepath.Join(resDir, s.name+".json")); err != nil {
				return err
			}
			if o.verbose {
				fmt.Fprintf(log, "%s: %d runs in %v\n", s.name, len(r.Runs), time.Since(t0).Round(time.Millisecond))
			}
		}
		if !known {
			return fmt.Errorf("-only %q: no such measurement here (the e2e ones need root and no -quick)", *only)
		}
	}
	if err := renderPlots(resDir, plotDir, *png, log); err != nil {
		return err
	}
	if o.verbose {
		return writeSummary(resDir, log)
	}
	return nil
}

func (o *options) newResult(name, desc string) *result.Result {
	r := result.New(name)
	r.Description = desc
	r.Command = "go run ./benchmarks/report"
	if o.quick {
		r.Command += " -quick"
		r.Description += " (-quick: reduced sizes)"
	}
	r.Description += fmt.Sprintf("; %d rounds of one %v window per variant", o.reps, o.window)
	return r
}

// repoRoot walks up from the working directory to the module's go.mod.
func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		b, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && bytes.Contains(b, []byte("module github.com/junction-dataplane/junction\n")) {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("not inside the junction repository (no go.mod of github.com/junction-dataplane/junction above the working directory)")
		}
		dir = parent
	}
}

// pluginBatch runs plugins/host's BenchmarkOverhead (DecTTL in process and
// in a plugin, batch 1..256) with go test and converts its output.
func (o *options) pluginBatch() (*result.Result, error) {
	benchtime, count := "300ms", o.reps
	if o.quick {
		benchtime = "30ms"
	}
	args := []string{"test", "./plugins/host", "-run", "^$", "-bench", "^BenchmarkOverhead$", "-benchtime", benchtime,
		"-count", fmt.Sprint(count)}
	cmd := exec.Command("go", args...)
	cmd.Dir = o.root
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("go %s: %v\n%s%s", strings.Join(args, " "), err, out.String(), errb.String())
	}
	runs, _, err := result.ParseGoTest(&out)
	if err != nil {
		return nil, err
	}
	if len(runs) == 0 {
		return nil, fmt.Errorf("go %s: no benchmark results in\n%s", strings.Join(args, " "), out.String())
	}
	r := result.New("plugin-batch")
	r.Description = "DecTTL compiled in (inprocess) and in a plugin process (sdk.Builtin in plugins/host/testdata/faulty), " +
		"64-byte frames, by batch size; the element test harness's refill, the element and a sink; ns/op is ns per packet"
	r.Command = "go " + strings.Join(args, " ")
	r.Traffic = map[string]string{"size": "64", "proto": "udp"}
	for i := range runs {
		for _, p := range []string{"inprocess", "plugin"} {
			if _, ok := runs[i].Params[p]; ok {
				runs[i].Params["where"] = p
				delete(runs[i].Params, p)
			}
		}
		runs[i].AllocsPerPacket = runs[i].Metrics["allocs/op"]
	}
	r.Runs = runs
	return r, nil
}

// e2eTCPEnv keeps e2e-tcp.sh's share of the report to minutes: three
// 3-second iperf3 runs of each case (its own defaults are ten 2-second
// runs), for medians with a range.
var e2eTCPEnv = []string{"RUNS=3", "DURATION=3"}

// e2eScript runs benchmarks/NAME.sh with short phases (env, when given,
// instead of the packet scripts' DURATION=10 LONG=12) and reads the
// result it writes (RESULT_JSON).
func (o *options) e2eScript(name string, env ...string) (*result.Result, error) {
	path := filepath.Join(o.tmp, name+".json")
	cmd := exec.Command("bash", filepath.Join(o.root, "benchmarks", name+".sh"))
	cmd.Dir = o.root
	// e2e-router.sh's one-destination and 1M-destination phases (LONG)
	// are the seed scenario end to end; e2e-nat.sh has none.
	if len(env) == 0 {
		env = []string{"DURATION=10", "LONG=12"}
	}
	cmd.Env = append(append(os.Environ(), "RESULT_JSON="+path), env...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("%s.sh: %v\n%s", name, err, out.String())
	}
	r, err := result.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%s.sh wrote no result: %v\n%s", name, err, out.String())
	}
	return r, nil
}
