package icmp

import (
	"encoding/binary"
	"net/netip"
	"sync/atomic"

	"github.com/junction-dataplane/junction/elements"
	"github.com/junction-dataplane/junction/packet"
)

// Config6 is ICMP6PingResponder's config.
type Config6 struct {
	// Addresses are the router's IPv6 addresses ("2001:db8:1::1" or
	// "2001:db8:1::1/64"); words that are not addresses are device names.
	Addresses []string `toml:"addresses"`
	// Devices supply addresses from their addresses keys (IPv6 ones).
	Devices []string `toml:"devices"`
	// HopLimit of the replies.
	HopLimit int `toml:"hoplimit"`

	addrs [][16]byte
}

// Validate parses the addresses.
func (c *Config6) Validate() error {
	c.addrs = c.addrs[:0]
	rest, err := splitAddresses(c.Addresses, &c.Devices, func(s string) error {
		ip, err := parseHost6(s)
		if err == nil {
			c.addrs = append(c.addrs, ip)
		}
		return err
	})
	if err != nil {
		return err
	}
	c.Addresses = rest
	if len(c.addrs) == 0 && len(c.Devices) == 0 {
		return elements.Errorf("addresses", `required (e.g. "2001:db8:1::1"), unless key "devices" names devices`)
	}
	if c.HopLimit < 1 || c.HopLimit > 255 {
		return elements.Errorf("hoplimit", "must be 1..255, got %d", c.HopLimit)
	}
	return nil
}

// parseHost6 reads an address of the addresses key (packet.ParseHost6).
func parseHost6(s string) ([16]byte, error) {
	ip, err := packet.ParseHost6(s)
	if err != nil {
		return [16]byte{}, err
	}
	return ip.As16(), nil
}

func init() {
	elements.Register(elements.Type{
		Name:      "ICMP6PingResponder",
		NewConfig: func() any { return &Config6{HopLimit: 64} },
		New:       newResponder6,
		In:        1,
		Out:       3,
		Optional:  []int{1, 2},
		Doc:       icmP6PingResponderManual,
	})
}

// Responder6 is one worker's ICMP6PingResponder.
type Responder6 struct {
	replier
	addrs [][16]byte
	hop   uint8
	st    *elements.Stats

	truncated, notForUs, badSource, badChecksum, extHdrs elements.Reason
	multicast                                            elements.Reason // consumed

	// Packets with a type-0 routing header (RFC 5095): output 2.
	rh0Out *elements.Output
	rh0B   *packet.Batch
	rh0    *atomic.Uint64
}

func newResponder6(cfg any, ctx *elements.Context) (elements.Element, error) {
	c := cfg.(*Config6)
	addrs := append([][16]byte(nil), c.addrs...)
	devAddrs, err := deviceAddrs(ctx, c.Devices, "IPv6", func(a netip.Addr) bool { return a.Is6() && !a.Is4In6() })
	if err != nil {
		return nil, err
	}
	for _, a := range devAddrs {
		addrs = append(addrs, a.As16())
	}
	st := ctx.Stats
	return &Responder6{
		replier: newReplier(ctx),
		addrs:   addrs, hop: uint8(c.HopLimit), st: st,
		truncated:   st.Reason("truncated"),
		notForUs:    st.Reason("not for us"),
		badSource:   st.Reason("bad source"),
		badChecksum: st.Reason("bad checksum"),
		extHdrs:     st.Reason("extension headers"),
		multicast:   st.Consumption("multicast"),
		rh0Out:      ctx.Outputs[2],
		rh0B:        ctx.SideBatch(),
		rh0:         st.Counter("routing header type 0"),
	}, nil
}

func (r *Responder6) ours(a []byte) bool {
	for i := range r.addrs {
		if string(r.addrs[i][:]) == string(a) {
			return true
		}
	}
	return false
}

// Push answers the echo requests of b; other packets for us go to output 1.
func (r *Responder6) Push(_ int, b *packet.Batch) {
	k := 0
	for _, p := range b.Pkts {
		v := r.answer(p)
		if v == verdictRH0 {
			r.rh0B.Add(p)
			continue
		}
		k = r.keep(b, k, p, v)
	}
	if n := r.rh0B.Len(); n > 0 {
		r.rh0.Add(uint64(n))
		r.rh0Out.Push(r.rh0B)
	}
	r.send(b, k)
}

func (r *Responder6) answer(p *packet.Packet) verdict {
	l3 := int(p.L3)
	f := p.Data
	if l3 > len(f) || len(f)-l3 < packet.IPv6Len || f[l3]>>4 != 6 {
		r.st.Drop(p, r.truncated)
		return verdictDropped
	}
	h := packet.IPv6(f[l3:])
	pl := h.PayloadLen()
	if packet.IPv6Len+pl > len(h) {
		r.st.Drop(p, r.truncated)
		return verdictDropped
	}
	if !r.ours(h[24:40]) {
		if h[24] == 0xff {
			// To a group the router is in (all-nodes, all-routers,
			// MLDv2): nothing to answer, and nothing lost.
			r.st.Consume(p, r.multicast)
		} else {
			r.st.Drop(p, r.notForUs)
		}
		return verdictDropped
	}
	if s := h[8:24]; s[0] == 0xff || r.ours(s) || // multicast, our own; ::, ::1 (the first 15 bytes zero)
		string(s[:15]) == "\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00" {
		r.st.Drop(p, r.badSource)
		return verdictDropped
	}
	if h.NextHeader() != 58 {
		// RFC 5095: a type-0 routing header with segments left is not
		// processed (nor the packet behind it): parameter problem.
		if _, typ, left, ok := packet.IPv6RoutingHeader(h); ok && typ == 0 && left != 0 {
			return verdictRH0
		}
		if up := packet.IPv6Upper(h); up.OK && up.Proto == 58 && up.End-up.Off >= 4 && h[up.Off] == 128 {
			r.st.Drop(p, r.extHdrs)
			return verdictDropped
		}
		return verdictOther
	}
	if pl < 8 {
		r.st.Drop(p, r.truncated)
		return verdictDropped
	}
	ic := h[packet.IPv6Len : packet.IPv6Len+pl]
	if ic[0] != 128 || ic[1] != 0 {
		return verdictOther
	}
	src, dst := h.Src16(), h.Dst16()
	if ^packet.Fold(packet.Sum(ic, packet.PseudoHeaderSumV6(src, dst, 58, len(ic)))) != 0 {
		r.st.Drop(p, r.badChecksum)
		return verdictDropped
	}
	copy(h[8:24], dst[:])
	copy(h[24:40], src[:])
	h.SetHopLimit(r.hop)
	ic[0] = 129
	ck := binary.BigEndian.Uint16(ic[2:])
	binary.BigEndian.PutUint16(ic[2:], packet.UpdateChecksum16(ck, 128<<8, 129<<8))
	p.NextHop = netip.Addr{}
	return verdictReply
}
