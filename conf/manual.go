package conf

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// ManualWidth is where a manual page's prose is wrapped, as in a terminal
// man page.
const ManualWidth = 78

// Manual writes a manual page in Click's layout: section titles at the
// left margin, their text indented by four spaces. Elements and drivers
// compose their pages from it (elements.WriteDoc, drivers.WriteDoc), so
// that both read alike. It remembers the first write error (Err).
type Manual struct {
	w       io.Writer
	err     error
	started bool
}

// NewManual returns a Manual writing to w.
func NewManual(w io.Writer) *Manual { return &Manual{w: w} }

// Err is the first write error.
func (p *Manual) Err() error { return p.err }

// Write writes b unchanged (for a tabwriter on the page).
func (p *Manual) Write(b []byte) (int, error) {
	if p.err != nil {
		return 0, p.err
	}
	n, err := p.w.Write(b)
	p.err = err
	return n, err
}

// Line writes s and a newline.
func (p *Manual) Line(s string) { io.WriteString(p, s+"\n") }

// Blank writes an empty line.
func (p *Manual) Blank() { p.Line("") }

// Section starts a section, after a blank line unless it is the first.
func (p *Manual) Section(name string) {
	if p.started {
		p.Blank()
	}
	p.started = true
	p.Line(name)
}

// Block writes prose indented by four spaces, wrapped at ManualWidth.
// Lines that start with a space are kept as they are (code in the prose).
func (p *Manual) Block(text string) { p.Indent(text, "    ") }

// Code writes text indented by four spaces, unwrapped (synopses, examples).
func (p *Manual) Code(text string) {
	for _, l := range strings.Split(strings.Trim(text, "\n"), "\n") {
		if strings.TrimSpace(l) == "" {
			p.Blank()
			continue
		}
		p.Line("    " + l)
	}
}

// Indent writes prose under prefix, wrapped as Block does.
func (p *Manual) Indent(text, prefix string) {
	for _, l := range strings.Split(strings.Trim(text, "\n"), "\n") {
		switch {
		case strings.TrimSpace(l) == "":
			p.Blank()
		case l[0] == ' ' || l[0] == '\t':
			p.Line(prefix + l)
		default:
			p.wrap(l, prefix)
		}
	}
}

// Head writes the sections every page starts with: NAME (name and the
// summary), SYNOPSIS (d's, else synopsis) and DESCRIPTION (d.Text, left
// out when empty).
func (p *Manual) Head(name, synopsis string, d Doc) {
	p.Section("NAME")
	if d.Summary != "" {
		p.Line("    " + name + " - " + d.Summary)
	} else {
		p.Line("    " + name)
	}
	if d.Synopsis != "" {
		synopsis = d.Synopsis
	}
	p.Section("SYNOPSIS")
	p.Code(synopsis)
	if d.Text != "" {
		p.Section("DESCRIPTION")
		p.Block(d.Text)
	}
}

// Tail writes the sections every page ends with, those of d that are not
// empty: STATS, EXAMPLE, SEE ALSO.
func (p *Manual) Tail(d Doc) {
	if d.Stats != "" {
		p.Section("STATS")
		p.Block(d.Stats)
	}
	if d.Example != "" {
		p.Section("EXAMPLE")
		p.Code(d.Example)
	}
	if d.SeeAlso != "" {
		p.Section("SEE ALSO")
		p.Block(d.SeeAlso)
	}
}

// Keys writes a KEYS section's body: a table of the keys' names, types,
// defaults and whether they are required, then each documented key's
// text; "none" when there are no keys.
func (p *Manual) Keys(keys []Key) {
	if len(keys) == 0 {
		p.Line("    none")
		return
	}
	tw := tabwriter.NewWriter(p, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "    name\ttype\tdefault\trequired\n")
	for _, k := range keys {
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
	for _, k := range keys {
		if k.Doc == "" {
			continue
		}
		p.Blank()
		p.Line("    " + k.Name)
		p.Indent(k.Doc, "        ")
	}
}

// wrap writes one paragraph line by words; a word longer than the width
// gets a line of its own.
func (p *Manual) wrap(text, prefix string) {
	var sb strings.Builder
	sb.WriteString(prefix)
	n := len(prefix)
	first := true
	for _, word := range strings.Fields(text) {
		if !first && n+1+len(word) > ManualWidth {
			p.Line(sb.String())
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
	p.Line(sb.String())
}
