package afxdp

import (
	"fmt"
	"testing"

	"github.com/junction-dataplane/junction/drivers/internal/drvtest"
	"github.com/junction-dataplane/junction/internal/netns"
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

// BenchmarkVethRing is BenchmarkVeth (native XDP) with the former default
// rings (1024 descriptors, 4096 frames) and the current ones, side by
// side: run it with -count to interleave them.
func BenchmarkVethRing(b *testing.B) {
	for _, rc := range []struct{ ring, frames int }{{1024, 4096}, {DefaultRing, DefaultFrames}} {
		b.Run(fmt.Sprintf("ring=%d,frames=%d", rc.ring, rc.frames), func(b *testing.B) {
			pr := drvtest.NewPair(b, 1)
			open := func(ns *netns.NS, ifname string) *Device {
				c := cfg(ifname, "native")
				c.Ring, c.Frames = rc.ring, rc.frames
				d, err := openIn(b, ns, c, 1)
				if err != nil {
					b.Fatal(err)
				}
				return d
			}
			rx := open(pr.DevNS, pr.DevIf)
			tx := open(pr.PeerNS, pr.PeerIf)
			drvtest.BenchVeth(b, tx, rx, pr.DevMAC, pr.PeerMAC)
		})
	}
}
