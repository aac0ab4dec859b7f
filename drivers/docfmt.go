package drivers

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/junction-dataplane/junction/conf"
)

// CommonKeys are the keys every device takes besides its driver's, handled
// by the graph-file loader.
const CommonKeys = "driver, addresses, mac"

// WriteDoc prints d's manual page in the layout of an element's
// (conf.Manual): NAME, SYNOPSIS, DESCRIPTION, QUEUES, KEYS, STATS,
// EXAMPLE, SEE ALSO. Empty sections are left out, except KEYS.
func WriteDoc(w io.Writer, d *Driver) error {
	doc := d.Doc
	p := conf.NewManual(w)
	p.Head(d.Name, synopsis(d), doc)
	if doc.Queues != "" {
		p.Section("QUEUES")
		p.Block(doc.Queues)
	}
	p.Section("KEYS")
	if len(doc.Keys) > 0 {
		p.Block("Besides " + CommonKeys + ", which every device takes:")
		p.Blank()
	}
	p.Keys(doc.Keys)
	p.Tail(doc)
	return p.Err()
}

// synopsis is a device table with the driver's required keys.
func synopsis(d *Driver) string {
	var b strings.Builder
	fmt.Fprintf(&b, "[devices.NAME]\ndriver = %q\n", d.Name)
	for _, k := range d.Doc.Keys {
		if k.Required {
			fmt.Fprintf(&b, "%s = %s\n", k.Name, strings.ToUpper(k.Name))
		}
	}
	return b.String()
}

// WriteIndex prints one line per driver: its name and summary, aligned.
func WriteIndex(w io.Writer, ds []*Driver) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, d := range ds {
		fmt.Fprintf(tw, "%s\t%s\n", d.Name, d.Doc.Summary)
	}
	return tw.Flush()
}

// CheckDoc reports where d's manual and its config struct disagree
// (conf.CheckKeys) and refuses a page with no summary or no stats. Tests of
// every driver call it, and docs/catalog_test.go over every registered one.
func CheckDoc(d *Driver) error {
	var errs []string
	if d.Doc.Summary == "" {
		errs = append(errs, "no summary")
	}
	if d.Doc.Stats == "" {
		errs = append(errs, "no stats")
	}
	var cfg any
	if d.NewConfig != nil {
		cfg = d.NewConfig()
	}
	errs = append(errs, conf.CheckKeys(d.Doc.Keys, cfg)...)
	if len(errs) > 0 {
		return fmt.Errorf("driver %s: %s", d.Name, strings.Join(errs, "; "))
	}
	return nil
}
