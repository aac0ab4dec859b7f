package main

import (
	"github.com/junction-dataplane/junction/plugins/examples/sampler"
	"github.com/junction-dataplane/junction/plugins/sdk"
)

func main() {
	sdk.Serve(sampler.Element())
}
