package ip

import (
	"encoding/binary"
	"fmt"
	"net/netip"

	"github.com/junction-dataplane/junction/elements"
	"github.com/junction-dataplane/junction/packet"
)

// ICMPv6 error types (RFC 4443 section 3).
const (
	icmp6Unreachable  = 1
	icmp6TooBig       = 2
	icmp6TimeExceeded = 3
	icmp6ParamProblem = 4
	icmp6Redirect     = 137
	// ipv6MinMTU is the IPv6 minimum link MTU: an error message never
	// exceeds it (RFC 4443 2.4 (c)).
	ipv6MinMTU = 1280
)

// ICMP6ErrorConfig is ICMP6Error's configuration.
type ICMP6ErrorConfig struct {
	Src      string       `toml:"src"`
	ICMPType NumberOrName `toml:"icmp_type"`
	ICMPCode NumberOrName `toml:"icmp_code"`
	HopLimit int          `toml:"hoplimit"`
	MTU      int          `toml:"mtu"`
	Pointer  NumberOrName `toml:"pointer"`
	Rate     int          `toml:"rate"`
	Burst    int          `toml:"burst"`

	src        [16]byte
	auto       bool // src = "auto" (icmpsrc.go)
	typ, code  uint8
	pointer    int
	ptrRouting bool // pointer = "routing": per packet
}

// pointerRouting is the pointer key's "routing" (RFC 5095).
const pointerRouting = -2

var icmp6Types = map[string]int{
	"unreachable": icmp6Unreachable, "destunreachable": icmp6Unreachable, "destinationunreachable": icmp6Unreachable,
	"toobig": icmp6TooBig, "packettoobig": icmp6TooBig,
	"timeexceeded":     icmp6TimeExceeded,
	"parameterproblem": icmp6ParamProblem, "paramproblem": icmp6ParamProblem,
}

var icmp6Codes = map[int]map[string]int{
	icmp6Unreachable: {"noroute": 0, "adminprohibited": 1, "prohibited": 1, "beyondscope": 2, "address": 3,
		"addressunreachable": 3, "port": 4, "policy": 5, "reject": 6, "rejectroute": 6},
	icmp6TooBig:       {"0": 0},
	icmp6TimeExceeded: {"hoplimit": 0, "transit": 0, "reassembly": 1},
	icmp6ParamProblem: {"header": 0, "nextheader": 1, "option": 2},
}

// Validate resolves names and checks ranges.
func (c *ICMP6ErrorConfig) Validate() error {
	if c.Src == "" {
		return elements.Errorf("src", "missing: the router's IPv6 address to send ICMPv6 errors from")
	}
	if c.auto = isAuto(c.Src); !c.auto {
		a, err := netip.ParseAddr(c.Src)
		if err != nil || !a.Is6() || a.Is4In6() || a.Zone() != "" {
			return elements.Errorf("src", "%q is neither an IPv6 address nor auto", c.Src)
		}
		if a.IsMulticast() || a.IsUnspecified() || a.IsLoopback() {
			return elements.Errorf("src", "%v is not a unicast address", a)
		}
		c.src = a.As16()
	}
	t, ok := c.ICMPType.lookup(icmp6Types)
	if !ok {
		return elements.Errorf("icmp_type", "unknown type %q: want unreachable, toobig, timeexceeded, parameterproblem or 1..4", c.ICMPType.Name)
	}
	if t < icmp6Unreachable || t > icmp6ParamProblem {
		return elements.Errorf("icmp_type", "type %d is not an ICMPv6 error type: want 1 (unreachable), 2 (toobig), 3 (timeexceeded) or 4 (parameterproblem)", t)
	}
	code, err := icmpCode(c.ICMPCode, t, icmp6Codes)
	if err != nil {
		return err
	}
	c.typ, c.code = uint8(t), code
	switch {
	case t == icmp6TooBig && (c.MTU < ipv6MinMTU || c.MTU > 65535):
		return elements.Errorf("mtu", "toobig needs the next-hop mtu, 1280..65535 (got %d)", c.MTU)
	case t != icmp6TooBig && c.MTU != 0:
		return elements.Errorf("mtu", "mtu is only used with toobig")
	case t != icmp6ParamProblem && (c.Pointer.Num != 0 || c.Pointer.Name != ""):
		return elements.Errorf("pointer", "pointer is only used with parameterproblem")
	}
	ptr, ok := c.Pointer.lookup(map[string]int{"routing": pointerRouting})
	switch {
	case !ok:
		return elements.Errorf("pointer", "unknown pointer %q: want an offset or routing", c.Pointer.Name)
	case ptr == pointerRouting && c.Pointer.Name != "":
		c.ptrRouting = true
	case ptr < 0:
		return elements.Errorf("pointer", "%d is negative", ptr)
	default:
		c.pointer = ptr
	}
	if c.HopLimit < 1 || c.HopLimit > 255 {
		return elements.Errorf("hoplimit", "%d out of range 1..255", c.HopLimit)
	}
	return checkRate(c.Rate, c.Burst)
}

func init() {
	elements.Register(elements.Type{
		Name: "ICMP6Error",
		NewConfig: func() any {
			return &ICMP6ErrorConfig{ICMPType: NumberOrName{Num: -1}, HopLimit: 64, Rate: 100, Burst: 10}
		},
		New: newICMP6Error,
		In:  1, Out: 1,
		Doc: icmP6ErrorManual,
	})
}

