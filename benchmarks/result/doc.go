// Package result is the one shape every Junction benchmark result takes
// as data: `forwarder bench -json`, the report (benchmarks/report), the
// converter of `go test -bench` output and the end-to-end scripts
// (through benchmarks/benchjson) all write a Result.
//
// A Result is one measurement campaign: what was measured (Name,
// Command), on what traffic, on what machine, and its Runs. A Run is one
// repetition of one variant; variants are told apart by Params
// ("workers": "2", "flows": "10000"), and repetitions of a variant share
// its Params, so that a reader takes the median and spread over them.
package result
