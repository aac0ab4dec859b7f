package ip

import (
	"math/rand/v2"
	"net/netip"
	"testing"
)

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
