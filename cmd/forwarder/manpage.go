package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// forwarder man [-dir DIR] [COMMAND]: manual pages in roff, written from
// the command table (cmdtable.go) — forwarder(1) for the whole command and
// forwarder-COMMAND(1) for each subcommand, its synopsis, text and flags
// as its -h prints them. The Debian package installs them
// (packaging/build-deb.sh); `forwarder man run | man -l -` reads one
// without installing.

func manCmd(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("man", stderr)
	dir := fs.String("dir", "", "write every page (forwarder.1, forwarder-COMMAND.1) into this directory instead of printing one")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	cmds := cliTable()
	if *dir != "" {
		if fs.NArg() > 0 {
			return usageErrorf("-dir writes every page: give no COMMAND")
		}
		return writeManDir(*dir, cmds, stdout)
	}
	switch fs.NArg() {
	case 0:
		writeMainManPage(stdout, cmds)
		return nil
	case 1:
		i := slices.IndexFunc(cmds, func(c cliCommand) bool { return c.name == fs.Arg(0) })
		if i < 0 {
			msg := fmt.Sprintf("unknown command %q", fs.Arg(0))
			if s := nearest(fs.Arg(0), commandNames); s != "" {
				msg += fmt.Sprintf(", did you mean %q?", s)
			}
			return usageErrorf("%s", msg)
		}
		writeCommandManPage(stdout, cmds[i])
		return nil
	default:
		return usageErrorf("one command at a time, got %d", fs.NArg())
	}
}

// writeManDir writes every page into dir and lists them on w.
func writeManDir(dir string, cmds []cliCommand, w io.Writer) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	write := func(name string, page func(io.Writer)) error {
		var b strings.Builder
		page(&b)
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(b.String()), 0o644); err != nil {
			return err
		}
		fmt.Fprintln(w, p)
		return nil
	}
	if err := write("forwarder.1", func(w io.Writer) { writeMainManPage(w, cmds) }); err != nil {
		return err
	}
	for _, c := range cmds {
		if err := write("forwarder-"+c.name+".1", func(w io.Writer) { writeCommandManPage(w, c) }); err != nil {
			return err
		}
	}
	return nil
}

