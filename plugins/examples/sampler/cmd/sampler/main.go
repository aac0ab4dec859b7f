// Command sampler serves the FlowSampler element as a Junction plugin.
//
//	go build -o bin/sampler ./plugins/examples/sampler/cmd/sampler
package main

import (
	"github.com/junction-dataplane/junction/plugins/examples/sampler"
	"github.com/junction-dataplane/junction/plugins/sdk"
)

func main() {
	sdk.Serve(sampler.Element())
}