// ICMP6Error is one worker's instance.
type ICMP6Error struct {
	out *elements.Output
	st  *elements.Stats

	src       [16]byte
	auto      *auto6 // src = "auto": chosen per packet (icmpsrc.go)
	typ, code uint8
	hop       uint8
	rest      uint32

	tb  tokenBucket // rate limit (ratelimit.go)
	now func() int64

	badHdr, aboutICMP, truncICMP, mcastDst, badSrc, limited elements.Reason
	noRouting                                               elements.Reason
	ptrRouting                                              bool // pointer = "routing"
}

func newICMP6Error(cfg any, ctx *elements.Context) (elements.Element, error) {
	c := cfg.(*ICMP6ErrorConfig)
	if c.typ == 0 {
		return nil, fmt.Errorf("ICMP6Error: config not validated")
	}
	st := ctx.Stats
	e := &ICMP6Error{out: ctx.Outputs[0], st: st, src: c.src, typ: c.typ, code: c.code, hop: uint8(c.HopLimit),
		tb:        newTokenBucket(c.Rate, c.Burst),
		now:       elements.Nanotime,
		badHdr:    st.Reason("bad ip6 header"),
		aboutICMP: st.Reason("about icmp6 error"),
		truncICMP: st.Reason("truncated icmp6"),
		mcastDst:  st.Reason("multicast destination"),
		badSrc:    st.Reason("bad source"),
		limited:   st.Reason("rate limited"),
	}
	if c.ptrRouting {
		e.ptrRouting, e.noRouting = true, st.Reason("no routing header")
	}
	switch c.typ {
	case icmp6TooBig:
		e.rest = uint32(c.MTU)
	case icmp6ParamProblem:
		e.rest = uint32(c.pointer)
	}
	if c.auto {
		a, err := newAuto6(ctx)
		if err != nil {
			return nil, err
		}
		e.auto = a
	}
	return e, nil
}

// Push turns every packet it may answer into an ICMPv6 error in place.
func (e *ICMP6Error) Push(_ int, b *packet.Batch) {
	if e.tb.limited() {
		e.tb.refill(e.now())
	}
	n := 0
	for _, p := range b.Pkts {
		if r, ok := e.build(p); !ok {
			e.st.Drop(p, r)
			continue
		}
		b.Pkts[n] = p
		n++
	}
	b.Truncate(n)
	e.out.Push(b)
}

const (
	err6IP    = packet.EthernetLen
	err6ICMP  = err6IP + packet.IPv6Len
	err6Quote = err6ICMP + 8 // 62
	maxQuote6 = ipv6MinMTU - packet.IPv6Len - 8
)

// badSrc6Err reports a source an error cannot go to: one that does not
// identify a single host reachable through a route.
func badSrc6Err(a []byte) bool {
	var s [16]byte
	copy(s[:], a)
	return badSrc6(&s)
}

func (e *ICMP6Error) build(p *packet.Packet) (elements.Reason, bool) {
	l3 := int(p.L3)
	if l3 > len(p.Data) || len(p.Data)-l3 < packet.IPv6Len || p.Data[l3]>>4 != 6 {
		return e.badHdr, false
	}
	h := p.Data[l3:]
	up := packet.IPv6Upper(h)
	avail := up.End
	if up.OK && up.Proto == 58 && up.FragOff == 0 {
		if up.End-up.Off < 4 {
			return e.truncICMP, false
		}
		if t := h[up.Off]; t < 128 || t == icmp6Redirect {
			return e.aboutICMP, false
		}
	}
	mcastOK := e.typ == icmp6TooBig || (e.typ == icmp6ParamProblem && e.code == 2)
	if h[24] == 0xff && !mcastOK {
		return e.mcastDst, false
	}
	var osrc, odst [6]byte
	if l3 >= packet.EthernetLen {
		copy(odst[:], p.Data[l3-14:l3-8])
		copy(osrc[:], p.Data[l3-8:l3-2])
		if odst[0]&1 != 0 && !mcastOK {
			return e.mcastDst, false
		}
	}
	if badSrc6Err(h[8:24]) {
		return e.badSrc, false
	}
	rest := e.rest
	if e.ptrRouting {
		off, _, _, ok := packet.IPv6RoutingHeader(h)
		if !ok {
			return e.noRouting, false
		}
		rest = uint32(off + 2) // the Routing Type field
	}
	if e.tb.limited() && !e.tb.take() {
		return e.limited, false
	}
	q := min(avail, maxQuote6)
	var origSrc [16]byte
	copy(origSrc[:], h[8:24])
	src := &e.src
	if e.auto != nil {
		src = e.auto.pick(h[8:24], int(p.InDevice))
	}

	f := errorFrame(p, l3, err6Quote, q, &osrc, &odst, packet.EtherTypeIPv6)
	ip := packet.IPv6(f[err6IP:])
	ip.Init()
	ip.SetPayloadLen(8 + q)
	ip.SetNextHeader(58)
	ip.SetHopLimit(e.hop)
	copy(ip[8:24], src[:])
	copy(ip[24:40], origSrc[:])
	ic := f[err6ICMP:]
	ic[0], ic[1], ic[2], ic[3] = e.typ, e.code, 0, 0
	binary.BigEndian.PutUint32(ic[4:], rest)
	ck := ^packet.Fold(packet.Sum(ic, packet.PseudoHeaderSumV6(*src, origSrc, 58, len(ic))))
	binary.BigEndian.PutUint16(ic[2:], ck)

	sent(p, f)
	return 0, true
}
