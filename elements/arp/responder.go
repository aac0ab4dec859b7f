package arp

import (
	"encoding/binary"
	"net/netip"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/junction-dataplane/junction/elements"
	"github.com/junction-dataplane/junction/packet"
)

// ResponderConfig is ARPResponder's config.
type ResponderConfig struct {
	// Addresses are "IP MAC" (or "IP/len MAC", meaning the host address
	// IP) entries.
	Addresses []string `toml:"addresses"`
	// Device, used when Addresses is empty, supplies the entries from
	// its MAC and IPv4 addresses.
	Device string `toml:"device"`

	entries []entry // parsed Addresses, sorted by IP
}

// entry is one answered address. The IP is a big-endian uint32 so that the
// per-packet lookup compares integers.
type entry struct {
	ip  uint32
	mac packet.MAC
}

// Validate parses the addresses.
func (c *ResponderConfig) Validate() error {
	c.entries = c.entries[:0]
	// Inline arguments fill keys in order, so the DESIGN example
	// ARPResponder(lan) puts the device name into addresses: a single
	// entry that is one word and not an address is taken as the device.
	if len(c.Addresses) == 1 && c.Device == "" && !strings.ContainsAny(strings.TrimSpace(c.Addresses[0]), " \t") {
		if _, err := netip.ParsePrefix(c.Addresses[0]); err != nil {
			if _, err := netip.ParseAddr(c.Addresses[0]); err != nil {
				c.Device, c.Addresses = strings.TrimSpace(c.Addresses[0]), nil
			}
		}
	}
	if len(c.Addresses) == 0 && c.Device == "" {
		return elements.Errorf("addresses", `required (entries "IP MAC"), unless key "device" names a device`)
	}
	for _, a := range c.Addresses {
		f := strings.Fields(a)
		if len(f) != 2 {
			return elements.Errorf("addresses", `%q: want "IP MAC", e.g. "10.1.0.1 00:11:22:33:44:55"`, a)
		}
		ip, err := parseHost(f[0])
		if err != nil {
			return elements.Errorf("addresses", "%q: %v", a, err)
		}
		mac, ok := packet.ParseMAC(f[1])
		if !ok {
			return elements.Errorf("addresses", "%q: bad MAC %q (want aa:bb:cc:dd:ee:ff)", a, f[1])
		}
		if err := c.add(ip, mac); err != nil {
			return elements.Errorf("addresses", "%q: %v", a, err)
		}
	}
	return nil
}

// parseHost reads an address of the addresses and neighbors keys
// (packet.ParseHost4; ARP is IPv4 only).
func parseHost(s string) (netip.Addr, error) { return packet.ParseHost4(s) }

type errString string

func (e errString) Error() string { return string(e) }

// add inserts an entry in IP order; the same IP twice with different MACs
// is an error (which one would answer?).
func (c *ResponderConfig) add(ip netip.Addr, mac packet.MAC) error {
	if mac == (packet.MAC{}) || mac[0]&1 != 0 {
		return errString("MAC " + mac.String() + " is not a unicast address")
	}
	a := ip.As4()
	e := entry{binary.BigEndian.Uint32(a[:]), mac}
	i, found := slices.BinarySearchFunc(c.entries, e.ip, func(x entry, ip uint32) int {
		switch {
		case x.ip < ip:
			return -1
		case x.ip > ip:
			return 1
		}
		return 0
	})
	if found {
		if c.entries[i].mac != mac {
			return errString("address " + ip.String() + " given twice with different MACs")
		}
		return nil
	}
	c.entries = slices.Insert(c.entries, i, e)
	return nil
}

func init() {
	elements.Register(elements.Type{
		Name:      "ARPResponder",
		NewConfig: func() any { return &ResponderConfig{} },
		New:       newResponder,
		In:        1,
		Out:       1,
		Doc:       arpResponderManual,
	})
}

// Responder is one worker's ARPResponder.
type Responder struct {
	entries []entry
	out     *elements.Output
	st      *elements.Stats
	replies *atomic.Uint64

	truncated, notARP, notRequest, notForUs, gratuitous, badSender elements.Reason
}

