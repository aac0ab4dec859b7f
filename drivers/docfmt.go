package drivers

import (
	"fmt"
	"io"
	"reflect"
	"strconv"
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

// CheckDoc reports where d's manual and its config struct disagree: a
// toml key the manual does not list or lists out of the struct's order, a
// documented key the struct does not have, a key without a type or text,
// and a default that is not the config's (NewConfig's value of a string,
// number or bool field, when it is not its zero value). A page with no
// summary or no stats is refused too. Tests of every driver call it.
func CheckDoc(d *Driver) error {
	var errs []string
	if d.Doc.Summary == "" {
		errs = append(errs, "no summary")
	}
	if d.Doc.Stats == "" {
		errs = append(errs, "no stats")
	}
	doc := map[string]conf.Key{}
	var docOrder []string
	for _, k := range d.Doc.Keys {
		if _, dup := doc[k.Name]; dup {
			errs = append(errs, fmt.Sprintf("key %q documented twice", k.Name))
		}
		doc[k.Name] = k
		docOrder = append(docOrder, k.Name)
		if k.Type == "" || k.Doc == "" {
			errs = append(errs, fmt.Sprintf("key %q has no type or no text", k.Name))
		}
	}
	var structOrder []string
	if d.NewConfig != nil {
		v := reflect.ValueOf(d.NewConfig())
		if v.Kind() == reflect.Pointer {
			v = v.Elem()
		}
		if v.Kind() == reflect.Struct {
			for i := range v.NumField() {
				name, _, _ := strings.Cut(v.Type().Field(i).Tag.Get("toml"), ",")
				if name == "" || name == "-" {
					continue
				}
				structOrder = append(structOrder, name)
				k, ok := doc[name]
				if !ok {
					errs = append(errs, fmt.Sprintf("key %q not documented", name))
					continue
				}
				if want, ok := defaultText(v.Field(i)); ok && k.Default != want {
					errs = append(errs, fmt.Sprintf("key %q: documented default %s, the config's is %s", name, k.Default, want))
				}
			}
		}
	}
	inStruct := map[string]bool{}
	for _, n := range structOrder {
		inStruct[n] = true
	}
	for _, n := range docOrder {
		if !inStruct[n] {
			errs = append(errs, fmt.Sprintf("key %q documented but not in the config", n))
		}
	}
	if len(errs) == 0 && strings.Join(docOrder, " ") != strings.Join(structOrder, " ") {
		errs = append(errs, fmt.Sprintf("keys documented in the order %v, the config's is %v", docOrder, structOrder))
	}
	if len(errs) > 0 {
		return fmt.Errorf("driver %s: %s", d.Name, strings.Join(errs, "; "))
	}
	return nil
}

// defaultText formats a config field's default as a manual writes it:
// strings quoted, numbers and bools plain; false for zero values and other
// kinds, whose default the manual may describe in words.
func defaultText(v reflect.Value) (string, bool) {
	if v.IsZero() {
		return "", false
	}
	switch v.Kind() {
	case reflect.String:
		return strconv.Quote(v.String()), true
	case reflect.Bool:
		return strconv.FormatBool(v.Bool()), true
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return strconv.FormatInt(v.Int(), 10), true
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return strconv.FormatUint(v.Uint(), 10), true
	case reflect.Float32, reflect.Float64:
		return strconv.FormatFloat(v.Float(), 'g', -1, 64), true
	}
	return "", false
}
