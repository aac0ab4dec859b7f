package configs_test

import (
	"fmt"
	"testing"

	"github.com/junction-dataplane/junction/pipeline"
)

// TestRouterPortPaths: in the contract router each of rt's ports leads to
// one device, and says its address family, so that `forwarder route add
// … out wan` picks port 1 for an IPv4 route and port 3 for an IPv6 one.
// The ICMP errors a port's CheckMTU makes are routed again by rte, which
// sends to both devices: they are not rt's port's path.
func TestRouterPortPaths(t *testing.T) {
	g, err := pipeline.Load("router-veth.toml")
	if err != nil {
		t.Fatal(err)
	}
	got := fmt.Sprint(g.PortPaths("rt"))
	want := "[{[lan] 4} {[wan] 4} {[lan] 6} {[wan] 6}]"
	if got != want {
		t.Errorf("rt's port paths %s, want %s", got, want)
	}
	if pp := g.PortPaths("no such element"); pp != nil {
		t.Errorf("an unknown element's paths: %v", pp)
	}
}
