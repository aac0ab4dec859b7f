package pipeline

import (
	"errors"
	"fmt"
	"reflect"
	"sort"

	"github.com/junction-dataplane/junction/elements"
)

// DecodeConfig decodes one element's keys (TOML values as the toml package
// decodes them: string, int64, float64, bool, arrays, tables) into a fresh
// config of type t, by the graph loader's rules: unknown keys with the
// nearest valid one, mismatched values, required keys, then the config's
// Validate. It is for tools that build an element outside a graph file
// (forwarder bench -set); every problem is reported, one per line, as
// `key "NAME": ...`.
func DecodeConfig(t *elements.Type, values map[string]any) (any, error) {
	if t.NewConfig == nil {
		if len(values) > 0 {
			return nil, fmt.Errorf("%s has no keys", t.Name)
		}
		return nil, nil
	}
	cfg, err := safeConfig(t.NewConfig)
	if err != nil || cfg == nil {
		return cfg, err
	}
	rv := reflect.ValueOf(cfg).Elem()
	fields := structFields(rv.Type())
	keys := make([]string, 0, len(values))
	for k := range values {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var errs []error
	given := map[string]bool{}
	for _, k := range keys {
		f, ok := findField(fields, k)
		if !ok {
			msg := fmt.Sprintf("key %q: unknown", k)
			if s := suggest(k, fieldNames(fields)); s != "" {
				msg += fmt.Sprintf(", did you mean %q?", s)
				given[s] = true // not also "required"
			}
			errs = append(errs, errors.New(msg))
			continue
		}
		given[k] = true
		if err := setValue(fieldValue(rv, f), values[k]); err != nil {
			errs = append(errs, fmt.Errorf("key %q: %w", k, err))
		}
	}
	for _, k := range t.Doc.Keys {
		if k.Required && !given[k.Name] {
			errs = append(errs, fmt.Errorf("key %q: required", k.Name))
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	if v, ok := cfg.(elements.Validator); ok {
		if err := safely(t.Name+" Validate", v.Validate); err != nil {
			return nil, err
		}
	}
	return cfg, nil
}
