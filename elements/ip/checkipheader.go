package ip

import (
	"encoding/binary"
	"slices"
	"sync/atomic"

	"github.com/junction-dataplane/junction/elements"
	"github.com/junction-dataplane/junction/elements/ip/route"
	"github.com/junction-dataplane/junction/packet"
)

// CheckIPHeaderConfig is CheckIPHeader's configuration.
type CheckIPHeaderConfig struct {
	BadSrc   []string `toml:"badsrc"`
	Checksum bool     `toml:"checksum"`
	// ForwardOnly: the packets are on their way to be forwarded, so
	// destinations no router forwards fail (RFC 1812 5.3.7).
	ForwardOnly bool `toml:"forward_only"`
	// Devices name the router's own devices: packets to the directed
	// broadcast address of one of their subnets fail.
	Devices []string `toml:"devices"`
	// SourceRoute lets packets with a loose or strict source route option
	// through; by default they fail (RFC 7126 4.3, 4.4).
	SourceRoute bool `toml:"source_route"`

	badsrc []prefix4
}

// Validate parses badsrc.
func (c *CheckIPHeaderConfig) Validate() error {
	c.badsrc = c.badsrc[:0]
	for i, s := range c.BadSrc {
		p, err := route.ParsePrefix4(s)
		if err != nil {
			return elements.Errorf("badsrc", "entry %d: %v", i+1, err)
		}
		if p.Masked() != p {
			return elements.Errorf("badsrc", "entry %d: prefix %v has host bits set (did you mean %v?)", i+1, p, p.Masked())
		}
		a := p.Addr().As4()
		addr := uint32(a[0])<<24 | uint32(a[1])<<16 | uint32(a[2])<<8 | uint32(a[3])
		var mask uint32
		if p.Bits() > 0 {
			mask = ^uint32(0) << (32 - p.Bits())
		}
		c.badsrc = append(c.badsrc, prefix4{addr, mask})
	}
	return nil
}

// The checks, in the order they are made; each has a counter of its own.
const (
	chkTooShort = iota
	chkVersion
	chkIHL
	chkIHLFrame
	chkLen
	chkLenFrame
	chkChecksum
	chkOptions
	chkSourceRoute
	chkFragment
	chkMartian
	chkLimitedBcast
	chkMulticast
	chkMartianDst
	chkDirectedBcast
	chkN
)

var checkNames = [chkN]string{
	chkTooShort: "too short",
	chkVersion:  "bad version",
	chkIHL:      "bad ihl",
	chkIHLFrame: "ihl beyond frame",
	chkLen:      "bad total length",
	chkLenFrame: "total length beyond frame",
	chkChecksum: "bad checksum",
	chkOptions:  "bad options",
	// Checked whatever forward_only says: a source route lets the
	// sender pick the path past filters, an oversized fragment attacks
	// the reassembly of the host it is for.
	chkSourceRoute: "source route",
	chkFragment:    "oversized fragment",
	chkMartian:     "martian source",
	// Destinations, checked only with forward_only.
	chkLimitedBcast:  "limited broadcast",
	chkMulticast:     "multicast destination",
	chkMartianDst:    "martian destination",
	chkDirectedBcast: "directed broadcast",
}

func init() {
	elements.Register(elements.Type{
		Name:      "CheckIPHeader",
		NewConfig: func() any { return &CheckIPHeaderConfig{Checksum: true, ForwardOnly: true} },
		New:       newCheckIPHeader,
		In:        1, Out: 2,
		Optional: []int{1},
		Doc:      checkIPHeaderManual,
	})
}

// CheckIPHeader is one worker's instance.
type CheckIPHeader struct {
	filter   // verdict: keep, or the failed check (a counter, output 1)
	checksum bool
	badsrc   []prefix4
	fwdOnly  bool
	// bcasts are the directed broadcast addresses of the devices'
	// subnets; every one has the bits of bcastLow set, a quick filter
	// that passes one destination in 2^(host bits of the smallest subnet).
	bcasts   []uint32
	bcastLow uint32
	srcRoute bool // source_route: LSRR and SSRR pass

	// Packets carrying record route or timestamp options, forwarded
	// with them unchanged (rare: one atomic add each).
	recordRoute, timestamp *atomic.Uint64
}

