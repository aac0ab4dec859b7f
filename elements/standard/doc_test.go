package standard_test

import (
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/junction-dataplane/junction/elements"
	_ "github.com/junction-dataplane/junction/elements/arp"
	_ "github.com/junction-dataplane/junction/elements/devices"
	_ "github.com/junction-dataplane/junction/elements/ethernet"
)

// Every element of these families has a full manual page whose keys are
// exactly its config's toml keys, in the struct's order, with the
// documented defaults.
func TestDocs(t *testing.T) {
	for _, name := range []string{"FromDevice", "ToDevice", "ARPResponder", "EtherRewrite",
		"Counter", "Discard", "Tee", "Print"} {
		typ, ok := elements.Lookup(name)
		if !ok {
			t.Errorf("%s not registered", name)
			continue
		}
		d := typ.Doc
		for field, v := range map[string]string{"Synopsis": d.Synopsis, "Summary": d.Summary,
			"Ports": d.Ports, "Stats": d.Stats, "Example": d.Example} {
			if strings.TrimSpace(v) == "" {
				t.Errorf("%s: Doc.%s empty", name, field)
			}
		}
		if !strings.HasPrefix(d.Synopsis, name) {
			t.Errorf("%s: synopsis %q", name, d.Synopsis)
		}
		if !strings.Contains(d.Example, name) {
			t.Errorf("%s: example does not use it", name)
		}
		var tags []string
		var cfg reflect.Value
		if typ.NewConfig != nil {
			cfg = reflect.ValueOf(typ.NewConfig()).Elem()
			for i := 0; i < cfg.NumField(); i++ {
				if tag := cfg.Type().Field(i).Tag.Get("toml"); tag != "" {
					tags = append(tags, tag)
				}
			}
		}
		if len(tags) != len(d.Keys) {
			t.Errorf("%s: config keys %v, doc keys %d", name, tags, len(d.Keys))
			continue
		}
		for i, k := range d.Keys {
			if k.Name != tags[i] || k.Type == "" || k.Doc == "" {
				t.Errorf("%s: doc key %d %+v, config key %q", name, i, k, tags[i])
			}
			if k.Required && k.Default != "" {
				t.Errorf("%s: key %s required with a default", name, k.Name)
			}
			// The documented default is the config's.
			f := cfg.Field(i)
			if !k.Required && k.Default != "" {
				got := ""
				switch f.Kind() {
				case reflect.String:
					got = `"` + f.String() + `"`
				case reflect.Int:
					got = strconv.Itoa(int(f.Int()))
				case reflect.Bool:
					got = map[bool]string{true: "true", false: "false"}[f.Bool()]
				}
				if got != k.Default {
					t.Errorf("%s: key %s default %s, config has %s", name, k.Name, k.Default, got)
				}
			}
			if k.Variadic && (i != len(d.Keys)-1 && name != "ARPResponder") {
				t.Errorf("%s: variadic key %s is not last", name, k.Name)
			}
		}
	}
}
