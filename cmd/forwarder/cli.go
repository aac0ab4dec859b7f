package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
)

// This file holds what makes the command line behave like a Go tool: a
// usage text per subcommand (forwarder CMD -h, forwarder help CMD), usage
// errors (exit status 2) told apart from failures (1), and version.

// cmdDoc is a subcommand's usage: its synopsis lines (after "forwarder")
// and what it does.
type cmdDoc struct {
	synopsis []string
	text     string
}

// cmdDocs documents the subcommands; README.md's usage block and the
// global usage are checked against their flag sets (cli_test.go).
var cmdDocs = map[string]cmdDoc{
	"run": {[]string{"run [-config FILE] [-duration D] [-workers N] [-nopin] [-cpus LIST] [-stats ADDR] [-stats-public] [-quiet] [-per-worker] [-control PATH]"},
		`Runs the graph (without -config, or a FILE argument: the embedded default
graph, a router between two synthetic gen devices); prints a rate line every
second and, on exit, the per-element table. Stops on Ctrl-C/SIGTERM, after
-duration, or when every source is drained. Each worker is pinned to a CPU
of its own: more workers than CPUs to pin to is refused unless -nopin.`},
	"check": {[]string{"check [-config FILE] [-strict]"},
		`Validates a graph file as run would, short of starting it: the file, the
devices' files and interfaces, the element keys against the devices. Prints
"ok: N elements, M links, K devices" and a warning for each part of the
graph that cannot work as written; errors (and, with -strict, warnings) exit
with status 1.`},
	"graph":    {[]string{"graph [-config FILE]"}, "Prints the graph in Graphviz DOT (forwarder graph | dot -Tsvg > g.svg)."},
	"elements": {[]string{"elements [TYPE]"}, "Lists the element types, or prints one type's manual."},
	"drivers":  {[]string{"drivers [NAME]"}, "Lists the drivers, or prints one driver's manual (queues, keys, stats)."},
	"stats":    {[]string{"stats [-addr ADDR] [-format table|json|prom] [-per-worker]"}, "Reads a running forwarder's stats endpoint."},
	"bench": {[]string{
		"bench -element TYPE [-plugin PATH] [-set key=value ...] [-traffic gen-keys] [-batch N] [-duration D]",
		"bench -config FILE [-duration D]"},
		"Benchmarks one element on synthetic traffic, or a whole graph."},
	"routes": {[]string{
		"routes [-config FILE] [-element NAME] [ADDR ...]",
		"routes -generate N [-generate6 M] [-seed S] [-nexthops K] [-ports P] [-ecmp F] [-default]"},
		"Prints a graph's route tables (size, memory, the route for each ADDR), or writes a synthetic table."},
	"features": {[]string{"features [-format table|json]"}, `Probes the kernel features the drivers use (BPF helpers and map types,
tcx, BPF links for XDP, raw tracepoints, XDP features over netlink,
AF_XDP) and prints whether this kernel has each, the first mainline Linux
with it, what Junction uses it for and what Junction does without it.
JUNCTION_KERNEL_MISSING=NAME,... (or "optional") makes features read as
missing ("emulated"), for Junction as for this command.`},
	"completion": {[]string{"completion bash|zsh|fish"}, `Prints a completion script for the shell: the commands, each one's flags
(file names for a FILE or PATH, the fixed values of -format), show's and
route's words, element types and drivers. Written from the commands' own
flag sets, so it completes exactly what they take.
  bash: source <(forwarder completion bash)
  zsh:  forwarder completion zsh > "${fpath[1]}/_forwarder"
  fish: forwarder completion fish > ~/.config/fish/completions/forwarder.fish`},
	"man": {[]string{"man [-dir DIR] [COMMAND]"}, `Prints forwarder's manual page (roff), or COMMAND's (forwarder man run |
man -l -). With -dir, writes every page into DIR: forwarder.1 and
forwarder-COMMAND.1 for each command. The pages are written from the
commands' own synopses, texts and flag sets.`},
	"version": {[]string{"version"}, "Prints the module version, the VCS revision and the Go version it was built with."},
	"help":    {[]string{"help [COMMAND]"}, "Prints the usage of forwarder or of one command."},
}

// commandNames lists the subcommands in the order the usage shows them.
var commandNames = []string{"run", "check", "graph", "elements", "drivers", "stats", "bench", "routes", "show", "clear", "route", "trace", "capture", "reload", "features", "completion", "man", "version", "help"}

// writeCmdUsage prints "usage: forwarder SYNOPSIS" and the command's text.
func writeCmdUsage(w io.Writer, name string) {
	d, ok := cmdDocs[name]
	if !ok {
		fmt.Fprintf(w, "usage: forwarder %s [flags]\n", name)
		return
	}
	for i, s := range d.synopsis {
		lead := "usage: "
		if i > 0 {
			lead = "       "
		}
		fmt.Fprintf(w, "%sforwarder %s\n", lead, s)
	}
	fmt.Fprintf(w, "\n%s\n", d.text)
}

// usageError is a wrong invocation found after flag parsing (a bad flag
// value, a stray argument): exit status 2, like the flag package's own.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usageErrorf(format string, args ...any) error {
	return &usageError{fmt.Sprintf(format, args...)}
}

func isUsage(err error) bool {
	var u *usageError
	return errors.As(err, &u)
}

