package conf

import (
	"reflect"
	"strings"
	"testing"
	"time"
)

type valEmbedded struct {
	Inner string `toml:"inner"`
}

type valConfig struct {
	valEmbedded
	Untagged int
	Skip     int `toml:"-"`
	//lint:ignore U1000 present so that decoding is seen to skip it
	hidden int               // unexported fields are not keys
	F32    float32           `toml:"f32"`
	Arr    [2]int            `toml:"arr"`
	M      map[string]int    `toml:"m"`
	P      *int              `toml:"p"`
	Any    any               `toml:"any"`
	When   time.Time         `toml:"when"`
	Tables []valEmbedded     `toml:"tables"`
	Ch     chan int          `toml:"ch"`
	Omit   string            `toml:"omit,omitempty"`
	Nested map[string][]bool `toml:"nested"`
}

func TestStructFields(t *testing.T) {
	got := FieldNames(Fields(reflect.TypeFor[valConfig]()))
	want := "inner Untagged f32 arr m p any when tables ch omit nested"
	if strings.Join(got, " ") != want {
		t.Errorf("fields %q, want %q", got, want)
	}
}

func TestSetValue(t *testing.T) {
	when := time.Date(1979, 5, 27, 7, 32, 0, 0, time.UTC)
	tests := []struct {
		key string
		v   any
		err string
	}{
		{"inner", "x", ""},
		{"Untagged", int64(3), ""},
		{"f32", 1e300, "out of range"},
		{"f32", 1.5, ""},
		{"arr", []any{int64(1), int64(2)}, ""},
		{"arr", []any{int64(1)}, "want an array of 2 items, got 1"},
		{"m", map[string]any{"a": int64(1), "b": "x"}, `key "b": want integer, got string "x"`},
		{"m", map[string]any{"a": int64(1)}, ""},
		{"p", int64(5), ""},
		{"p", "x", "want integer"},
		{"any", []any{"q"}, ""},
		{"when", when, ""},
		{"when", "yesterday", `bad value "yesterday"`},
		{"tables", []map[string]any{{"inner": "a"}, {"inner": "b"}}, ""},
		{"tables", []map[string]any{{"inner": "a"}, {"iner": "b"}}, `item 2: unknown key "iner", did you mean "inner"?`},
		{"ch", int64(1), "unsupported config Field type chan int"},
		{"omit", "o", ""},
		{"nested", map[string]any{"k": []any{true, "no"}}, `key "k": item 2: want boolean, got string "no"`},
		{"inner", strings.Repeat("a", 50), ""},
		{"Untagged", strings.Repeat("a", 50), `want integer, got string "` + strings.Repeat("a", 40) + `..."`},
	}
	fields := Fields(reflect.TypeFor[valConfig]())
	for _, tt := range tests {
		var c valConfig
		f, ok := FindField(fields, tt.key)
		if !ok {
			t.Fatalf("no Field %q", tt.key)
		}
		err := SetValue(FieldValue(reflect.ValueOf(&c).Elem(), f), tt.v)
		if tt.err == "" && err != nil || tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)) {
			t.Errorf("%s = %v: error %v, want %q", tt.key, tt.v, err, tt.err)
		}
		if tt.err == "" {
			switch tt.key {
			case "tables":
				if len(c.Tables) != 2 || c.Tables[1].Inner != "b" {
					t.Errorf("tables %+v", c.Tables)
				}
			case "p":
				if c.P == nil || *c.P != 5 {
					t.Errorf("p %v", c.P)
				}
			case "when":
				if !c.When.Equal(when) {
					t.Errorf("when %v", c.When)
				}
			case "m":
				if c.M["a"] != 1 {
					t.Errorf("m %v", c.M)
				}
			}
		}
	}
}
