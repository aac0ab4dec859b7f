package ip

import (
	"encoding/binary"
	"fmt"
	"net/netip"

	"github.com/junction-dataplane/junction/elements"
	"github.com/junction-dataplane/junction/elements/ip/route"
	"github.com/junction-dataplane/junction/packet"
)

// ICMPErrorConfig is ICMPError's configuration.
type ICMPErrorConfig struct {
	Src      string       `toml:"src"`
	ICMPType NumberOrName `toml:"icmp_type"`
	ICMPCode NumberOrName `toml:"icmp_code"`
	TTL      int          `toml:"ttl"`
	MTU      int          `toml:"mtu"`
	Rate     int          `toml:"rate"`
	Burst    int          `toml:"burst"`

	src       [4]byte
	auto      bool // src = "auto" (icmpsrc.go)
	typ, code uint8
}

// icmpTypes are the error types ICMPError builds, by every name it accepts
// (after normName folding). Redirect and source quench are left out: a
// redirect needs a gateway address per packet, and RFC 6633 retired source
// quench.
var icmpTypes = map[string]int{
	"unreachable": packet.ICMPDestUnreachable, "destunreachable": packet.ICMPDestUnreachable,
	"destinationunreachable": packet.ICMPDestUnreachable,
	"timeexceeded":           packet.ICMPTimeExceeded,
	"parameterproblem":       packet.ICMPParameterProblem, "paramproblem": packet.ICMPParameterProblem,
}

// icmpCodes are the code names, per type (RFC 792, RFC 1812 5.2.7.1).
var icmpCodes = map[int]map[string]int{
	packet.ICMPDestUnreachable: {
		"net": 0, "host": 1, "protocol": 2, "port": 3, "needfrag": 4, "fragmentationneeded": 4,
		"sourceroute": 5, "netunknown": 6, "hostunknown": 7, "netprohibited": 9,
		"hostprohibited": 10, "adminprohibited": 13, "prohibited": 13,
	},
	packet.ICMPTimeExceeded:     {"ttl": 0, "transit": 0, "reassembly": 1},
	packet.ICMPParameterProblem: {"pointer": 0, "missingoption": 1, "length": 2},
}

// Validate resolves names and checks ranges.
func (c *ICMPErrorConfig) Validate() error {
	if c.Src == "" {
		return elements.Errorf("src", "missing: the router's address to send ICMP errors from")
	}
	if c.auto = isAuto(c.Src); !c.auto {
		a, err := netip.ParseAddr(c.Src)
		if err != nil || !a.Is4() {
			return elements.Errorf("src", "%q is neither an IPv4 address nor auto", c.Src)
		}
		if !route.Unicast4(a) {
			return elements.Errorf("src", "%v is not a unicast address", a)
		}
		c.src = a.As4()
	}

	t, ok := c.ICMPType.lookup(icmpTypes)
	if !ok {
		return elements.Errorf("icmp_type", "unknown type %q: want unreachable, timeexceeded, parameterproblem or 3, 11, 12", c.ICMPType.Name)
	}
	switch t {
	case -1:
		return elements.Errorf("icmp_type", "missing: unreachable, timeexceeded, parameterproblem or 3, 11, 12")
	case packet.ICMPDestUnreachable, packet.ICMPTimeExceeded, packet.ICMPParameterProblem:
	default:
		return elements.Errorf("icmp_type", "type %d is not an error type ICMPError builds: want 3 (unreachable), 11 (timeexceeded) or 12 (parameterproblem)", t)
	}
	code, err := icmpCode(c.ICMPCode, t, icmpCodes)
	if err != nil {
		return err
	}
	c.typ, c.code = uint8(t), code

	needFrag := t == packet.ICMPDestUnreachable && code == 4
	switch {
	case needFrag && (c.MTU < 68 || c.MTU > 65535):
		return elements.Errorf("mtu", "unreachable code 4 (needfrag) needs the next-hop mtu, 68..65535 (got %d)", c.MTU)
	case !needFrag && c.MTU != 0:
		return elements.Errorf("mtu", "mtu is only used with unreachable code 4 (needfrag)")
	}
	if c.TTL < 1 || c.TTL > 255 {
		return elements.Errorf("ttl", "%d out of range 1..255", c.TTL)
	}
	return checkRate(c.Rate, c.Burst)
}

func init() {
	elements.Register(elements.Type{
		Name: "ICMPError",
		NewConfig: func() any {
			return &ICMPErrorConfig{ICMPType: NumberOrName{Num: -1}, TTL: 64, Rate: 100, Burst: 10}
		},
		New: newICMPError,
		In:  1, Out: 1,
		Doc: icmpErrorManual,
	})
}

// ICMPError is one worker's instance.
type ICMPError struct {
	out *elements.Output
	st  *elements.Stats

	src       [4]byte
	auto      *auto4 // src = "auto": chosen per packet (icmpsrc.go)
	typ, code uint8
	ttl       uint8
	rest      uint32 // the ICMP header's second word (needfrag: next-hop MTU)
	id        uint16

	tb  tokenBucket  // rate limit (ratelimit.go)
	now func() int64 // read once per batch; tests replace it

	badHdr, aboutICMP, truncICMP, frag, bcastDst, linkBcast, badSrc, limited elements.Reason
}

