package ip

import (
	"math/rand/v2"
	"net/netip"
	"testing"

	"github.com/junction-dataplane/junction/packet"
)

// TestLookup6BatchAgrees: the interleaved batch walk gives what lookup6
// gives, packet by packet, on nested random routes and on batches of every
// size up to two chunks.
func TestLookup6BatchAgrees(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	rs := GenerateRoutes(GenOptions{Seed: 5, Routes6: 3000, Default: rng.IntN(2) == 0})
	tb, err := NewTable(rs)
	if err != nil {
		t.Fatal(err)
	}
	f := tb.cur.Load()
	pool := packet.NewPool(256)
	out := make([]uint16, 130)
	for round := 0; round < 200; round++ {
		n := 1 + rng.IntN(129)
		pkts := make([]*packet.Packet, n)
		for i := range pkts {
			a := rs[rng.IntN(len(rs))].Prefix.Addr().As16()
			for j := rng.IntN(17); j < 16; j++ {
				a[j] = byte(rng.Uint32())
			}
			fr := make([]byte, 14+40)
			fr[14] = 0x60
			copy(fr[14+24:], a[:])
			p := pool.Get()
			p.SetFrame(fr)
			pkts[i] = p
		}
		f.lookup6Batch(pkts, out[:n])
		for i, p := range pkts {
			a := [16]byte(p.Data[14+24:])
			if want := f.lookup6(&a); out[i] != want {
				t.Fatalf("round %d packet %d: batch %d, lookup6 %d", round, i, out[i], want)
			}
			p.Free()
		}
	}
}

// TestBadAddr6Reference checks the word-wise source and destination tests
// against netip's classification, on edge and random addresses.
func TestBadAddr6Reference(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 9))
	addrs := []string{"::", "::1", "::2", "::ffff:10.0.0.1", "::fffe:10.0.0.1", "fe80::1", "febf::1", "fec0::1",
		"ff02::1", "fe7f::1", "2001:db8::1", "0:0:0:1::", "::1:0:0:0"}
	var list [][16]byte
	for _, s := range addrs {
		list = append(list, netipMust(s))
	}
	for range 100000 {
		var a [16]byte
		for i := range a {
			if rng.IntN(3) > 0 {
				a[i] = byte(rng.Uint32())
			}
		}
		if rng.IntN(4) == 0 {
			a[0], a[1] = 0xfe, byte(rng.Uint32())
		}
		list = append(list, a)
	}
	for _, a := range list {
		ad := netipFrom(a)
		wantSrc := ad.IsMulticast() || ad.IsLinkLocalUnicast() || ad.Is4In6() || ad.IsUnspecified() || ad.IsLoopback()
		wantDst := ad.IsLinkLocalUnicast() || ad.IsUnspecified() || ad.IsLoopback()
		if got := badSrc6(&a); got != wantSrc {
			t.Fatalf("badSrc6(%v) = %v", ad, got)
		}
		if got := badDst6(&a); got != wantDst {
			t.Fatalf("badDst6(%v) = %v", ad, got)
		}
	}
}

func netipMust(s string) [16]byte     { return netip.MustParseAddr(s).As16() }
func netipFrom(a [16]byte) netip.Addr { return netip.AddrFrom16(a) }
