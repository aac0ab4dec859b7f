package route

import (
	"bufio"
	"io"
	"math/rand/v2"
	"net/netip"
	"slices"

	"github.com/junction-dataplane/junction/packet"
)

// GenOptions describe a synthetic route table (GenerateRoutes).
type GenOptions struct {
	Seed     uint64
	Routes   int // IPv4 routes
	Routes6  int // IPv6 routes
	NextHops int // distinct next-hop addresses; default 300
	Ports    int // output ports the next hops are spread over; default 2
	// ECMP is the share of routes (0..1) given 2..4 equal-cost paths.
	ECMP float64
	// Default adds 0.0.0.0/0 (and ::/0 with Routes6) via the first next hop.
	Default bool
}

// v4Lengths is the IPv4 prefix-length mix of a full BGP table (shares in
// per mille, after the public table statistics of the 2020s: about 60 %
// /24, then /22, /23, /21, /20, /19, /16; a thin tail of short prefixes and
// a few longer than /24, which real tables filter out but internal ones
// carry).
var v4Lengths = [33]int{
	8: 1, 9: 1, 10: 1, 11: 2, 12: 4, 13: 6, 14: 10, 15: 12, 16: 14,
	17: 9, 18: 14, 19: 24, 20: 36, 21: 42, 22: 110, 23: 100, 24: 606,
	25: 2, 26: 2, 27: 1, 28: 1, 29: 1, 30: 1, 32: 1,
}

// v6Lengths is the IPv6 mix: /48 dominates, then /32, /44, /40, /36, /29.
var v6Lengths = map[int]int{
	19: 2, 20: 4, 24: 6, 28: 10, 29: 25, 32: 120, 33: 10, 36: 30, 40: 60,
	44: 90, 45: 5, 46: 15, 47: 10, 48: 600, 56: 5, 64: 8,
}

// GenerateRoutes makes a synthetic table with a realistic prefix-length
// distribution: distinct prefixes drawn over the unicast space (1.0.0.0 to
// 223.255.255.255 without 127/8; 2000::/3 for IPv6), each via one of
// NextHops addresses (10.x for IPv4, 2001:db8:ffff::/48 for IPv6) on port
// hop mod Ports. The same options give the same table.
func GenerateRoutes(o GenOptions) []Route {
	if o.NextHops <= 0 {
		o.NextHops = 300
	}
	if o.Ports <= 0 {
		o.Ports = 2
	}
	rng := rand.New(rand.NewPCG(o.Seed, 0x6a756e6374696f6e))
	var cum [33]int
	total := 0
	for l, w := range v4Lengths {
		total += w
		cum[l] = total
	}
	hop4 := func(i int) Hop {
		return Hop{Via: packet.AddrFromU32(0x0a000000 | 0xff<<16 | uint32(i/250)<<8 | uint32(1+i%250)), Out: i % o.Ports}
	}
	hop6 := func(i int) Hop {
		return Hop{Via: netip.AddrFrom16([16]byte{0x20, 0x01, 0x0d, 0xb8, 0xff, 0xff, 15: byte(i), 14: byte(i >> 8)}), Out: i % o.Ports}
	}
	paths := func(r *Route, hop func(int) Hop) {
		h := hop(rng.IntN(o.NextHops))
		r.NextHop, r.Out = h.Via, h.Out
		if o.ECMP > 0 && rng.Float64() < o.ECMP {
			for range 1 + rng.IntN(3) {
				r.Also = append(r.Also, hop(rng.IntN(o.NextHops)))
			}
		}
	}
	out := make([]Route, 0, o.Routes+o.Routes6+2)
	seen4 := make(map[uint64]struct{}, o.Routes)
	for len(seen4) < o.Routes {
		x := rng.IntN(total)
		l := 8
		for cum[l] <= x {
			l++
		}
		var a uint32
		for {
			a = rng.Uint32()
			if f := a >> 24; f >= 1 && f <= 223 && f != 127 {
				break
			}
		}
		a &= mask4(l)
		k := uint64(a)<<8 | uint64(l)
		if _, dup := seen4[k]; dup {
			continue
		}
		seen4[k] = struct{}{}
		r := Route{Prefix: netip.PrefixFrom(packet.AddrFromU32(a), l)}
		paths(&r, hop4)
		out = append(out, r)
	}
	var lens6 []int
	for l, w := range v6Lengths {
		for range w {
			lens6 = append(lens6, l)
		}
	}
	// Map iteration order is random: sort for determinism.
	slices.Sort(lens6)
	seen6 := make(map[netip.Prefix]struct{}, o.Routes6)
	for len(seen6) < o.Routes6 {
		l := lens6[rng.IntN(len(lens6))]
		var b [16]byte
		hi, lo := rng.Uint64(), rng.Uint64()
		for i := range 8 {
			b[i] = byte(hi >> (56 - 8*i))
			b[8+i] = byte(lo >> (56 - 8*i))
		}
		b[0] = 0x20 | b[0]&0x1f // 2000::/3
		p := netip.PrefixFrom(netip.AddrFrom16(b), l).Masked()
		if _, dup := seen6[p]; dup {
			continue
		}
		seen6[p] = struct{}{}
		r := Route{Prefix: p}
		paths(&r, hop6)
		out = append(out, r)
	}
	if o.Default {
		h := hop4(0)
		out = append(out, Route{Prefix: netip.PrefixFrom(netip.IPv4Unspecified(), 0), NextHop: h.Via, Out: h.Out})
		if o.Routes6 > 0 {
			h = hop6(0)
			out = append(out, Route{Prefix: netip.PrefixFrom(netip.IPv6Unspecified(), 0), NextHop: h.Via, Out: h.Out})
		}
	}
	return out
}

// WriteRoutes writes routes in the routes_file syntax, one per line.
func WriteRoutes(w io.Writer, routes []Route) error {
	bw := bufio.NewWriterSize(w, 1<<16)
	for _, r := range routes {
		bw.WriteString(r.String())
		bw.WriteByte('\n')
	}
	return bw.Flush()
}
