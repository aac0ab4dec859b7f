package sdk

import (
	"errors"
	"reflect"
	"sort"
	"strings"

	"github.com/BurntSushi/toml"
	"github.com/junction-dataplane/junction/elements"
	"github.com/junction-dataplane/junction/internal/suggest"
	"github.com/junction-dataplane/junction/plugins/internal/wire"
)

// decodeConfig decodes the TOML text of an element's config table into a
// fresh config, key by key, so that every error names its key, then runs
// the config's Validate.
func decodeConfig(e *Element, text string) (any, []wire.KeyErr) {
	var cfg any
	if e.NewConfig != nil {
		cfg = e.NewConfig()
	}
	var prims map[string]toml.Primitive
	md, err := toml.Decode(text, &prims)
	if err != nil {
		return nil, []wire.KeyErr{{Msg: "bad config: " + err.Error()}}
	}
	var fields map[string]int
	var rv reflect.Value
	if cfg != nil {
		rv = reflect.ValueOf(cfg)
		if rv.Kind() != reflect.Pointer || rv.Elem().Kind() != reflect.Struct {
			return nil, []wire.KeyErr{{Msg: "internal error: NewConfig must return a pointer to a struct"}}
		}
		rv = rv.Elem()
		fields = map[string]int{}
		for i := 0; i < rv.NumField(); i++ {
			f := rv.Type().Field(i)
			if !f.IsExported() {
				continue
			}
			name, _, _ := strings.Cut(f.Tag.Get("toml"), ",")
			if name == "-" {
				continue
			}
			if name == "" {
				name = f.Name
			}
			fields[name] = i
		}
	}
	keys := make([]string, 0, len(prims))
	for k := range prims {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var errs []wire.KeyErr
	for _, k := range keys {
		i, ok := fields[k]
		if !ok {
			msg := "unknown"
			if len(fields) == 0 {
				msg = "unknown (" + e.Name + " has no keys)"
			} else if s := nearest(k, fields); s != "" {
				msg += ", did you mean \"" + s + "\"?"
			}
			errs = append(errs, wire.KeyErr{Key: k, Msg: msg})
			continue
		}
		if err := md.PrimitiveDecode(prims[k], rv.Field(i).Addr().Interface()); err != nil {
			msg := err.Error()
			msg = strings.TrimPrefix(msg, "toml: ")
			errs = append(errs, wire.KeyErr{Key: k, Msg: msg})
		}
	}
	if len(errs) > 0 {
		return nil, errs
	}
	if v, ok := cfg.(interface{ Validate() error }); ok {
		if err := v.Validate(); err != nil {
			var ke *elements.KeyError
			if errors.As(err, &ke) {
				return nil, []wire.KeyErr{{Key: ke.Key, Msg: ke.Err.Error()}}
			}
			return nil, []wire.KeyErr{{Msg: err.Error()}}
		}
	}
	return cfg, nil
}

// nearest returns the key closest to k by edit distance, if plausible.
func nearest(k string, fields map[string]int) string {
	names := make([]string, 0, len(fields))
	for n := range fields {
		names = append(names, n)
	}
	sort.Strings(names)
	return suggest.Nearest(k, names)
}