const nanoPerToken = 1e9

func newICMPError(cfg any, ctx *elements.Context) (elements.Element, error) {
	c := cfg.(*ICMPErrorConfig)
	if c.typ == 0 {
		// Type 0 is echo reply, never an error: the config was not validated.
		return nil, fmt.Errorf("ICMPError: config not validated")
	}
	st := ctx.Stats
	e := &ICMPError{out: ctx.Outputs[0], st: st, src: c.src, typ: c.typ, code: c.code, ttl: uint8(c.TTL),
		// Different workers start their IDs far apart, so that errors from
		// two workers to one host rarely share an ID.
		id:        uint16(ctx.Worker) * 0x9e37,
		tb:        newTokenBucket(c.Rate, c.Burst),
		now:       elements.Nanotime,
		badHdr:    st.Reason("bad ip header"),
		aboutICMP: st.Reason("about icmp error"),
		truncICMP: st.Reason("truncated icmp"),
		frag:      st.Reason("fragment"),
		bcastDst:  st.Reason("broadcast destination"),
		linkBcast: st.Reason("link broadcast"),
		badSrc:    st.Reason("bad source"),
		limited:   st.Reason("rate limited"),
	}
	if c.typ == packet.ICMPDestUnreachable && c.code == 4 {
		e.rest = uint32(c.MTU)
	}
	if c.auto {
		a, err := newAuto4(ctx)
		if err != nil {
			return nil, err
		}
		e.auto = a
	}
	return e, nil
}

// Push turns every packet it may answer into an ICMP error in place.
func (e *ICMPError) Push(_ int, b *packet.Batch) {
	if e.tb.limited() {
		e.tb.refill(e.now())
	}
	n0 := len(b.Pkts)
	n := 0
	for _, p := range b.Pkts {
		if r, ok := e.build(p); !ok {
			e.st.Drop(p, r)
			continue
		}
		b.Pkts[n] = p
		n++
	}
	if n != n0 {
		b.Truncate(n)
	}
	e.out.Push(b)
}

// Offsets of the message built in place.
const (
	errIP    = packet.EthernetLen
	errICMP  = errIP + packet.IPv4MinLen
	errQuote = errICMP + packet.ICMPLen // 42
	quoteL4  = 8                        // payload bytes quoted (RFC 792)
)

// build rewrites p into the ICMP error about it, or returns why not.
func (e *ICMPError) build(p *packet.Packet) (elements.Reason, bool) {
	h, ok := ipv4At(p)
	if !ok || h[0]>>4 != 4 {
		return e.badHdr, false
	}
	ihl := h.IHL()
	if ihl < packet.IPv4MinLen || ihl > len(h) {
		return e.badHdr, false
	}
	// What the packet really holds: bounded by the frame and, when sane,
	// by its total length (the rest is link-layer padding).
	avail := len(h)
	if tl := h.TotalLen(); tl >= ihl && tl < avail {
		avail = tl
	}
	ff := h.FlagsFrag()
	if ff&packet.IPv4FragOffset != 0 {
		return e.frag, false
	}
	if h.Protocol() == packet.ProtoICMP {
		if avail-ihl < packet.ICMPLen {
			return e.truncICMP, false
		}
		if packet.ICMP(h[ihl:]).IsError() {
			return e.aboutICMP, false
		}
	}
	dst := h.DstU32()
	if dst>>28 == 0xe || dst == 0xffffffff {
		return e.bcastDst, false
	}
	l3 := int(p.L3)
	var osrc, odst [6]byte
	if l3 >= packet.EthernetLen {
		copy(odst[:], p.Data[0:6])
		copy(osrc[:], p.Data[6:12])
		if odst[0]&1 != 0 { // the group bit: broadcast or multicast
			return e.linkBcast, false
		}
	}
	if martian(h.SrcU32()) {
		return e.badSrc, false
	}
	if e.tb.limited() && !e.tb.take() {
		return e.limited, false
	}

	q := ihl + min(quoteL4, avail-ihl)
	origSrc := h.Src4()
	src := e.src
	if e.auto != nil {
		binary.BigEndian.PutUint32(src[:], e.auto.pick(h.SrcU32(), int(p.InDevice)))
	}

	f := errorFrame(p, l3, errQuote, q, &osrc, &odst, packet.EtherTypeIPv4)

	ip := packet.IPv4(f[errIP:errICMP])
	ip[0] = 0x45
	ip[1] = 0xc0
	ip.SetTotalLen(packet.IPv4MinLen + packet.ICMPLen + q)
	e.id++
	ip.SetID(e.id)
	ip.SetFlagsFrag(0)
	ip.SetTTL(e.ttl)
	ip.SetProtocol(packet.ProtoICMP)
	ip.SetChecksum(0)
	ip.SetSrc4(src)
	ip.SetDst4(origSrc)
	ip.SetChecksum(packet.Checksum(ip))

	ic := packet.ICMP(f[errICMP:])
	ic.SetType(e.typ)
	ic.SetCode(e.code)
	ic.SetChecksum(0)
	ic.SetRest(e.rest)
	ic.SetChecksum(packet.Checksum(ic))

	sent(p, f)
	return 0, true
}
