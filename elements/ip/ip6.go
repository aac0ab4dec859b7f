package ip

import (
	"encoding/binary"
	"net/netip"

	"github.com/junction-dataplane/junction/elements"
	"github.com/junction-dataplane/junction/elements/ip/route"
	"github.com/junction-dataplane/junction/packet"
)

// CheckIP6HeaderConfig is CheckIP6Header's configuration.
type CheckIP6HeaderConfig struct {
	BadSrc []string `toml:"badsrc"`

	badsrc []netip.Prefix
}

// Validate parses badsrc.
func (c *CheckIP6HeaderConfig) Validate() error {
	c.badsrc = c.badsrc[:0]
	for i, s := range c.BadSrc {
		p, err := route.ParsePrefix(s)
		if err != nil || !p.Addr().Is6() {
			return elements.Errorf("badsrc", "entry %d: bad prefix %q: want an IPv6 prefix such as 2001:db8::/32", i+1, s)
		}
		if p.Masked() != p {
			return elements.Errorf("badsrc", "entry %d: prefix %v has host bits set (did you mean %v?)", i+1, p, p.Masked())
		}
		c.badsrc = append(c.badsrc, p)
	}
	return nil
}

const (
	chk6TooShort = iota
	chk6Version
	chk6LenFrame
	chk6Src
	chk6Dst
	chk6N
)

var check6Names = [chk6N]string{
	chk6TooShort: "too short",
	chk6Version:  "bad version",
	chk6LenFrame: "payload length beyond frame",
	chk6Src:      "martian source",
	chk6Dst:      "bad destination",
}

func init() {
	elements.Register(elements.Type{
		Name:      "CheckIP6Header",
		NewConfig: func() any { return &CheckIP6HeaderConfig{} },
		New:       newCheckIP6Header,
		In:        1, Out: 2,
		Optional: []int{1},
		Doc: elements.Doc{
			Synopsis: "CheckIP6Header([badsrc])",
			Summary:  "checks IPv6 headers before forwarding; bad packets go to output 1 or are dropped",
			Ports: "input 0: frames with an IPv6 header at the L3 offset.\n" +
				"output 0: packets that pass every check, trimmed to 40 + payload length.\n" +
				"output 1 (optional): packets that fail a check. Unconnected, they are dropped and counted as \"unconnected output 1\".",
			Keys: []elements.Key{
				{Name: "badsrc", Type: "[]string", Doc: "extra IPv6 source prefixes to treat as martian"},
			},
			Stats: "One counter per failed check: \"too short\" (no 40 bytes at L3), \"bad version\" (not 6), " +
				"\"payload length beyond frame\", \"martian source\" (multicast, unspecified, loopback, link-local, " +
				"IPv4-mapped, or a badsrc prefix), \"bad destination\" (unspecified, loopback or link-local: never forwarded).",
			Example: "\"cls[2] -> CheckIP6Header -> DecHopLimit -> rt\"  # with cls :: Classifier(arp, ip, ip6, -)",
			SeeAlso: "CheckIPHeader, DecHopLimit, IPLookup",
			Text: "The IPv6 counterpart of CheckIPHeader: there is no header checksum to verify. RFC 4291 and " +
				"RFC 8200: a router does not forward packets from or to link-local, loopback or unspecified " +
				"addresses, nor from multicast sources. Extension headers are not interpreted.",
		},
	})
	elements.Register(elements.Type{
		Name: "DecHopLimit",
		New:  newDecHopLimit,
		In:   1, Out: 2,
		Optional: []int{1},
		Doc: elements.Doc{
			Synopsis: "DecHopLimit",
			Summary:  "decrements the IPv6 hop limit; expired packets go to output 1",
			Ports: "input 0: IPv6 packets (header at the L3 offset; normally after CheckIP6Header).\n" +
				"output 0: packets whose hop limit was > 1, decremented.\n" +
				"output 1 (optional): packets with hop limit <= 1, unchanged. Unconnected, they are dropped and " +
				"counted as \"unconnected output 1\".",
			Stats: "\"hop limit expired\": packets with hop limit <= 1 (a counter); drops: \"too short\" (no 40-byte " +
				"header at L3), \"not ipv6\" (version is not 6), \"unconnected output 1\".",
			Example: `"CheckIP6Header -> hl :: DecHopLimit -> rt", "hl[1] -> Discard"`,
			SeeAlso: "DecTTL, CheckIP6Header",
			Text: "The IPv6 counterpart of DecTTL. IPv6 has no header checksum, so nothing else changes; " +
				"an L4 checksum does not cover the hop limit.",
		},
	})
}

