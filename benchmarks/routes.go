package benchmarks

import (
	"net/netip"
	"os"

	"github.com/junction-dataplane/junction/elements/ip"
)

// WriteRoutes writes to path the routes file of the routing benchmarks
// (routing_test.go and benchmarks/report): n synthetic IPv4 prefixes
// (ip.GenerateRoutes, seed 1, 300 next hops), all out of port 1 so that
// every variant takes the same output path, and bench-l3.toml's own
// routes (10.1.0.0/24 out of port 0, 10.2.0.0/24 and the default via
// 10.2.0.2 out of port 1), which take the place of any synthetic route of
// the same prefix.
func WriteRoutes(path string, n int) error {
	rs := ip.GenerateRoutes(ip.GenOptions{Seed: 1, Routes: n, NextHops: 300, Ports: 1})
	fixed := map[netip.Prefix]bool{}
	for _, s := range []string{"10.1.0.0/24", "10.2.0.0/24", "0.0.0.0/0"} {
		fixed[netip.MustParsePrefix(s)] = true
	}
	out := rs[:0]
	for _, r := range rs {
		if !fixed[r.Prefix] {
			r.Out = 1
			out = append(out, r)
		}
	}
	out = append(out,
		ip.Route{Prefix: netip.MustParsePrefix("10.1.0.0/24"), Out: 0},
		ip.Route{Prefix: netip.MustParsePrefix("10.2.0.0/24"), Out: 1},
		ip.Route{Prefix: netip.MustParsePrefix("0.0.0.0/0"), NextHop: netip.MustParseAddr("10.2.0.2"), Out: 1})
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := ip.WriteRoutes(f, out); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
