package ip

import (
	"math/rand/v2"
	"testing"

	"github.com/google/gopacket/layers"
	"github.com/junction-dataplane/junction/elements/elementtest"
	"github.com/junction-dataplane/junction/packet"
)

// TestAnyFrame feeds every element random and mutated frames, with odd L3
// offsets too: no panic, and every packet is either passed on or dropped.
func TestAnyFrame(t *testing.T) {
	cfgs := map[string]any{
		"CheckIPHeader": nil,
		"DecTTL":        nil,
		"ICMPError":     icmpCfg(11, 0),
		"IPLookup":      &IPLookupConfig{Routes: []string{"0.0.0.0/1 out 0", "128.0.0.0/2 via 10.0.0.1 out 1", "1.2.3.4/32 out 2"}, Miss: -1},
	}
	seeds := [][]byte{
		mkFrame(t, frameOpts{payload: 20}),
		mkFrame(t, frameOpts{options: true, proto: layers.IPProtocolICMPv4, icmpType: 8}),
		mkFrame(t, frameOpts{ttl: 1, proto: layers.IPProtocolTCP}),
	}
	for name, cfg := range cfgs {
		t.Run(name, func(t *testing.T) {
			if c, ok := cfg.(*IPLookupConfig); ok {
				c2 := *c
				cfg = &c2
			}
			h := elementtest.New(t, name, cfg, nil)
			rng := rand.New(rand.NewPCG(11, 13))
			for range 300 {
				var frames [][]byte
				for range 1 + rng.IntN(64) {
					var f []byte
					if rng.IntN(2) == 0 {
						f = make([]byte, rng.IntN(120))
						for i := range f {
							f[i] = byte(rng.Uint32())
						}
						if len(f) > 14 && rng.IntN(2) == 0 {
							f[14] = 0x40 | f[14]&0xf // version 4, random IHL
						}
					} else {
						s := seeds[rng.IntN(len(seeds))]
						f = append([]byte(nil), s[:rng.IntN(len(s)+1)]...)
						for range rng.IntN(4) {
							if len(f) > 0 {
								f[rng.IntN(len(f))] = byte(rng.Uint32())
							}
						}
					}
					frames = append(frames, f)
				}
				batch := make([]*packet.Packet, 0, len(frames))
				for _, f := range frames {
					p := h.Packet(f)
					if rng.IntN(8) == 0 {
						p.L3 = uint16(rng.IntN(140))
					}
					batch = append(batch, p)
				}
				h.PushBatch(0, batch...)
				h.CheckNoLeak()
				h.Reset()
			}
		})
	}
}
