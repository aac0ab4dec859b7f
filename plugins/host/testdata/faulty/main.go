// Command faulty is the host's test plugin: built-in elements served
// through sdk.Builtin (for the byte-identical round trip), an element with
// known semantics (Mangle), and one that misbehaves on demand (Faulty).
package main

import (
	"os"
	"time"

	_ "github.com/junction-dataplane/junction/elements/all"
	"github.com/junction-dataplane/junction/plugins/internal/wire"
	"github.com/junction-dataplane/junction/plugins/sdk"
)

// MangleConfig: frames shorter than min are dropped ("too short"); others
// get their last byte inverted, lose trim bytes, and go to output
// Data[0] & 1.
type MangleConfig struct {
	Min  int `toml:"min"`
	Trim int `toml:"trim"`
}

func (c *MangleConfig) Validate() error {
	if c.Min < 1 {
		return sdk.Errorf("min", "%d: must be at least 1", c.Min)
	}
	return nil
}

type mangle struct{ c *MangleConfig }

func (m *mangle) Process(b *sdk.Batch) {
	for i := range b.Pkts {
		p := &b.Pkts[i]
		if len(p.Data) < m.c.Min {
			p.DropReason(0)
			continue
		}
		p.Data[len(p.Data)-1] ^= 0xff
		p.SetLen(len(p.Data) - m.c.Trim)
		p.Send(int(p.Data[0] & 1))
	}
}

// FaultyConfig: after `after` good batches, misbehave as mode says;
// mode "hang-validate" never returns from validation.
type FaultyConfig struct {
	Mode  string `toml:"mode"`
	After int    `toml:"after"`
}

func (c *FaultyConfig) Validate() error {
	switch c.Mode {
	case "ok", "panic", "exit", "sleep", "badport", "badlen", "growlen":
		return nil
	case "hang-validate":
		time.Sleep(time.Hour)
	}
	return sdk.Errorf("mode", "%q: unknown mode", c.Mode)
}

type faulty struct {
	c *FaultyConfig
	n int
}

func (f *faulty) Process(b *sdk.Batch) {
	f.n++
	if f.n <= f.c.After {
		return // all to output 0, unchanged
	}
	switch f.c.Mode {
	case "panic":
		panic("faulty plugin: deliberate panic")
	case "exit":
		os.Exit(3)
	case "sleep":
		time.Sleep(time.Hour)
	case "badport":
		b.Pkts[len(b.Pkts)-1].Send(7)
	case "badlen":
		// Lie past the SDK: a length beyond the buffer can only come from
		// a broken or malicious plugin, so forge the descriptor.
		forge = true
	case "growlen":
		p := &b.Pkts[0]
		p.SetLen(cap(p.Data)) // legal: grow within the buffer
	}
}

var forge bool

func main() {
	wire.AfterServe = func(r *wire.Region) {
		if forge {
			r.Desc(0).SetLen(wire.SlotSize + 100)
		}
	}
	sdk.Serve(
		sdk.Builtin("DecTTL"),
		sdk.Builtin("CheckIPHeader"),
		sdk.Builtin("Classifier"),
		sdk.Builtin("EtherRewrite"),
		sdk.Element{
			Name:      "Mangle",
			Doc:       sdk.Doc{Summary: "test element: drop short, invert last byte, trim, port by first byte"},
			Outputs:   2,
			Reasons:   []string{"too short"},
			NewConfig: func() any { return &MangleConfig{Min: 20} },
			New:       func(cfg any) (sdk.Processor, error) { return &mangle{cfg.(*MangleConfig)}, nil },
		},
		sdk.Element{
			Name:      "Faulty",
			Doc:       sdk.Doc{Summary: "test element that misbehaves on demand"},
			Outputs:   2,
			NewConfig: func() any { return &FaultyConfig{Mode: "ok"} },
			New:       func(cfg any) (sdk.Processor, error) { return &faulty{c: cfg.(*FaultyConfig)}, nil },
		},
	)
}