func newCheckIPHeader(cfg any, ctx *elements.Context) (elements.Element, error) {
	c := cfg.(*CheckIPHeaderConfig)
	// The reasons are plain counters, not drop reasons: a bad packet is
	// dropped only if output 1 is unconnected, and then that output counts
	// the drop itself; counting it here as a drop too would count it twice.
	e := &CheckIPHeader{filter: newFilter(ctx, checkNames[:]),
		checksum: c.Checksum, badsrc: append([]prefix4(nil), c.badsrc...), fwdOnly: c.ForwardOnly, bcastLow: ^uint32(0), srcRoute: c.SourceRoute,
		recordRoute: ctx.Stats.Counter("record route option"), timestamp: ctx.Stats.Counter("timestamp option")}
	names := c.Devices
	if len(names) == 0 && c.ForwardOnly {
		// Every device of the graph: directed broadcast is off by
		// default (RFC 2644).
		if l, ok := ctx.Devices.(elements.DeviceLister); ok {
			names = l.DeviceNames()
		}
	}
	for _, name := range names {
		if ctx.Devices == nil {
			return nil, elements.Errorf("devices", "no device %q", name)
		}
		dev, _, ok := ctx.Devices.Device(name)
		if !ok || dev == nil {
			return nil, elements.Errorf("devices", "no device %q", name)
		}
		for _, p := range dev.Info().Addresses {
			if !p.Addr().Is4() || p.Bits() > 30 {
				continue // /31 and /32 have no broadcast address (RFC 3021)
			}
			host := uint32(1)<<(32-p.Bits()) - 1
			a := p.Addr().As4()
			b := binary.BigEndian.Uint32(a[:]) | host
			if !slices.Contains(e.bcasts, b) {
				e.bcasts = append(e.bcasts, b)
			}
			e.bcastLow &= host
		}
	}
	return e, nil
}

// check returns the failed check's index, or -1 if the packet is good.
func (e *CheckIPHeader) check(p *packet.Packet) int {
	h, ok := ipv4At(p)
	if !ok {
		return chkTooShort
	}
	if h[0]>>4 != 4 {
		return chkVersion
	}
	ihl := h.IHL()
	if ihl < packet.IPv4MinLen {
		return chkIHL
	}
	if ihl > len(h) {
		return chkIHLFrame
	}
	tl := h.TotalLen()
	if tl < ihl {
		return chkLen
	}
	if tl > len(h) {
		return chkLenFrame
	}
	if e.checksum && !h.ChecksumValid() {
		return chkChecksum
	}
	if ihl > packet.IPv4MinLen {
		if r := e.checkOptions(h[packet.IPv4MinLen:ihl]); r >= 0 {
			return r
		}
	}
	// A fragment's data ends at offset*8 + its length after the header;
	// beyond 65,535 the reassembled packet cannot exist, and a host that
	// reassembles it anyway overflows its buffer.
	if off := int(binary.BigEndian.Uint16(h[6:]) & 0x1fff); off != 0 && off*8+tl-ihl > 0xffff {
		return chkFragment
	}
	src := h.SrcU32()
	if martian(src) {
		return chkMartian
	}
	for _, bp := range e.badsrc {
		if bp.contains(src) {
			return chkMartian
		}
	}
	if e.fwdOnly {
		if r := e.checkDst(h.DstU32()); r >= 0 {
			return r
		}
	}
	// Trim link-layer padding so that later elements see the IP packet's
	// true end (as Click's CheckIPHeader does).
	p.Data = p.Data[:int(p.L3)+tl]
	return -1
}

// IPv4 option types (RFC 791) checkOptions knows.
const (
	optEOL  = 0
	optNOP  = 1
	optRR   = 7
	optTS   = 68
	optLSRR = 131
	optSSRR = 137
)

// checkOptions walks the options (the header after its first 20 bytes)
// and returns the failed check, or -1. Only packets with options pay for
// it.
func (e *CheckIPHeader) checkOptions(o []byte) int {
	for i := 0; i < len(o); {
		t := o[i]
		if t == optEOL {
			return -1
		}
		if t == optNOP {
			i++
			continue
		}
		if i+1 >= len(o) {
			return chkOptions
		}
		l := int(o[i+1])
		if l < 2 || i+l > len(o) {
			return chkOptions
		}
		switch t {
		case optLSRR, optSSRR:
			if !e.srcRoute {
				return chkSourceRoute
			}
		case optRR:
			e.recordRoute.Add(1)
		case optTS:
			e.timestamp.Add(1)
		}
		i += l
	}
	return -1
}

// checkDst returns the failed destination check, or -1. A unicast
// destination costs one compare on its first octet, plus one on its low
// bits when devices are named.
func (e *CheckIPHeader) checkDst(dst uint32) int {
	if f := dst >> 24; f == 0 || f == 127 || f >= 224 {
		switch {
		case dst == 0xffffffff:
			return chkLimitedBcast
		case f < 240 && f >= 224:
			return chkMulticast
		default:
			return chkMartianDst
		}
	}
	if len(e.bcasts) > 0 && dst&e.bcastLow == e.bcastLow {
		for _, b := range e.bcasts {
			if dst == b {
				return chkDirectedBcast
			}
		}
	}
	return -1
}

// Push checks every packet; good ones stay in b (compacted in place), bad
// ones go to output 1.
func (e *CheckIPHeader) Push(_ int, b *packet.Batch) {
	v := e.verdicts(b)
	for i, p := range b.Pkts {
		v[i] = int8(e.check(p))
	}
	e.push(b, v)
}
