package elements

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// WriteDoc prints t's documentation as a Click-style manual page: NAME,
// SYNOPSIS, SUMMARY, DESCRIPTION, PORTS, KEYS, STATS, EXAMPLE, SEE ALSO.
// Empty sections are left out, except KEYS, which says when there are none.
func WriteDoc(w io.Writer, t *Type) error {
	d := t.Doc
	p := &docWriter{w: w}
	p.section("NAME")
	if d.Summary != "" {
		p.line("    " + t.Name + " - " + d.Summary)
	} else {
		p.line("    " + t.Name)
	}
	syn := d.Synopsis
	if syn == "" {
		syn = t.Name
	}
	p.section("SYNOPSIS")
	p.code(syn)
	if d.Text != "" {
		p.section("DESCRIPTION")
		p.block(d.Text)
	}
	p.section("PORTS")
	p.block(portCounts(t))
	if d.Ports != "" {
		p.blank()
		p.block(d.Ports)
	}
	p.section("KEYS")
	if len(d.Keys) == 0 {
		p.line("    none")
	} else {
		tw := tabwriter.NewWriter(p, 0, 0, 2, ' ', 0)
		fmt.Fprintf(tw, "    name\ttype\tdefault\trequired\n")
		for _, k := range d.Keys {
			def := k.Default
			if def == "" {
				def = "-"
			}
			req := "no"
			if k.Required {
				req = "yes"
			}
			typ := k.Type
			if k.Variadic {
				typ += " (rest of the arguments)"
			}
			fmt.Fprintf(tw, "    %s\t%s\t%s\t%s\n", k.Name, typ, def, req)
		}
		tw.Flush()
		for _, k := range d.Keys {
			if k.Doc == "" {
				continue
			}
			p.blank()
			p.line("    " + k.Name)
			p.indent(k.Doc, "        ")
		}
	}
	if d.Stats != "" {
		p.section("STATS")
		p.block(d.Stats)
	}
	if d.Example != "" {
		p.section("EXAMPLE")
		p.code(d.Example)
	}
	if d.SeeAlso != "" {
		p.section("SEE ALSO")
		p.block(d.SeeAlso)
	}
	return p.err
}

// portCounts describes the port counts, noting optional outputs.
func portCounts(t *Type) string {
	out := fmt.Sprint(t.Out)
	if t.Out < 0 {
		out = "N (set by the config)"
	}
	s := fmt.Sprintf("%d input%s, %s output%s", t.In, plural(t.In), out, plural(t.Out))
	if len(t.Optional) > 0 {
		var ps []string
		for _, o := range t.Optional {
			ps = append(ps, fmt.Sprint(o))
		}
		s += "; output " + strings.Join(ps, ", ") + " may be left unconnected (drops are counted as \"" +
			UnconnectedReason(t.Optional[0]) + "\")"
	}
	if t.Source {
		s += "; a source: the worker polls it"
	}
	return s
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// WriteIndex prints one line per type: its name and summary, aligned.
func WriteIndex(w io.Writer, types []*Type) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, t := range types {
		fmt.Fprintf(tw, "%s\t%s\n", t.Name, t.Doc.Summary)
	}
	return tw.Flush()
}

// docWriter writes lines and remembers the first error.
type docWriter struct {
	w       io.Writer
	err     error
	started bool
}

func (p *docWriter) Write(b []byte) (int, error) {
	if p.err != nil {
		return 0, p.err
	}
	n, err := p.w.Write(b)
	p.err = err
	return n, err
}

func (p *docWriter) line(s string) { io.WriteString(p, s+"\n") }
func (p *docWriter) blank()        { p.line("") }

func (p *docWriter) section(name string) {
	if p.started {
		p.blank()
	}
	p.started = true
	p.line(name)
}

// docWidth is where prose is wrapped, as in a terminal man page.
const docWidth = 78

// block writes prose indented by four spaces, wrapped at docWidth. Lines
// that start with a space are kept as they are (code in the prose).
func (p *docWriter) block(text string) { p.indent(text, "    ") }

// code writes text indented by four spaces, unwrapped (synopses, examples).
func (p *docWriter) code(text string) {
	for _, l := range strings.Split(strings.Trim(text, "\n"), "\n") {
		if strings.TrimSpace(l) == "" {
			p.blank()
			continue
		}
		p.line("    " + l)
	}
}

func (p *docWriter) indent(text, prefix string) {
	for _, l := range strings.Split(strings.Trim(text, "\n"), "\n") {
		switch {
		case strings.TrimSpace(l) == "":
			p.blank()
		case l[0] == ' ' || l[0] == '\t':
			p.line(prefix + l)
		default:
			p.wrap(l, prefix)
		}
	}
}

// wrap writes one paragraph line by words; a word longer than the width
// gets a line of its own.
func (p *docWriter) wrap(text, prefix string) {
	var sb strings.Builder
	sb.WriteString(prefix)
	n := len(prefix)
	first := true
	for _, word := range strings.Fields(text) {
		if !first && n+1+len(word) > docWidth {
			p.line(sb.String())
			sb.Reset()
			sb.WriteString(prefix)
			n, first = len(prefix), true
		}
		if !first {
			sb.WriteByte(' ')
			n++
		}
		sb.WriteString(word)
		n += len(word)
		first = false
	}
	p.line(sb.String())
}