// helpCmd: forwarder help [COMMAND].
func helpCmd(args []string, stdout, stderr io.Writer) int {
	switch len(args) {
	case 0:
		fmt.Fprint(stdout, usage)
		return 0
	case 1:
		name := args[0]
		if !slices.Contains(commandNames, name) {
			msg := fmt.Sprintf("forwarder help: unknown command %q", name)
			if s := nearest(name, commandNames); s != "" {
				msg += fmt.Sprintf(", did you mean %q?", s)
			}
			fmt.Fprintln(stderr, msg+" (forwarder help lists them)")
			return 2
		}
		if name == "help" || name == "version" {
			writeCmdUsage(stdout, name)
			return 0
		}
		// The command's own -h, on stdout: what it prints is its flag set.
		Main([]string{name, "-h"}, stdout, stdout)
		return 0
	default:
		fmt.Fprintln(stderr, "forwarder help: one command at a time")
		return 2
	}
}

// versionCmd prints what debug.ReadBuildInfo knows: the module version
// ("(devel)" for a build from a work tree), the VCS revision and whether
// the tree was modified, and the Go version.
func versionCmd(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("version", stderr)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageErrorf("version takes no arguments")
	}
	fmt.Fprintln(stdout, versionText(debug.ReadBuildInfo()))
	return nil
}

func versionText(bi *debug.BuildInfo, ok bool) string {
	if !ok {
		return "forwarder: no build information (" + runtime.Version() + ")"
	}
	version := bi.Main.Version
	if version == "" {
		version = "(devel)"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "forwarder %s %s", bi.Main.Path, version)
	settings := map[string]string{}
	for _, s := range bi.Settings {
		settings[s.Key] = s.Value
	}
	if rev := settings["vcs.revision"]; rev != "" {
		fmt.Fprintf(&b, "\nrevision %s", rev)
		if t := settings["vcs.time"]; t != "" {
			fmt.Fprintf(&b, " (%s)", t)
		}
		if settings["vcs.modified"] == "true" {
			b.WriteString(", modified")
		}
	} else {
		b.WriteString("\nrevision unknown (built without VCS information: go build -buildvcs)")
	}
	fmt.Fprintf(&b, "\n%s %s/%s", bi.GoVersion, runtime.GOOS, runtime.GOARCH)
	return b.String()
}

// onlineCPUs lists the machine's online CPUs (Linux's
// /sys/devices/system/cpu/online), or 0..NumCPU-1 where that cannot be
// read.
func onlineCPUs() []int {
	if b, err := os.ReadFile("/sys/devices/system/cpu/online"); err == nil {
		if cpus, err := parseCPUList(strings.TrimSpace(string(b))); err == nil && len(cpus) > 0 {
			return cpus
		}
	}
	cpus := make([]int, runtime.NumCPU())
	for i := range cpus {
		cpus[i] = i
	}
	return cpus
}

// checkCPUFlags refuses a -cpus list that names a CPU the machine does not
// have or names one twice, and -cpus with -nopin.
func checkCPUFlags(cpus []int, nopin bool, online []int) error {
	if len(cpus) == 0 {
		return nil
	}
	if nopin {
		return usageErrorf("-cpus pins the workers and -nopin leaves them unpinned: give one or the other")
	}
	seen := map[int]bool{}
	for _, c := range cpus {
		if !slices.Contains(online, c) {
			return usageErrorf("-cpus: CPU %d does not exist (this machine's CPUs are %s)", c, cpuRanges(online))
		}
		if seen[c] {
			return usageErrorf("-cpus: CPU %d is listed twice: two workers pinned to one CPU would poll in turns", c)
		}
		seen[c] = true
	}
	return nil
}

// checkWorkers refuses more pinned workers than CPUs to pin them to: two
// polling workers on one CPU take turns, each getting half of it, and
// neither ever idles. flagWorkers is -workers (0: not given), graphWorkers
// the graph's [forwarder] workers; cpus is -cpus, else process lists the
// CPUs the process may run on. With -nopin the scheduler shares the CPUs
// and any count is allowed.
func checkWorkers(flagWorkers, graphWorkers int, nopin bool, cpus, process []int) error {
	if nopin {
		return nil
	}
	set, from := cpus, "-cpus "+cpuList(cpus)
	if len(set) == 0 {
		set, from = process, "the CPUs this process may run on ("+cpuRanges(process)+")"
	}
	if len(set) == 0 {
		return nil // unknown affinity: nothing to check against
	}
	n, what := flagWorkers, fmt.Sprintf("-workers %d", flagWorkers)
	if n == 0 {
		n, what = graphWorkers, fmt.Sprintf("the graph's workers = %d", graphWorkers)
	}
	if n <= len(set) {
		return nil
	}
	err := fmt.Sprintf("%s: more workers than the %s to pin them to, %s; pinned workers would share CPUs and poll in turns. Run at most %d, or give -nopin to leave them to the scheduler",
		what, count(len(set), "CPU"), from, len(set))
	if flagWorkers > 0 {
		return usageErrorf("%s", err)
	}
	return errors.New(err)
}

// cpuRanges prints CPU numbers compactly: "0-3,6".
func cpuRanges(cpus []int) string {
	var parts []string
	for i := 0; i < len(cpus); {
		j := i
		for j+1 < len(cpus) && cpus[j+1] == cpus[j]+1 {
			j++
		}
		if j > i {
			parts = append(parts, fmt.Sprintf("%d-%d", cpus[i], cpus[j]))
		} else {
			parts = append(parts, fmt.Sprint(cpus[i]))
		}
		i = j + 1
	}
	return strings.Join(parts, ",")
}
