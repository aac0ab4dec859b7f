// Command sampler serves the FlowSampler element as a Junction plugin.
//
//	go build -o bin/sampler ./plugins/examples/sampler/cmd/sampler
package main
