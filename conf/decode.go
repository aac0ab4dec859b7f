package conf

import (
	"errors"
	"fmt"
	"reflect"
)

// DecodeTable decodes a TOML table (as BurntSushi/toml decodes into
// map[string]any) into cfg, a pointer to a config struct, key by key with
// the graph loader's rules (SetValue), then runs cfg's Validate. It returns
// every problem, each attached to its key ("" for the config as a whole);
// none means cfg is valid. what names the thing configured, for "unknown
// (what has no keys)". cfg may be nil: then any key is unknown.
func DecodeTable(what string, cfg any, tbl map[string]any) []*KeyError {
	var fields []Field
	var rv reflect.Value
	if cfg != nil {
		rv = reflect.ValueOf(cfg)
		if rv.Kind() != reflect.Pointer || rv.Elem().Kind() != reflect.Struct {
			return []*KeyError{{Err: errors.New("internal error: the config must be a pointer to a struct")}}
		}
		rv = rv.Elem()
		fields = Fields(rv.Type())
	}
	var errs []*KeyError
	for _, k := range sortedKeys(tbl) {
		f, ok := FindField(fields, k)
		if !ok {
			msg := "unknown"
			if len(fields) == 0 {
				msg = "unknown (" + what + " has no keys)"
			} else if s := Nearest(k, FieldNames(fields)); s != "" {
				msg += fmt.Sprintf(", did you mean %q?", s)
			}
			errs = append(errs, &KeyError{Key: k, Err: errors.New(msg)})
			continue
		}
		if err := SetValue(FieldValue(rv, f), tbl[k]); err != nil {
			errs = append(errs, &KeyError{Key: k, Err: err})
		}
	}
	if len(errs) > 0 {
		return errs
	}
	if v, ok := cfg.(Validator); ok {
		if err := v.Validate(); err != nil {
			var ke *KeyError
			if errors.As(err, &ke) {
				return []*KeyError{ke}
			}
			return []*KeyError{{Err: err}}
		}
	}
	return nil
}
