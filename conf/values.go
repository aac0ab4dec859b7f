package conf

import (
	"encoding"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"
	"time"
)

// Config structs are decoded by the loader itself rather than by toml's
// Decode: the loader must be strict key by key (every unknown key and every
// mismatched value is its own located error, not the first one only), must
// refuse negative numbers for unsigned fields (toml wraps them), and must
// convert inline arguments — text — by the same rules as TOML values.

var (
	durationType      = reflect.TypeFor[time.Duration]()
	timeType          = reflect.TypeFor[time.Time]()
	textUnmarshalType = reflect.TypeFor[encoding.TextUnmarshaler]()
	tomlUnmarshalType = reflect.TypeFor[tomlUnmarshaler]()
)

// tomlUnmarshaler is toml.Unmarshaler: a config type that takes a decoded
// TOML value of more than one kind (a number or a name) decodes itself.
type tomlUnmarshaler interface {
	UnmarshalTOML(any) error
}

// Field is one config key of a config struct.
type Field struct {
	Name  string
	index []int
}

// Fields lists the keys of struct type t: exported fields named by
// their toml tag (or the Field name), embedded untagged structs flattened,
// `toml:"-"` skipped.
func Fields(t reflect.Type) []Field {
	var out []Field
	var walk func(t reflect.Type, index []int, depth int)
	walk = func(t reflect.Type, index []int, depth int) {
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			tag := f.Tag.Get("toml")
			name, _, _ := strings.Cut(tag, ",")
			if name == "-" {
				continue
			}
			idx := append(append([]int(nil), index...), i)
			if f.Anonymous && name == "" && depth < 4 {
				ft := f.Type
				if ft.Kind() == reflect.Pointer {
					ft = ft.Elem()
				}
				if ft.Kind() == reflect.Struct {
					walk(ft, idx, depth+1)
					continue
				}
			}
			if !f.IsExported() {
				continue
			}
			if name == "" {
				name = f.Name
			}
			out = append(out, Field{Name: name, index: idx})
		}
	}
	walk(t, nil, 0)
	return out
}

func FindField(fields []Field, name string) (Field, bool) {
	for _, f := range fields {
		if f.Name == name {
			return f, true
		}
	}
	return Field{}, false
}

func FieldNames(fields []Field) []string {
	out := make([]string, len(fields))
	for i, f := range fields {
		out[i] = f.Name
	}
	return out
}

// FieldValue returns the settable value of f in struct value sv, allocating
// nil embedded pointers on the way.
func FieldValue(sv reflect.Value, f Field) reflect.Value {
	v := sv
	for i, x := range f.index {
		if i > 0 && v.Kind() == reflect.Pointer {
			if v.IsNil() {
				v.Set(reflect.New(v.Type().Elem()))
			}
			v = v.Elem()
		}
		v = v.Field(x)
	}
	return v
}

// textUnmarshaler returns dst's TextUnmarshaler (through its address), if
// its type has one.
func textUnmarshaler(dst reflect.Value) (encoding.TextUnmarshaler, bool) {
	if dst.CanAddr() && dst.Addr().Type().Implements(textUnmarshalType) {
		return dst.Addr().Interface().(encoding.TextUnmarshaler), true
	}
	return nil, false
}

// wantName says, for error messages, what a TOML value for type t must be.
func wantName(t reflect.Type) string {
	switch {
	case t == durationType:
		return `duration (e.g. "1s")`
	case t == timeType:
		return "datetime"
	case reflect.PointerTo(t).Implements(textUnmarshalType):
		return "string"
	}
	switch t.Kind() {
	case reflect.String:
		return "string"
	case reflect.Bool:
		return "boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return "integer"
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return "non-negative integer"
	case reflect.Float32, reflect.Float64:
		return "number"
	case reflect.Slice, reflect.Array:
		return "array of " + wantName(t.Elem()) + "s"
	case reflect.Map, reflect.Struct:
		return "table"
	case reflect.Pointer:
		return wantName(t.Elem())
	}
	return t.String()
}

