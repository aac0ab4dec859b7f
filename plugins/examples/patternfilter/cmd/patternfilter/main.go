package main

import (
	"github.com/junction-dataplane/junction/plugins/examples/patternfilter"
	"github.com/junction-dataplane/junction/plugins/sdk"
)

type filter struct{ m *patternfilter.Matcher }

// Process reads each frame in place in shared memory (no copy) and picks
// its output.
func (f *filter) Process(b *sdk.Batch) {
	for i := range b.Pkts {
		p := &b.Pkts[i]
		if f.m.Match(p.Data) {
			p.Send(1)
		}
	}
}

func main() {
	sdk.Serve(Element())
}

// Element describes the plugin element.
func Element() sdk.Element {
	return sdk.Element{
		Name:      "PatternFilter",
		Doc:       patternfilter.Doc,
		Outputs:   2,
		ReadOnly:  true,
		NewConfig: patternfilter.NewConfig,
		New: func(cfg any) (sdk.Processor, error) {
			return &filter{m: patternfilter.NewMatcher(cfg.(*patternfilter.Config))}, nil
		},
	}
}
