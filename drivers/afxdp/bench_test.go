package afxdp

import (
	"testing"

	"github.com/junction-dataplane/junction/drivers/internal/drvtest"
)

// BenchmarkVeth sends 64-byte frames from an afxdp device on one end of a
// veth to an afxdp device on the other (copy mode: veth has no zero-copy).
func BenchmarkVeth(b *testing.B) {
	for _, mode := range []string{"native", "generic"} {
		b.Run(mode, func(b *testing.B) {
			pr := drvtest.NewPair(b, 1)
			rx, err := openIn(b, pr.DevNS, cfg(pr.DevIf, mode), 1)
			if err != nil {
				b.Fatal(err)
			}
			tx, err := openIn(b, pr.PeerNS, cfg(pr.PeerIf, mode), 1)
			if err != nil {
				b.Fatal(err)
			}
			drvtest.BenchVeth(b, tx, rx, pr.DevMAC, pr.PeerMAC)
		})
	}
}
