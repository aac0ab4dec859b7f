package reloadtest

import (
	"net/netip"
	"os"
	"path/filepath"
	"testing"

	"github.com/junction-dataplane/junction/elements"
	"github.com/junction-dataplane/junction/elements/ip"
	"github.com/junction-dataplane/junction/pipeline"
)

// BenchmarkLoadUnchangedRoutes: loading the 30-element graph again, for the
// same router (graph state), when its million-route file has not changed
// (what a reload pays before building).
func BenchmarkLoadUnchangedRoutes(b *testing.B) {
	dir := b.TempDir()
	routes := filepath.Join(dir, "full.routes")
	rs := ip.GenerateRoutes(ip.GenOptions{Seed: 1, Routes: 1_000_000, NextHops: 300, Ports: 1})
	rs = append(rs, ip.Route{Prefix: netip.MustParsePrefix("0.0.0.0/0"), NextHop: netip.MustParseAddr("10.2.0.2")})
	f, _ := os.Create(routes)
	ip.WriteRoutes(f, rs)
	f.Close()
	newSeqLog(2, 1)
	path := perfGraph(b, dir, routes, 0, "c24")
	router := elements.NewGraphState()
	if _, err := pipeline.LoadFor(path, router); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for range b.N {
		if _, err := pipeline.LoadFor(path, router); err != nil {
			b.Fatal(err)
		}
	}
}
