package main

import (
	"bytes"
	"regexp"
	"slices"
	"strings"

	"github.com/junction-dataplane/junction/drivers"
	"github.com/junction-dataplane/junction/elements"
)

// The command table the man pages and shell completions are written from
// (manpage.go, completion.go). It is read from the commands themselves:
// each one's -h output, which prints its real flag set (the flag
// package's defaults for most, the control client's list for show, route,
// trace, capture, clear and reload) and its synopsis, so a flag added to a
// command is in its man page and its completions without another list to
// keep.

// controlSynopsis is what a synopsis's [CONTROL] stands for: the flags
// of every control socket client (client.go's clientHelp).
const controlSynopsis = "[-control PATH] [-config FILE] [-format table|json]"

// cliCommand is one subcommand as its -h describes it.
type cliCommand struct {
	name     string
	synopsis []string // after "forwarder "
	summary  string   // a few words: the global usage's first clause
	text     string   // what it does, paragraphs as the usage wraps them
	flags    []cliFlag
	// words are the fixed words that may follow the command (show's
	// flows, routes...; route's add, del...), from its synopsis.
	words []string
	// operand names what a positional argument is: "command", "element",
	// "driver", or "" (nothing to offer but files).
	operand string
}

// cliFlag is one flag: name, the placeholder of its value ("" for a
// boolean), the fixed values it takes (from a synopsis "-format a|b"),
// and its help line.
type cliFlag struct {
	name, arg string
	choices   []string
	usage     string
}

// takesFile says whether the flag's value is a path (completed as files).
func (f cliFlag) takesFile() bool {
	return strings.Contains(f.arg, "FILE") || strings.Contains(f.arg, "PATH") || f.arg == "DIR"
}

var (
	helpFlagLine = regexp.MustCompile(`^  -([a-zA-Z0-9][a-zA-Z0-9-]*)(.*)$`)
	synFlagArg   = regexp.MustCompile(`-([a-z][a-z0-9-]*) ([A-Za-z][A-Za-z0-9.=|-]*)`)
	wordAlt      = regexp.MustCompile(`^[a-z]+(\|[a-z]+)*$`)
)

// commandHelp is what `forwarder NAME -h` prints.
func commandHelp(name string) string {
	var b bytes.Buffer
	if name == "help" {
		// "help -h" asks for the help of a command named -h.
		writeCmdUsage(&b, name)
		return b.String()
	}
	Main([]string{name, "-h"}, &b, &b)
	return b.String()
}

// cliTable describes every subcommand, in the usage's order.
func cliTable() []cliCommand {
	var cmds []cliCommand
	for _, name := range commandNames {
		c := parseCommandHelp(name, commandHelp(name))
		c.summary, c.text = usageParagraph(name)
		if c.text != "" { // a sentence of its own in the man page
			c.text = strings.ToUpper(c.text[:1]) + c.text[1:]
		}
		if d, ok := cmdDocs[name]; ok && len(d.text) > len(c.text) {
			c.text = d.text
		}
		if c.summary == "" { // help: not in the global usage's paragraphs
			c.summary = strings.ToLower(c.text[:1]) + strings.TrimSuffix(c.text[1:], ".")
		}
		cmds = append(cmds, c)
	}
	return cmds
}

// parseCommandHelp reads a command's -h output: its synopsis lines, and
// its flags in either layout (the flag package's "  -name type" with the
// help on the next line, or the client's "  -name ARG   help").
func parseCommandHelp(name, help string) cliCommand {
	c := cliCommand{name: name}
	var last *cliFlag
	for _, line := range strings.Split(help, "\n") {
		if strings.HasPrefix(line, "usage: forwarder ") || strings.HasPrefix(line, "       forwarder ") {
			c.synopsis = append(c.synopsis, line[strings.Index(line, "forwarder ")+len("forwarder "):])
			continue
		}
		if m := helpFlagLine.FindStringSubmatch(line); m != nil {
			f := cliFlag{name: m[1]}
			rest := m[2]
			switch {
			case strings.HasPrefix(rest, "\t"): // "  -x\thelp"
				f.usage = strings.TrimSpace(rest)
			case strings.HasPrefix(rest, "  "): // "  -count      help"
				f.usage = strings.TrimSpace(rest)
			case strings.HasPrefix(rest, " "): // "  -n N   help" or "  -config string"
				arg, usage, _ := strings.Cut(strings.TrimPrefix(rest, " "), " ")
				f.arg, f.usage = arg, strings.TrimSpace(usage)
			}
			c.flags = append(c.flags, f)
			last = &c.flags[len(c.flags)-1]
			continue
		}
		if last != nil && strings.HasPrefix(line, "    ") {
			last.usage = strings.TrimSpace(last.usage + " " + strings.TrimSpace(line))
		}
	}
	// The synopsis (the command's own, then the global usage's) names
	// each value better than the flag package's type ("-config FILE",
	// not "string"), and lists fixed values.
	syn := strings.Join(append(slices.Clone(c.synopsis), globalSynopsis(name)...), " ")
	syn = strings.ReplaceAll(syn, "[CONTROL]", controlSynopsis)
	for i := range c.flags {
		f := &c.flags[i]
		for _, m := range synFlagArg.FindAllStringSubmatch(syn, -1) {
			if m[1] == f.name && f.arg != "" && f.choices == nil && (f.arg == strings.ToLower(f.arg) || strings.Contains(m[2], "|")) {
				f.arg = m[2]
				if strings.Contains(m[2], "|") {
					f.choices = strings.Split(m[2], "|")
				}
				if m[2] == "TYPE" {
					f.choices = elements.Names()
				}
			}
		}
	}
	c.words, c.operand = synopsisOperands(name, c.synopsis)
	return c
}

