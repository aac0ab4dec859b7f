package vlan

import (
	"encoding/binary"

	"github.com/junction-dataplane/junction/elements"
	"github.com/junction-dataplane/junction/packet"
)

const (
	tpidQ  = 0x8100 // 802.1Q customer tag
	tpidAD = 0x88a8 // 802.1ad service tag
	tagLen = 4
	// vidReserved is the id 802.1Q reserves; no VLAN carries it.
	vidReserved = 0xfff
)

// isTag reports whether EtherType t is a VLAN tag's.
func isTag(t uint16) bool { return t == tpidQ || t == tpidAD }

func init() {
	elements.Register(elements.Type{
		Name:      "VLANDecap",
		NewConfig: func() any { return &DecapConfig{} },
		New:       newDecap,
		In:        1,
		Out:       1,
		Doc:       decapManual,
	})
	elements.Register(elements.Type{
		Name:      "VLANEncap",
		NewConfig: func() any { return &EncapConfig{} },
		New:       newEncap,
		In:        1,
		Out:       1,
		Doc:       encapManual,
	})
}

// DecapConfig is VLANDecap's config: it has no keys.
type DecapConfig struct{}

// Decap is one worker's VLANDecap.
type Decap struct {
	out                                    *elements.Output
	st                                     *elements.Stats
	untagged, truncated, reserved, tooMany elements.Reason
}

func newDecap(_ any, ctx *elements.Context) (elements.Element, error) {
	st := ctx.Stats
	return &Decap{out: ctx.Outputs[0], st: st,
		untagged: st.Reason("untagged"), truncated: st.Reason("truncated"),
		reserved: st.Reason("reserved vlan"), tooMany: st.Reason("too many tags")}, nil
}

// Push removes each frame's outer tag in place: the 12 address bytes move
// up over it and the frame starts 4 bytes later in its buffer.
func (e *Decap) Push(in int, b *packet.Batch) {
	k := 0
	for _, p := range b.Pkts {
		d := p.Data
		if len(d) < packet.EthernetLen+tagLen {
			if len(d) >= packet.EthernetLen && !isTag(binary.BigEndian.Uint16(d[12:])) {
				e.st.Drop(p, e.untagged)
			} else {
				e.st.Drop(p, e.truncated)
			}
			continue
		}
		if !isTag(binary.BigEndian.Uint16(d[12:])) {
			e.st.Drop(p, e.untagged)
			continue
		}
		if binary.BigEndian.Uint16(d[14:])&0x0fff == vidReserved {
			e.st.Drop(p, e.reserved)
			continue
		}
		if isTag(binary.BigEndian.Uint16(d[16:])) {
			// A second tag (QinQ): allowed, but not a third.
			if len(d) < packet.EthernetLen+2*tagLen {
				e.st.Drop(p, e.truncated)
				continue
			}
			if isTag(binary.BigEndian.Uint16(d[20:])) {
				e.st.Drop(p, e.tooMany)
				continue
			}
		}
		copy(d[tagLen:tagLen+12], d[:12])
		p.Data = d[tagLen:]
		// 14, or 18 past a QinQ frame's inner tag.
		p.L3 = packet.L3Offset(p.Data)
		b.Pkts[k] = p
		k++
	}
	b.Truncate(k)
	if k > 0 {
		e.out.Push(b)
	}
}

// EncapConfig is VLANEncap's config.
type EncapConfig struct {
	VLAN     int    `toml:"vlan"`
	Priority int    `toml:"priority"`
	TPID     string `toml:"tpid"`

	tag [tagLen]byte
}

// Validate checks the id, the priority and the TPID and builds the tag.
func (c *EncapConfig) Validate() error {
	if c.VLAN < 1 || c.VLAN > 4094 {
		return elements.Errorf("vlan", "%d out of range 1-4094 (0 is a priority tag without a VLAN, 4095 is reserved)", c.VLAN)
	}
	if c.Priority < 0 || c.Priority > 7 {
		return elements.Errorf("priority", "%d out of range 0-7", c.Priority)
	}
	tpid := uint16(tpidQ)
	switch c.TPID {
	case "", "802.1q", "802.1Q":
	case "802.1ad":
		tpid = tpidAD
	default:
		return elements.Errorf("tpid", "%q: want \"802.1q\" or \"802.1ad\"", c.TPID)
	}
	binary.BigEndian.PutUint16(c.tag[:], tpid)
	binary.BigEndian.PutUint16(c.tag[2:], uint16(c.Priority)<<13|uint16(c.VLAN))
	return nil
}

// Encap is one worker's VLANEncap.
type Encap struct {
	tag                            [tagLen]byte
	out                            *elements.Output
	st                             *elements.Stats
	truncated, tooMany, noHeadroom elements.Reason
}

func newEncap(cfg any, ctx *elements.Context) (elements.Element, error) {
	c := cfg.(*EncapConfig)
	if err := c.Validate(); err != nil {
		return nil, err
	}
	st := ctx.Stats
	return &Encap{tag: c.tag, out: ctx.Outputs[0], st: st,
		truncated: st.Reason("truncated"), tooMany: st.Reason("too many tags"),
		noHeadroom: st.Reason("no headroom")}, nil
}

// Push tags each frame in place: the addresses move 4 bytes back into the
// headroom and the tag goes between them and the EtherType.
func (e *Encap) Push(in int, b *packet.Batch) {
	k := 0
	for _, p := range b.Pkts {
		d := p.Data
		if len(d) < packet.EthernetLen {
			e.st.Drop(p, e.truncated)
			continue
		}
		if isTag(binary.BigEndian.Uint16(d[12:])) && len(d) >= packet.EthernetLen+tagLen &&
			isTag(binary.BigEndian.Uint16(d[16:])) {
			e.st.Drop(p, e.tooMany)
			continue
		}
		h := p.Headroom()
		if h < tagLen {
			e.st.Drop(p, e.noHeadroom)
			continue
		}
		d = p.Buffer()[h-tagLen : h+len(d)]
		copy(d[:12], d[tagLen:tagLen+12])
		copy(d[12:16], e.tag[:])
		p.Data = d
		p.L3 += tagLen // the network header is where it was, 4 bytes further from the start
		b.Pkts[k] = p
		k++
	}
	b.Truncate(k)
	if k > 0 {
		e.out.Push(b)
	}
}