// TypeName describes a decoded TOML value for error messages.
func TypeName(v any) string {
	switch x := v.(type) {
	case string:
		if len(x) > 40 {
			x = x[:40] + "..."
		}
		return "string " + strconv.Quote(x)
	case int64:
		return "integer " + strconv.FormatInt(x, 10)
	case float64:
		return "float " + strconv.FormatFloat(x, 'g', -1, 64)
	case bool:
		return "boolean " + strconv.FormatBool(x)
	case []any, []map[string]any:
		return "array"
	case map[string]any:
		return "table"
	case time.Time:
		return "datetime"
	}
	return fmt.Sprintf("%T", v)
}

// gotValue quotes a decoded TOML value for messages: a string quoted, a
// number as written.
func gotValue(v any) string {
	switch x := v.(type) {
	case string:
		return Quote(x)
	case int64:
		return strconv.FormatInt(x, 10)
	}
	return TypeName(v)
}

func mismatch(dst reflect.Value, v any) error {
	return fmt.Errorf("want %s, got %s", wantName(dst.Type()), TypeName(v))
}

// SetValue stores the decoded TOML value v (string, int64, float64, bool,
// time.Time, []any, []map[string]any or map[string]any) into dst, strictly.
func SetValue(dst reflect.Value, v any) error {
	return setValueDepth(dst, v, 0)
}

// setValueDepth is SetValue at nesting depth depth: the types that decode
// themselves first (setSpecial), then by kind.
func setValueDepth(dst reflect.Value, v any, depth int) error {
	if depth > 32 {
		return fmt.Errorf("value nested too deeply")
	}
	if done, err := setSpecial(dst, v); done {
		return err
	}
	t := dst.Type()
	switch t.Kind() {
	case reflect.String, reflect.Bool,
		reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64:
		return setScalar(dst, v)
	case reflect.Slice, reflect.Array:
		return setList(dst, v, depth)
	case reflect.Map:
		return setMap(dst, v, depth)
	case reflect.Struct:
		return setStruct(dst, v, depth)
	case reflect.Pointer:
		nv := reflect.New(t.Elem())
		if err := setValueDepth(nv.Elem(), v, depth+1); err != nil {
			return err
		}
		dst.Set(nv)
		return nil
	case reflect.Interface:
		if t.NumMethod() == 0 {
			dst.Set(reflect.ValueOf(v))
			return nil
		}
	}
	return fmt.Errorf("unsupported config Field type %s", t)
}

// setSpecial stores v into the types that are not decoded by kind:
// time.Duration (a string such as "1s", or nanoseconds), time.Time, and
// types with an UnmarshalTOML or UnmarshalText method. done is false when
// dst is none of them.
func setSpecial(dst reflect.Value, v any) (done bool, err error) {
	t := dst.Type()
	if t == durationType {
		switch x := v.(type) {
		case string:
			d, err := time.ParseDuration(x)
			if err != nil {
				return true, fmt.Errorf("bad duration %s (want e.g. \"1s\", \"250ms\")", Quote(x))
			}
			dst.SetInt(int64(d))
			return true, nil
		case int64:
			dst.SetInt(x)
			return true, nil
		}
		return true, mismatch(dst, v)
	}
	if t == timeType {
		if x, ok := v.(time.Time); ok {
			dst.Set(reflect.ValueOf(x))
			return true, nil
		}
	}
	if dst.CanAddr() && dst.Addr().Type().Implements(tomlUnmarshalType) {
		if err := dst.Addr().Interface().(tomlUnmarshaler).UnmarshalTOML(v); err != nil {
			return true, fmt.Errorf("bad value %s: %v", gotValue(v), err)
		}
		return true, nil
	}
	if tu, ok := textUnmarshaler(dst); ok {
		s, ok := v.(string)
		if n, isInt := v.(int64); isInt {
			// A key that reads text and whose text is a number (a port,
			// a type code) takes a TOML integer as that number's text:
			// what its manual calls an int must not need quotes.
			s, ok = strconv.FormatInt(n, 10), true
		}
		if !ok {
			return true, mismatch(dst, v)
		}
		if err := tu.UnmarshalText([]byte(s)); err != nil {
			return true, fmt.Errorf("bad value %s: %v", Quote(s), err)
		}
		return true, nil
	}
	return false, nil
}

