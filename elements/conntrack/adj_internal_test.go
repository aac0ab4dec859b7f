package conntrack

import (
	"testing"

	"github.com/junction-dataplane/junction/packet"
)

// TestCompileEthernetPerOutput: directions compiled for one output with
// different Ethernet headers (next hops) each get their own, whichever
// order they come in (the per-output memo of the last header must not
// hand one flow another's).
func TestCompileEthernetPerOutput(t *testing.T) {
	tb := NewTable(64, DefaultTimeouts(), func() int64 { return 1 })
	tb.EnableCache()
	eths := [][12]byte{{1, 1, 1, 1, 1, 1, 9}, {2, 2, 2, 2, 2, 2, 9}, {3, 3, 3, 3, 3, 3, 9}}
	type flow struct {
		idx uint32
		eth int
		out uint8
	}
	var flows []flow
	for i, e := range []int{0, 0, 1, 0, 2, 2, 1, 1, 0} {
		k := Tuple{Src: 10<<24 | uint32(i), Dst: 8<<24 | 8, Sport: uint16(1000 + i), Dport: 53, Proto: packet.ProtoUDP}
		idx, ok := tb.Create(&k, 1)
		if !ok {
			t.Fatal("create")
		}
		tb.conns[idx].Expires = 1e12
		out := uint8(1 + i%2)
		if !tb.CompileCache(CacheEntry{Out: out, Gen: 7}, idx, 0, &eths[e], 1e9) {
			t.Fatal("not compiled")
		}
		flows = append(flows, flow{idx, e, out})
	}
	for i, f := range flows {
		ce := tb.cacheFind(f.idx, 0)
		if ce == nil {
			t.Fatalf("flow %d not cached", i)
		}
		if got := *tb.Adj(ce.Adj); got != eths[f.eth] {
			t.Errorf("flow %d (output %d): Ethernet header %x, want %x", i, f.out, got, eths[f.eth])
		}
	}
}
