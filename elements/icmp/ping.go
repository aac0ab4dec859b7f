package icmp

import (
	"encoding/binary"
	"net/netip"

	"github.com/junction-dataplane/junction/elements"
	"github.com/junction-dataplane/junction/packet"
)

// Config is ICMPPingResponder's config.
type Config struct {
	// Addresses are the router's IPv4 addresses ("10.1.0.1" or the
	// interface form "10.1.0.1/24").
	Addresses []string `toml:"addresses"`
	// Devices, when Addresses is empty, supply the addresses from their
	// addresses keys.
	Devices []string `toml:"devices"`
	// TTL of the replies.
	TTL int `toml:"ttl"`
	// Device is one device, for symmetry with ARPResponder(device).
	Device string `toml:"device"`

	addrs []uint32
}

// Validate parses the addresses. Inline arguments fill addresses; words
// that are not addresses are taken as device names, so
// ICMPPingResponder(lan, wan) and ICMPPingResponder(10.1.0.1) both work.
func (c *Config) Validate() error {
	c.addrs = c.addrs[:0]
	rest, err := splitAddresses(c.Addresses, &c.Devices, func(s string) error {
		ip, err := parseHost(s)
		if err == nil {
			c.addrs = append(c.addrs, ip)
		}
		return err
	})
	if err != nil {
		return err
	}
	c.Addresses = rest
	if c.Device != "" {
		c.Devices = append(c.Devices, c.Device)
		c.Device = ""
	}
	if len(c.addrs) == 0 && len(c.Devices) == 0 {
		return elements.Errorf("addresses", `required (e.g. "10.1.0.1"), unless key "devices" names devices`)
	}
	if c.TTL < 1 || c.TTL > 255 {
		return elements.Errorf("ttl", "must be 1..255, got %d", c.TTL)
	}
	return nil
}

// parseHost reads an address of the addresses key (packet.ParseHost4) as
// a big-endian word.
func parseHost(s string) (uint32, error) {
	ip, err := packet.ParseHost4(s)
	if err != nil {
		return 0, err
	}
	a := ip.As4()
	return binary.BigEndian.Uint32(a[:]), nil
}

func init() {
	elements.Register(elements.Type{
		Name:      "ICMPPingResponder",
		NewConfig: func() any { return &Config{TTL: 64} },
		New:       newResponder,
		In:        1,
		Out:       2,
		Optional:  []int{1},
		Doc:       icmpPingResponderManual,
	})
}

// Responder is one worker's ICMPPingResponder.
type Responder struct {
	replier
	addrs []uint32
	ttl   uint8
	st    *elements.Stats

	truncated, notForUs, fragment, badSource, badChecksum elements.Reason
}

func newResponder(cfg any, ctx *elements.Context) (elements.Element, error) {
	c := cfg.(*Config)
	addrs := append([]uint32(nil), c.addrs...)
	devAddrs, err := deviceAddrs(ctx, c.Devices, "IPv4", netip.Addr.Is4)
	if err != nil {
		return nil, err
	}
	for _, a := range devAddrs {
		a4 := a.As4()
		addrs = append(addrs, binary.BigEndian.Uint32(a4[:]))
	}
	st := ctx.Stats
	return &Responder{
		replier: newReplier(ctx),
		addrs:   addrs, ttl: uint8(c.TTL), st: st,
		truncated:   st.Reason("truncated"),
		notForUs:    st.Reason("not for us"),
		fragment:    st.Reason("fragment"),
		badSource:   st.Reason("bad source"),
		badChecksum: st.Reason("bad checksum"),
	}, nil
}

func (r *Responder) ours(a uint32) bool {
	for _, x := range r.addrs {
		if x == a {
			return true
		}
	}
	return false
}

// Push answers the echo requests of b; other packets for us go to output 1.
func (r *Responder) Push(in int, b *packet.Batch) {
	k := 0
	for _, p := range b.Pkts {
		k = r.keep(b, k, p, r.answer(p))
	}
	r.send(b, k)
}

// answer turns an echo request into its reply in place.
func (r *Responder) answer(p *packet.Packet) verdict {
	l3 := int(p.L3)
	f := p.Data
	if l3 > len(f) || len(f)-l3 < packet.IPv4MinLen {
		r.st.Drop(p, r.truncated)
		return verdictDropped
	}
	h := packet.IPv4(f[l3:])
	ihl := h.IHL()
	tl := h.TotalLen()
	if h.Version() != 4 || ihl < packet.IPv4MinLen || tl < ihl || tl > len(h) {
		r.st.Drop(p, r.truncated)
		return verdictDropped
	}
	dst, src := h.DstU32(), h.SrcU32()
	if !r.ours(dst) {
		r.st.Drop(p, r.notForUs)
		return verdictDropped
	}
	if s := src >> 24; s == 0 || s == 127 || s >= 224 || r.ours(src) {
		r.st.Drop(p, r.badSource)
		return verdictDropped
	}
	if h.Protocol() != packet.ProtoICMP {
		return verdictOther
	}
	if h.FlagsFrag()&(packet.IPv4FlagMF|packet.IPv4FragOffset) != 0 {
		r.st.Drop(p, r.fragment)
		return verdictDropped
	}
	if tl-ihl < packet.ICMPLen {
		r.st.Drop(p, r.truncated)
		return verdictDropped
	}
	ic := packet.ICMP(h[ihl:tl])
	if ic.Type() != packet.ICMPEchoRequest || ic.Code() != 0 {
		return verdictOther
	}
	if packet.Checksum(ic) != 0 {
		r.st.Drop(p, r.badChecksum)
		return verdictDropped
	}
	// Swapping the addresses leaves both checksums as they are (the sum
	// is commutative); the type word goes from 0x0800 to 0x0000 and the
	// TTL/protocol word changes with the TTL (RFC 1624: HC' = ~(~HC + ~m + m')).
	h.SetSrc4([4]byte(f[l3+16 : l3+20]))
	binary.BigEndian.PutUint32(h[16:], src)
	ic.SetType(packet.ICMPEchoReply)
	ic.SetChecksum(packet.UpdateChecksum16(ic.Checksum(), uint16(packet.ICMPEchoRequest)<<8, uint16(packet.ICMPEchoReply)<<8))
	oldTTL := uint16(h.TTL())<<8 | uint16(h.Protocol())
	h.SetTTL(r.ttl)
	h.SetChecksum(packet.UpdateChecksum16(h.Checksum(), oldTTL, uint16(r.ttl)<<8|uint16(h.Protocol())))
	p.NextHop = netip.Addr{}
	return verdictReply
}