// setScalar stores v into a string, bool, integer or float, refusing
// another TOML type and a number out of dst's range.
func setScalar(dst reflect.Value, v any) error {
	t := dst.Type()
	switch t.Kind() {
	case reflect.String:
		if s, ok := v.(string); ok {
			dst.SetString(s)
			return nil
		}
	case reflect.Bool:
		if b, ok := v.(bool); ok {
			dst.SetBool(b)
			return nil
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		if n, ok := v.(int64); ok {
			if dst.OverflowInt(n) {
				return fmt.Errorf("%d out of range (%d..%d)", n, minInt(t), maxInt(t))
			}
			dst.SetInt(n)
			return nil
		}
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		if n, ok := v.(int64); ok {
			if n < 0 || dst.OverflowUint(uint64(n)) {
				return fmt.Errorf("%d out of range (0..%d)", n, maxUint(t))
			}
			dst.SetUint(uint64(n))
			return nil
		}
	case reflect.Float32, reflect.Float64:
		switch n := v.(type) {
		case float64:
			if dst.OverflowFloat(n) {
				return fmt.Errorf("%g out of range", n)
			}
			dst.SetFloat(n)
			return nil
		case int64:
			dst.SetFloat(float64(n))
			return nil
		}
	}
	return mismatch(dst, v)
}

// setList stores a TOML array into a slice, or an array of its length.
func setList(dst reflect.Value, v any, depth int) error {
	t := dst.Type()
	items, ok := arrayItems(v)
	if !ok {
		return mismatch(dst, v)
	}
	if t.Kind() == reflect.Array && len(items) != t.Len() {
		return fmt.Errorf("want an array of %d items, got %d", t.Len(), len(items))
	}
	if t.Kind() == reflect.Slice {
		dst.Set(reflect.MakeSlice(t, len(items), len(items)))
	}
	for i, it := range items {
		if err := setValueDepth(dst.Index(i), it, depth+1); err != nil {
			return fmt.Errorf("item %d: %w", i+1, err)
		}
	}
	return nil
}

// setMap stores a TOML table into a map with string keys, key by key in
// sorted order.
func setMap(dst reflect.Value, v any, depth int) error {
	t := dst.Type()
	m, ok := v.(map[string]any)
	if !ok || t.Key().Kind() != reflect.String {
		return mismatch(dst, v)
	}
	out := reflect.MakeMapWithSize(t, len(m))
	for _, k := range sortedKeys(m) {
		ev := reflect.New(t.Elem()).Elem()
		if err := setValueDepth(ev, m[k], depth+1); err != nil {
			return fmt.Errorf("key %q: %w", k, err)
		}
		out.SetMapIndex(reflect.ValueOf(k).Convert(t.Key()), ev)
	}
	dst.Set(out)
	return nil
}

// setStruct stores a TOML table into a struct's fields (Fields), refusing
// an unknown key with the nearest field name as a suggestion.
func setStruct(dst reflect.Value, v any, depth int) error {
	m, ok := v.(map[string]any)
	if !ok {
		return mismatch(dst, v)
	}
	fields := Fields(dst.Type())
	for _, k := range sortedKeys(m) {
		f, ok := FindField(fields, k)
		if !ok {
			msg := fmt.Sprintf("unknown key %q", k)
			if s := Nearest(k, FieldNames(fields)); s != "" {
				msg += fmt.Sprintf(", did you mean %q?", s)
			}
			return fmt.Errorf("%s", msg)
		}
		if err := setValueDepth(FieldValue(dst, f), m[k], depth+1); err != nil {
			return fmt.Errorf("key %q: %w", k, err)
		}
	}
	return nil
}

func arrayItems(v any) ([]any, bool) {
	switch x := v.(type) {
	case []any:
		return x, true
	case []map[string]any:
		out := make([]any, len(x))
		for i := range x {
			out[i] = x[i]
		}
		return out, true
	}
	return nil, false
}

// SetText converts one inline argument s into dst by dst's kind, as the
// TOML value of the same key would be. A double-quoted argument is
// unquoted first.
func SetText(dst reflect.Value, s string) error {
	if len(s) >= 2 && s[0] == '"' && s[len(s)-1] == '"' {
		u, err := strconv.Unquote(s)
		if err != nil {
			return fmt.Errorf("bad quoted argument %s", s)
		}
		s = u
	}
	t := dst.Type()
	if t == durationType {
		d, err := time.ParseDuration(s)
		if err != nil {
			return fmt.Errorf("bad duration %s (want e.g. 1s, 250ms)", Quote(s))
		}
		dst.SetInt(int64(d))
		return nil
	}
	if tu, ok := textUnmarshaler(dst); ok {
		if err := tu.UnmarshalText([]byte(s)); err != nil {
			return fmt.Errorf("bad value %s: %v", Quote(s), err)
		}
		return nil
	}
	bad := func() error { return fmt.Errorf("want %s, got %s", wantName(t), Quote(s)) }
	switch t.Kind() {
	case reflect.String:
		dst.SetString(s)
	case reflect.Bool:
		switch s {
		case "true":
			dst.SetBool(true)
		case "false":
			dst.SetBool(false)
		default:
			return bad()
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		n, err := strconv.ParseInt(strings.ReplaceAll(s, "_", ""), 0, 64)
		if err != nil {
			return bad()
		}
		if dst.OverflowInt(n) {
			return fmt.Errorf("%d out of range (%d..%d)", n, minInt(t), maxInt(t))
		}
		dst.SetInt(n)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		n, err := strconv.ParseUint(strings.ReplaceAll(s, "_", ""), 0, 64)
		if err != nil {
			return bad()
		}
		if dst.OverflowUint(n) {
			return fmt.Errorf("%d out of range (0..%d)", n, maxUint(t))
		}
		dst.SetUint(n)
	case reflect.Float32, reflect.Float64:
		f, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return bad()
		}
		if dst.OverflowFloat(f) {
			return fmt.Errorf("%g out of range", f)
		}
		dst.SetFloat(f)
	case reflect.Slice:
		// One argument for a list key is a list of one.
		ev := reflect.New(t.Elem()).Elem()
		if err := SetText(ev, s); err != nil {
			return err
		}
		dst.Set(reflect.Append(reflect.MakeSlice(t, 0, 1), ev))
	case reflect.Pointer:
		nv := reflect.New(t.Elem())
		if err := SetText(nv.Elem(), s); err != nil {
			return err
		}
		dst.Set(nv)
	default:
		return fmt.Errorf("a %s cannot be given as an inline argument; use an [elements] table", wantName(t))
	}
	return nil
}

// AppendText appends inline argument s to the slice dst (for a variadic
// key).
func AppendText(dst reflect.Value, s string) error {
	ev := reflect.New(dst.Type().Elem()).Elem()
	if err := SetText(ev, s); err != nil {
		return err
	}
	dst.Set(reflect.Append(dst, ev))
	return nil
}

func minInt(t reflect.Type) int64 { return -1 << (t.Bits() - 1) }
func maxInt(t reflect.Type) int64 { return 1<<(t.Bits()-1) - 1 }
func maxUint(t reflect.Type) uint64 {
	if t.Bits() == 64 {
		return math.MaxUint64
	}
	return 1<<t.Bits() - 1
}
