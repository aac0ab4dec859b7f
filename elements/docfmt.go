package elements

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/junction-dataplane/junction/conf"
)

// WriteDoc prints t's documentation as a Click-style manual page: NAME,
// SYNOPSIS, SUMMARY, DESCRIPTION, PORTS, KEYS, STATS, EXAMPLE, SEE ALSO.
// Empty sections are left out, except KEYS, which says when there are none.
// The layout is conf.Manual's, which drivers' pages share.
func WriteDoc(w io.Writer, t *Type) error {
	d := t.Doc
	p := conf.NewManual(w)
	p.Head(t.Name, t.Name, d)
	p.Section("PORTS")
	p.Block(portCounts(t))
	if d.Ports != "" {
		p.Blank()
		p.Block(d.Ports)
	}
	p.Section("KEYS")
	p.Keys(d.Keys)
	p.Tail(d)
	return p.Err()
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

// docWidth is where prose is wrapped.
const docWidth = conf.ManualWidth

// CheckDoc reports what t's manual lacks or gets wrong: a synopsis that
// does not start with the type's name, no summary, no ports text for an
// element with ports, no stats, an example that does not use it, and keys
// that disagree with its config struct (conf.CheckKeys). Every registered
// type is checked (docs/catalog_test.go).
func CheckDoc(t *Type) error {
	var errs []string
	d := t.Doc
	if !strings.HasPrefix(d.Synopsis, t.Name) {
		errs = append(errs, fmt.Sprintf("synopsis %q does not start with the name", d.Synopsis))
	}
	if strings.TrimSpace(d.Summary) == "" {
		errs = append(errs, "no summary")
	}
	if (t.In != 0 || t.Out != 0) && strings.TrimSpace(d.Ports) == "" {
		errs = append(errs, "no ports")
	}
	if strings.TrimSpace(d.Stats) == "" {
		errs = append(errs, "no stats")
	}
	if !strings.Contains(d.Example, t.Name) {
		errs = append(errs, "the example does not use it")
	}
	var cfg any
	if t.NewConfig != nil {
		cfg = t.NewConfig()
	}
	errs = append(errs, conf.CheckKeys(d.Keys, cfg)...)
	for _, k := range d.Keys {
		if k.Required && k.Default != "" {
			errs = append(errs, fmt.Sprintf("key %q is required and has a default", k.Name))
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("element %s: %s", t.Name, strings.Join(errs, "; "))
	}
	return nil
}
