package conf

import (
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"time"
)

// CheckKeys reports where a manual's keys and a config struct (cfg, a
// pointer to it as NewConfig returns, or nil for none) disagree: a toml key
// the manual does not list or lists out of the struct's order, a
// documented key the struct does not have, a key without a type or text,
// and a default that is not the config's (the struct's value of a string,
// number, bool or duration field, when it is not its zero value, written
// as a graph file would: strings and durations quoted). Elements and
// drivers check their manuals with it.
func CheckKeys(keys []Key, cfg any) []string {
	var errs []string
	doc := map[string]Key{}
	var docOrder []string
	for _, k := range keys {
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
	if cfg != nil {
		v := reflect.ValueOf(cfg)
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
				if d, ok := v.Field(i).Interface().(time.Duration); ok {
					// A graph file writes "30s"; "200s" and "3m20s" are one default.
					if doc, err := strconv.Unquote(k.Default); d != 0 && (err != nil || !sameDuration(doc, d)) {
						errs = append(errs, fmt.Sprintf("key %q: documented default %s, the config's is %q", name, k.Default, d))
					}
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
	return errs
}

// sameDuration reports whether s parses as the duration d.
func sameDuration(s string, d time.Duration) bool {
	p, err := time.ParseDuration(s)
	return err == nil && p == d
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
