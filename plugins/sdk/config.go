package sdk

import (
	"github.com/BurntSushi/toml"

	"github.com/junction-dataplane/junction/conf"
	"github.com/junction-dataplane/junction/plugins/internal/wire"
)

// decodeConfig decodes the TOML text of an element's config table into a
// fresh config with the graph loader's decoder (conf.DecodeTable: the same
// keys, embedded structs, value rules and messages), key by key so that
// every error names its key, then runs the config's Validate.
func decodeConfig(e *Element, text string) (any, []wire.KeyErr) {
	var cfg any
	if e.NewConfig != nil {
		cfg = e.NewConfig()
	}
	var tbl map[string]any
	if _, err := toml.Decode(text, &tbl); err != nil {
		return nil, []wire.KeyErr{{Msg: "bad config: " + err.Error()}}
	}
	errs := conf.DecodeTable(e.Name, cfg, tbl)
	if len(errs) == 0 {
		return cfg, nil
	}
	out := make([]wire.KeyErr, len(errs))
	for i, ke := range errs {
		out[i] = wire.KeyErr{Key: ke.Key, Msg: ke.Err.Error()}
	}
	return nil, out
}
