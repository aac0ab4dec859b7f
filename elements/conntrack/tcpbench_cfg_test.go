package conntrack_test

import "github.com/junction-dataplane/junction/elements/conntrack"

// tcpBenchConfig is BenchmarkConntrackTCP's config: window tracking on, as
// a graph file has it by default.
func tcpBenchConfig(capacity int) *conntrack.Config {
	return &conntrack.Config{Capacity: capacity, TCPWindow: true}
}