// roff escapes text for a roff line: backslashes and dashes (a literal
// minus, so that -config is searchable and copyable), and a control
// character at the start of the line.
func roff(s string) string {
	s = strings.NewReplacer(`\`, `\e`, `-`, `\-`).Replace(s)
	if strings.HasPrefix(s, ".") || strings.HasPrefix(s, "'") {
		s = `\&` + s
	}
	return s
}

// roffText writes paragraphs: blank lines in text separate them; the
// usage's own line breaks are kept where a line is indented (a list).
func roffText(w io.Writer, text string) {
	for i, para := range strings.Split(strings.TrimSpace(text), "\n\n") {
		if i > 0 {
			fmt.Fprintln(w, ".PP")
		}
		for _, l := range strings.Split(para, "\n") {
			fmt.Fprintln(w, roff(strings.TrimSpace(l)))
		}
	}
}

func manHeader(w io.Writer, title, name, summary string) {
	fmt.Fprintf(w, ".\\\" Written by \"forwarder man\" from the forwarder's flag sets; do not edit.\n")
	fmt.Fprintf(w, ".TH %s 1 \"\" \"Junction\" \"Junction manual\"\n", strings.ToUpper(title))
	fmt.Fprintf(w, ".SH NAME\n%s \\- %s\n", roff(name), roff(summary))
}

// manSynopsis writes the synopsis lines unhyphenated and ragged, and
// what CONTROL stands for where one uses it.
func manSynopsis(w io.Writer, lines []string) {
	fmt.Fprintln(w, ".SH SYNOPSIS\n.nh\n.ad l")
	control := false
	for i, s := range lines {
		if i > 0 {
			fmt.Fprintln(w, ".br")
		}
		fmt.Fprintf(w, ".B forwarder\n%s\n", roff(s))
		control = control || strings.Contains(s, "[CONTROL]")
	}
	fmt.Fprintln(w, ".ad\n.hy")
	if control {
		fmt.Fprintf(w, ".PP\nCONTROL stands for %s: the control socket, or the graph file whose default socket to use, and the output format.\n", roff(controlSynopsis))
	}
}

// manFiles are the paths the service uses (docs/install.md).
const manFiles = `.SH FILES
.TP
.I /etc/junction/NAME.toml
the graph file the service junction@NAME runs
.TP
.I /run/junction/NAME.sock
its control socket (the default for a graph file NAME.toml)
.TP
.I /usr/share/doc/junction/examples/
the example graphs
`

func writeMainManPage(w io.Writer, cmds []cliCommand) {
	manHeader(w, "forwarder", "forwarder", "Junction, a Click-style modular software router")
	var syn []string
	for _, c := range cmds {
		syn = append(syn, c.synopsis...)
	}
	manSynopsis(w, syn)
	fmt.Fprintln(w, ".SH DESCRIPTION")
	roffText(w, `forwarder runs a graph of packet-processing elements described in a TOML file, one run-to-completion pipeline per CPU core, and inspects and changes a running one over its control socket.

Each command has its own page, forwarder-COMMAND(1); "forwarder help COMMAND" or "forwarder COMMAND -h" prints its flags.`)
	fmt.Fprintln(w, ".SH COMMANDS")
	for _, c := range cmds {
		fmt.Fprintf(w, ".TP\n.B %s\n%s \\%%(forwarder\\-%s(1))\n", roff(c.name), roff(c.summary), roff(c.name))
	}
	fmt.Fprint(w, `.SH EXIT STATUS
0 when the command did its job, 1 when it failed, 2 when it was called wrongly (an unknown flag, a bad flag value, a stray argument).
.SH ENVIRONMENT
.TP
.B NOTIFY_SOCKET
set by systemd for a unit of Type=notify: forwarder run sends READY=1 once its devices are open, RELOADING=1 and READY=1 around a SIGHUP reload, and STOPPING=1.
.TP
.B WATCHDOG_USEC
set by systemd for a unit with WatchdogSec=: forwarder run sends WATCHDOG=1 twice per period while every worker makes rounds, and stops (with a warning) while one is stuck.
.TP
.B JUNCTION_KERNEL_MISSING
kernel features to treat as missing (forwarder\-features(1)).
`)
	fmt.Fprint(w, manFiles)
	fmt.Fprintln(w, ".SH SEE ALSO")
	var see []string
	for _, c := range cmds {
		see = append(see, fmt.Sprintf(".BR forwarder\\-%s (1)", roff(c.name)))
	}
	see = append(see, ".BR systemctl (1)")
	fmt.Fprintln(w, strings.Join(see, ",\n"))
}

func writeCommandManPage(w io.Writer, c cliCommand) {
	manHeader(w, "forwarder-"+c.name, "forwarder-"+c.name, c.summary)
	manSynopsis(w, c.synopsis)
	fmt.Fprintln(w, ".SH DESCRIPTION")
	roffText(w, c.text)
	if len(c.flags) > 0 {
		fmt.Fprintln(w, ".SH OPTIONS")
		for _, f := range c.flags {
			if f.arg == "" {
				fmt.Fprintf(w, ".TP\n.B \\-%s\n", roff(f.name))
			} else {
				fmt.Fprintf(w, ".TP\n.BI \\-%s \" %s\"\n", roff(f.name), roff(f.arg))
			}
			fmt.Fprintln(w, roff(f.usage))
		}
	}
	if vals := operandValues(c.operand); len(vals) > 0 && c.operand != "command" {
		fmt.Fprintf(w, ".SH %sS\n%s\n", strings.ToUpper(c.operand), roff(strings.Join(vals, ", ")))
	}
	if c.name == "run" {
		fmt.Fprint(w, `.SH SIGNALS
.TP
.B SIGHUP
re-reads the graph file it runs and switches to it without stopping; an error changes nothing and is logged with its file and line.
.TP
.BR SIGINT ", " SIGTERM
stop, and print the per-element table.
`)
		fmt.Fprint(w, manFiles)
	}
	fmt.Fprintln(w, ".SH SEE ALSO\n.BR forwarder (1)")
}