// CheckIP6Header is one worker's instance.
type CheckIP6Header struct {
	filter // verdict: keep, or the failed check (a counter, output 1)
	badsrc []netip.Prefix
}

func newCheckIP6Header(cfg any, ctx *elements.Context) (elements.Element, error) {
	c := cfg.(*CheckIP6HeaderConfig)
	e := &CheckIP6Header{filter: newFilter(ctx, check6Names[:]),
		badsrc: append([]netip.Prefix(nil), c.badsrc...)}
	return e, nil
}

// badSrc6 reports a source a router must not forward from. The address
// is read as two big-endian words: comparing 16-byte arrays (or 10 and 15
// byte prefixes) costs calls and byte loops on the per-packet path.
func badSrc6(a *[16]byte) bool {
	hi := binary.BigEndian.Uint64(a[0:8])
	lo := binary.BigEndian.Uint64(a[8:16])
	switch {
	case hi>>56 == 0xff: // multicast
		return true
	case hi>>54 == 0xfe80>>6: // fe80::/10 link-local
		return true
	case hi == 0 && lo>>32 == 0xffff: // ::ffff:0:0/96 IPv4-mapped
		return true
	case hi == 0 && lo <= 1: // :: and ::1
		return true
	}
	return false
}

func badDst6(a *[16]byte) bool {
	hi := binary.BigEndian.Uint64(a[0:8])
	if hi>>54 == 0xfe80>>6 {
		return true
	}
	return hi == 0 && binary.BigEndian.Uint64(a[8:16]) <= 1
}

func (e *CheckIP6Header) check(p *packet.Packet) int {
	l3 := int(p.L3)
	if l3 > len(p.Data) || len(p.Data)-l3 < packet.IPv6Len {
		return chk6TooShort
	}
	h := packet.IPv6(p.Data[l3:])
	if h.Version() != 6 {
		return chk6Version
	}
	n := packet.IPv6Len + h.PayloadLen()
	if n > len(h) {
		return chk6LenFrame
	}
	src := (*[16]byte)(h[8:24])
	if badSrc6(src) {
		return chk6Src
	}
	if len(e.badsrc) > 0 {
		a := netip.AddrFrom16(*src)
		for _, bp := range e.badsrc {
			if bp.Contains(a) {
				return chk6Src
			}
		}
	}
	if badDst6((*[16]byte)(h[24:40])) {
		return chk6Dst
	}
	p.Data = p.Data[:l3+n] // trim link-layer padding
	return -1
}

// Push checks every packet; good ones stay in b, bad ones go to output 1.
func (e *CheckIP6Header) Push(_ int, b *packet.Batch) {
	v := e.verdicts(b)
	for i, p := range b.Pkts {
		v[i] = int8(e.check(p))
	}
	e.push(b, v)
}

// DecHopLimit is one worker's instance.
type DecHopLimit struct {
	filter // verdict: keep (decremented), expired (output 1), or a drop
}

func newDecHopLimit(_ any, ctx *elements.Context) (elements.Element, error) {
	return &DecHopLimit{newFilter(ctx, []string{"hop limit expired"}, "too short", "not ipv6")}, nil
}

// Push decrements the hop limit of every live packet in place.
func (e *DecHopLimit) Push(_ int, b *packet.Batch) {
	v := e.verdicts(b)
	for i, p := range b.Pkts {
		v[i] = decHopLimit(p)
	}
	e.push(b, v)
}

// decHopLimit decrements p's hop limit, or says why not: expired (0, a
// counter), too short or not IPv6 (drops).
func decHopLimit(p *packet.Packet) int8 {
	l3 := int(p.L3)
	if l3 > len(p.Data) || len(p.Data)-l3 < packet.IPv6Len {
		return dropBase
	}
	h := packet.IPv6(p.Data[l3:])
	if h.Version() != 6 {
		return dropBase + 1
	}
	hl := h.HopLimit()
	if hl <= 1 {
		return 0
	}
	h.SetHopLimit(hl - 1)
	return keep
}