// synopsisOperands reads a command's fixed words ("show [CONTROL] flows
// ... | routes ...": flows, routes) and what its positional argument is
// ("[TYPE]": an element type) from its synopsis lines.
func synopsisOperands(name string, synopsis []string) (words []string, operand string) {
	for _, s := range synopsis {
		s = strings.TrimPrefix(s, name)
		for _, alt := range strings.Split(s, " | ") {
			fields := strings.Fields(strings.ReplaceAll(alt, "[CONTROL]", ""))
			if len(fields) == 0 {
				continue
			}
			if w := fields[0]; wordAlt.MatchString(w) && w != name {
				for _, x := range strings.Split(w, "|") {
					if !slices.Contains(words, x) {
						words = append(words, x)
					}
				}
			}
			for i, f := range fields {
				if i > 0 && strings.HasPrefix(fields[i-1], "[-") || i > 0 && strings.HasPrefix(fields[i-1], "-") {
					continue // a flag's value
				}
				switch strings.Trim(f, "[]") {
				case "COMMAND":
					operand = "command"
				case "TYPE":
					operand = "element"
				case "NAME":
					operand = "driver"
				}
			}
		}
	}
	return words, operand
}

// arguments lists what may follow the command besides flags: its words
// and its operand's values.
func (c cliCommand) arguments() []string {
	return append(slices.Clone(c.words), operandValues(c.operand)...)
}

// operandValues lists what an operand may be.
func operandValues(operand string) []string {
	switch operand {
	case "command":
		return commandNames
	case "element":
		return elements.Names()
	case "driver":
		return drivers.Names()
	}
	return nil
}

// usageParagraph is the global usage's paragraph for a command: its
// first clause (the summary) and the whole text, unwrapped.
func usageParagraph(name string) (summary, text string) {
	body := usage[strings.Index(usage, "\n\nrun ")+2:]
	var lines []string
	for _, l := range strings.Split(body, "\n") {
		if len(lines) > 0 && strings.HasPrefix(l, "          ") {
			lines = append(lines, strings.TrimSpace(l))
			continue
		}
		if len(lines) > 0 {
			break
		}
		if strings.HasPrefix(l, name+" ") {
			lines = append(lines, strings.TrimSpace(l[len(name):]))
		}
	}
	text = strings.Join(lines, " ")
	summary = withoutParentheses(text)
	if i := strings.IndexAny(summary, ".;:"); i > 0 {
		summary = summary[:i]
	}
	return strings.TrimSuffix(strings.TrimSpace(summary), ","), text
}

// withoutParentheses drops the parenthesized asides of s (and the space
// before each).
func withoutParentheses(s string) string {
	var b strings.Builder
	depth := 0
	for _, r := range s {
		switch {
		case r == '(':
			depth++
		case r == ')' && depth > 0:
			depth--
		case depth == 0:
			b.WriteRune(r)
		}
	}
	return strings.Join(strings.Fields(strings.ReplaceAll(b.String(), " ,", ",")), " ")
}

// globalSynopsis is the global usage's synopsis lines for a command (its
// "forwarder NAME" lines and the bracketed lines continuing them).
func globalSynopsis(name string) []string {
	var out []string
	in := false
	for _, l := range strings.Split(usage[:strings.Index(usage, "\n\nrun ")], "\n") {
		t := strings.TrimSpace(l)
		switch {
		case strings.HasPrefix(t, "forwarder "):
			in = strings.Fields(t)[1] == name
		case !strings.HasPrefix(t, "["):
			in = false
		}
		if in {
			out = append(out, strings.TrimPrefix(t, "forwarder "))
		}
	}
	return out
}
