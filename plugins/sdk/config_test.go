package sdk

import (
	"strings"
	"testing"
	"time"
)

type commonKeys struct {
	Limit int `toml:"limit"`
}

type embeddingConfig struct {
	commonKeys
	Every time.Duration `toml:"every"`
	Count uint          `toml:"count"`
}

// TestDecodeConfigAsTheLoader: a plugin's config decodes by the graph
// loader's rules (conf.DecodeTable): the keys of an embedded struct are the
// config's own, a duration takes a string, a negative number for an
// unsigned key is refused, and an unknown key gets a suggestion.
func TestDecodeConfigAsTheLoader(t *testing.T) {
	e := &Element{Name: "E", NewConfig: func() any { return &embeddingConfig{} }}
	cfg, errs := decodeConfig(e, "limit = 7\nevery = \"250ms\"\ncount = 3")
	if len(errs) != 0 {
		t.Fatalf("errors: %v", errs)
	}
	if c := cfg.(*embeddingConfig); c.Limit != 7 || c.Every != 250*time.Millisecond || c.Count != 3 {
		t.Errorf("decoded %+v", c)
	}
	_, errs = decodeConfig(e, "count = -1\nlimt = 2")
	if len(errs) != 2 {
		t.Fatalf("errors: %v, want two", errs)
	}
	if errs[0].Key != "count" || errs[1].Key != "limt" || !strings.Contains(errs[1].Msg, `did you mean "limit"?`) {
		t.Errorf("errors: %+v", errs)
	}
}