func newResponder(cfg any, ctx *elements.Context) (elements.Element, error) {
	c := cfg.(*ResponderConfig)
	entries := c.entries
	if len(c.Addresses) == 0 {
		dev, _, ok := ctx.Devices.Device(c.Device)
		if !ok || dev == nil {
			return nil, elements.Errorf("device", "no device %q", c.Device)
		}
		info := dev.Info()
		dc := &ResponderConfig{}
		for _, p := range info.Addresses {
			if !p.Addr().Is4() {
				continue
			}
			if err := dc.add(p.Addr(), info.MAC); err != nil {
				return nil, elements.Errorf("device", "device %q: %v", c.Device, err)
			}
		}
		if len(dc.entries) == 0 {
			return nil, elements.Errorf("device", "device %q has no IPv4 address to answer for", c.Device)
		}
		entries = dc.entries
	}
	st := ctx.Stats
	return &Responder{
		entries: slices.Clone(entries), out: ctx.Outputs[0], st: st,
		replies:    st.Counter("replies"),
		truncated:  st.Reason("truncated"),
		notARP:     st.Reason("not arp"),
		notRequest: st.Consumption("not a request"),
		notForUs:   st.Consumption("not for us"),
		gratuitous: st.Consumption("gratuitous"),
		badSender:  st.Reason("bad sender"),
	}, nil
}

// lookup finds the entry for ip. A router answers for a handful of
// addresses, so a binary search over a sorted slice beats a map and
// allocates nothing.
func (r *Responder) lookup(ip uint32) (packet.MAC, bool) {
	e := r.entries
	lo, hi := 0, len(e)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if e[m].ip < ip {
			lo = m + 1
		} else {
			hi = m
		}
	}
	if lo < len(e) && e[lo].ip == ip {
		return e[lo].mac, true
	}
	return packet.MAC{}, false
}

// ours reports whether mac is one of the MACs we answer with (a request
// from it is our own, looped back).
func (r *Responder) ours(mac []byte) bool {
	for i := range r.entries {
		if string(r.entries[i].mac[:]) == string(mac) {
			return true
		}
	}
	return false
}

// Push answers the requests in b and frees the rest, under its reason (a
// consumption for ARP that needs no answer, a drop for a malformed frame).
func (r *Responder) Push(in int, b *packet.Batch) {
	k := 0
	for _, p := range b.Pkts {
		if reason, ok := r.answer(p.Data); !ok {
			r.st.Drop(p, reason)
			continue
		}
		b.Pkts[k] = p
		k++
	}
	b.Truncate(k)
	if k > 0 {
		r.replies.Add(uint64(k))
		r.out.Push(b)
	}
}

// Offsets of the ARP fields within the frame (after a 14-byte Ethernet
// header), for the in-place rewrite.
const (
	arpOff = packet.EthernetLen
	sha    = arpOff + 8
	spa    = arpOff + 14
	tha    = arpOff + 18
	tpa    = arpOff + 24
)

// answer turns the request in f into the reply in place, or says why not.
func (r *Responder) answer(f []byte) (elements.Reason, bool) {
	if len(f) < packet.EthernetLen+packet.ARPLen {
		if len(f) >= packet.EthernetLen && packet.Ethernet(f).Type() != packet.EtherTypeARP {
			return r.notARP, false
		}
		return r.truncated, false
	}
	f = f[:packet.EthernetLen+packet.ARPLen] // bounds-check hint for what follows
	if packet.Ethernet(f).Type() != packet.EtherTypeARP {
		return r.notARP, false
	}
	a, ok := packet.AsARP(f[arpOff:])
	if !ok {
		return r.notARP, false
	}
	if a.Op() != packet.ARPRequest {
		return r.notRequest, false
	}
	target := binary.BigEndian.Uint32(f[tpa:])
	sender := binary.BigEndian.Uint32(f[spa:])
	mac, ok := r.lookup(target)
	if !ok {
		return r.notForUs, false
	}
	if sender == target {
		return r.gratuitous, false
	}
	// A sender we cannot or must not answer: a group or zero MAC, our own
	// frame looped back, or a source address no host can have.
	if f[sha]&1 != 0 || string(f[sha:sha+6]) == "\x00\x00\x00\x00\x00\x00" || r.ours(f[sha:sha+6]) ||
		sender>>28 == 0xe || sender == 0xffffffff || sender>>24 == 127 {
		return r.badSender, false
	}
	// Target <- requester; sender <- us. The target IP field becomes the
	// requester's IP (0.0.0.0 for a probe) and the sender IP field the one
	// asked for, which is already in hand as target.
	copy(f[tha:tha+6], f[sha:sha+6])
	binary.BigEndian.PutUint32(f[tpa:], sender)
	copy(f[sha:sha+6], mac[:])
	binary.BigEndian.PutUint32(f[spa:], target)
	a.SetOp(packet.ARPReply)
	copy(f[0:6], f[tha:tha+6])
	copy(f[6:12], mac[:])
	return 0, true
}
