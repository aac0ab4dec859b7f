package drivers

import (
	"bytes"
	"strings"
	"testing"

	"github.com/junction-dataplane/junction/conf"
)

type docTestConfig struct {
	Interface string `toml:"interface"`
	Ring      int    `toml:"ring"`
	Fast      bool   `toml:"fast"`
	Skipped   int    `toml:"-"`
}

func docTestDriver(keys []conf.Key) *Driver {
	return &Driver{Name: "doctest",
		NewConfig: func() any { return &docTestConfig{Ring: 64} },
		Doc: conf.Doc{Summary: "a driver for this test", Text: "What it does.", Queues: "One RX queue.",
			Keys: keys, Stats: "rx_packets", Example: "[devices.x]\ndriver = \"doctest\""}}
}

func docTestKeys() []conf.Key {
	return []conf.Key{
		{Name: "interface", Type: "string", Required: true, Doc: "the interface"},
		{Name: "ring", Type: "int", Default: "64", Doc: "ring size"},
		{Name: "fast", Type: "bool", Default: "false", Doc: "go fast"},
	}
}

func TestCheckDoc(t *testing.T) {
	if err := CheckDoc(docTestDriver(docTestKeys())); err != nil {
		t.Fatalf("a matching page: %v", err)
	}
	for _, c := range []struct {
		name string
		edit func(k []conf.Key) []conf.Key
		want string
	}{
		{"missing", func(k []conf.Key) []conf.Key { return k[:2] }, `key "fast" not documented`},
		{"extra", func(k []conf.Key) []conf.Key { return append(k, conf.Key{Name: "gone", Type: "int", Doc: "x"}) }, `key "gone" documented but not in the config`},
		{"order", func(k []conf.Key) []conf.Key { k[1], k[2] = k[2], k[1]; return k }, "order"},
		{"default", func(k []conf.Key) []conf.Key { k[1].Default = "128"; return k }, `key "ring": documented default 128, the config's is 64`},
		{"no text", func(k []conf.Key) []conf.Key { k[2].Doc = ""; return k }, `key "fast" has no type or no text`},
		{"twice", func(k []conf.Key) []conf.Key { return append(k, k[0]) }, `key "interface" documented twice`},
	} {
		err := CheckDoc(docTestDriver(c.edit(docTestKeys())))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want %q", c.name, err, c.want)
		}
	}
}

func TestWriteDoc(t *testing.T) {
	var b bytes.Buffer
	if err := WriteDoc(&b, docTestDriver(docTestKeys())); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	rest := out
	for _, want := range []string{"NAME\n    doctest - a driver for this test", "SYNOPSIS\n    [devices.NAME]\n    driver = \"doctest\"\n    interface = INTERFACE",
		"DESCRIPTION", "QUEUES\n    One RX queue.", "KEYS\n    Besides driver, addresses, mac", "ring       int     64", "STATS", "EXAMPLE"} {
		i := strings.Index(rest, want)
		if i < 0 {
			t.Fatalf("missing (or out of order) %q in:\n%s", want, out)
		}
		rest = rest[i+len(want):]
	}
}
