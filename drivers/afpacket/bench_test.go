package afpacket

import (
	"testing"

	"github.com/junction-dataplane/junction/drivers/internal/drvtest"
)

// BenchmarkVeth sends 64-byte frames from an afpacket device on one end
// of a veth to an afpacket device on the other.
func BenchmarkVeth(b *testing.B) {
	pr := drvtest.NewPair(b, 1)
	rx, err := openIn(b, pr.DevNS, cfg(pr.DevIf), 1)
	if err != nil {
		b.Fatal(err)
	}
	tx, err := openIn(b, pr.PeerNS, cfg(pr.PeerIf), 1)
	if err != nil {
		b.Fatal(err)
	}
	drvtest.BenchVeth(b, tx, rx, pr.DevMAC, pr.PeerMAC)
}
