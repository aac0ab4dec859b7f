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
		Doc:      checkIP6HeaderManual,
	})
	elements.Register(elements.Type{
		Name: "DecHopLimit",
		New:  newDecHopLimit,
		In:   1, Out: 2,
		Optional: []int{1},
		Doc:      decHopLimitManual,
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
