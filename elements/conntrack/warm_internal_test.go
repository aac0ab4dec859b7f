package conntrack

import (
	"math/rand/v2"
	"testing"

	"github.com/junction-dataplane/junction/packet"
)

// TestReplyPrefetch: warmNew notes, for each packet of a chunk, the bucket
// its flow's reply tuple will be linked into if the packet creates a flow
// (a tracked packet whose tuple is in no flow), and 0 for every other
// packet (an existing flow's, one that is not tracked), whatever an
// earlier chunk noted there: warmReplies prefetches exactly those.
func TestReplyPrefetch(t *testing.T) {
	tb := NewTable(256, DefaultTimeouts(), func() int64 { return 1 })
	rng := rand.New(rand.NewPCG(5, 6))
	key := func() Tuple {
		return Tuple{Src: 10<<24 | uint32(rng.IntN(300)), Dst: 8<<24 | 8, Sport: uint16(1000 + rng.IntN(3)), Dport: 53, Proto: packet.ProtoUDP}
	}
	for round := range 100 {
		n := 1 + rng.IntN(chunk)
		keys := make([]Tuple, n)
		res := make([]int, n)
		for i := range keys {
			keys[i] = key()
			if rng.IntN(2) == 0 {
				keys[i] = keys[i].Inverse() // a reply, if the flow exists
			}
			if rng.IntN(8) == 0 {
				res[i] = resMalformed
			}
		}
		hs := make([]uint32, n)
		found := make([]uint32, n)
		tb.warm(keys, hs, 2, found)
		tb.warmNew(keys, hs, res, found)
		for i := range keys {
			var want uintptr
			if _, _, exists := tb.lookupIn(&keys[i], hs[i]); !exists && res[i] == resOK {
				r := keys[i].Inverse()
				want = tb.bucketAddr(tb.hash(&r))
			}
			if tb.replyPF[i] != want {
				t.Fatalf("round %d packet %d (%+v, result %d): reply bucket %#x, want %#x", round, i, keys[i], res[i], tb.replyPF[i], want)
			}
		}
		// Create some of the flows (evicting when full), as track
		// would, so that later chunks find flows in both directions.
		for i := range keys {
			if res[i] == resOK && rng.IntN(2) == 0 {
				if _, _, ok := tb.Lookup(&keys[i]); !ok {
					tb.Create(&keys[i], 1)
				}
			}
		}
	}
}
