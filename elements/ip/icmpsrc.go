package ip

import (
	"encoding/binary"
	"fmt"
	"net/netip"
	"strings"

	"github.com/junction-dataplane/junction/elements"
)

// The source of the errors a router originates: src = "auto" on
// ICMPError and ICMP6Error. RFC 1812 4.3.2.4: "the IP source address in an
// ICMP message originated by the router MUST be one of the IP addresses
// associated with the physical interface over which the ICMP message is
// transmitted". A fixed src is right only for errors that always leave by
// one interface; an element that answers packets from both sides (or, like
// a CheckMTU's error element, packets from the side opposite its own
// link) needs the address chosen per packet. The error element runs
// before the error is routed, so it predicts the interface from what the
// graph's devices say (their addresses keys), in this order:
//
//  1. the packet's source (the error's destination) is on a link of one of
//     the router's devices (inside the prefix of one of its addresses):
//     that address: the error leaves by that link;
//  2. otherwise the first address of the device the packet arrived on: the
//     error goes back towards its source the way the packet came, which is
//     the interface it leaves by wherever routes are symmetric (the
//     contract configs' are: every source beyond a next hop is reached
//     through the device its packets arrive on);
//  3. a device without an address of the family: the first address of the
//     family of any device (RFC 1812's router-id fallback).
//
// A packet addressed to the router itself (a port unreachable) is answered
// by the same rule, from the interface the answer leaves by, not from the
// address it was sent to: traceroute to the router's far address ends at
// hop 1 showing the near one, as RFC 1812 asks (Linux would answer from
// the address asked).
//
// It is all comparisons against a few words per device: no allocation, no
// lock.

// srcAuto is the keyword of the src key.
const srcAuto = "auto"

func isAuto(s string) bool { return strings.EqualFold(strings.TrimSpace(s), srcAuto) }

// auto4 chooses an IPv4 error's source.
type auto4 struct {
	nets   []net4   // the router's addresses' prefixes, with the address in each
	byDev  []uint32 // by device index: the device's first address, 0: none
	router uint32   // the first address of all
}

type net4 struct {
	p    prefix4
	addr uint32
}

// auto6 is auto4 for IPv6 (link-local addresses left out: an error to a
// routed source cannot come from one).
type auto6 struct {
	nets   []net6
	byDev  [][16]byte
	hasDev []bool
	router [16]byte
}

type net6 struct {
	hi, lo, mhi, mlo uint64
	addr             [16]byte
}

// graphAddrs calls fn for every address of every device of the graph, with
// the device's index; it fails when the graph's devices cannot be listed.
func graphAddrs(ctx *elements.Context, fn func(dev int, p netip.Prefix)) (int, error) {
	dl, ok := ctx.Devices.(elements.DeviceLister)
	if !ok {
		return 0, elements.Errorf("src", "auto: the graph's devices cannot be listed")
	}
	n := 0
	for _, name := range dl.DeviceNames() {
		dev, idx, ok := ctx.Devices.Device(name)
		if !ok || dev == nil {
			continue
		}
		n = max(n, idx+1)
		for _, p := range dev.Info().Addresses {
			fn(idx, p)
		}
	}
	return n, nil
}

func newAuto4(ctx *elements.Context) (*auto4, error) {
	a := &auto4{}
	type ent struct {
		dev int
		p   netip.Prefix
	}
	var ents []ent
	n, err := graphAddrs(ctx, func(dev int, p netip.Prefix) {
		if p.Addr().Is4() {
			ents = append(ents, ent{dev, p})
		}
	})
	if err != nil {
		return nil, err
	}
	a.byDev = make([]uint32, n)
	for _, e := range ents {
		b := e.p.Addr().As4()
		addr := binary.BigEndian.Uint32(b[:])
		mask := ^uint32(0) << (32 - e.p.Bits())
		if e.p.Bits() == 0 {
			mask = 0
		}
		a.nets = append(a.nets, net4{p: prefix4{addr: addr & mask, mask: mask}, addr: addr})
		if a.byDev[e.dev] == 0 {
			a.byDev[e.dev] = addr
		}
		if a.router == 0 {
			a.router = addr
		}
	}
	if a.router == 0 {
		return nil, elements.Errorf("src", "auto: no device of the graph has an IPv4 address (its addresses key)")
	}
	return a, nil
}

// pick returns the source of the error about a packet from src that
// arrived on device dev.
func (a *auto4) pick(src uint32, dev int) uint32 {
	for i := range a.nets {
		if a.nets[i].p.contains(src) {
			return a.nets[i].addr
		}
	}
	if dev < len(a.byDev) && a.byDev[dev] != 0 {
		return a.byDev[dev]
	}
	return a.router
}

func newAuto6(ctx *elements.Context) (*auto6, error) {
	a := &auto6{}
	type ent struct {
		dev int
		p   netip.Prefix
	}
	var ents []ent
	n, err := graphAddrs(ctx, func(dev int, p netip.Prefix) {
		if p.Addr().Is6() && !p.Addr().Is4In6() && !p.Addr().IsLinkLocalUnicast() {
			ents = append(ents, ent{dev, p})
		}
	})
	if err != nil {
		return nil, err
	}
	a.byDev = make([][16]byte, n)
	a.hasDev = make([]bool, n)
	found := false
	for _, e := range ents {
		addr := e.p.Addr().As16()
		var m [16]byte
		for i := 0; i < e.p.Bits(); i++ {
			m[i/8] |= 0x80 >> (i % 8)
		}
		mhi, mlo := binary.BigEndian.Uint64(m[:8]), binary.BigEndian.Uint64(m[8:])
		a.nets = append(a.nets, net6{hi: binary.BigEndian.Uint64(addr[:8]) & mhi, lo: binary.BigEndian.Uint64(addr[8:]) & mlo,
			mhi: mhi, mlo: mlo, addr: addr})
		if !a.hasDev[e.dev] {
			a.byDev[e.dev], a.hasDev[e.dev] = addr, true
		}
		if !found {
			a.router, found = addr, true
		}
	}
	if !found {
		return nil, elements.Errorf("src", "auto: no device of the graph has a global IPv6 address (its addresses key)")
	}
	return a, nil
}

// pick is auto4.pick for IPv6 (src: the packet's 16-byte source).
func (a *auto6) pick(src []byte, dev int) *[16]byte {
	hi, lo := binary.BigEndian.Uint64(src[:8]), binary.BigEndian.Uint64(src[8:16])
	for i := range a.nets {
		n := &a.nets[i]
		if hi&n.mhi == n.hi && lo&n.mlo == n.lo {
			return &n.addr
		}
	}
	if dev < len(a.byDev) && a.hasDev[dev] {
		return &a.byDev[dev]
	}
	return &a.router
}

// autoDoc is the src key's documentation of "auto" (both elements; note
// qualifies the addresses chosen from).
func autoDoc(family, note string) string {
	return fmt.Sprintf("the router's %s address the errors come from, or \"auto\": the address of the interface "+
		"each error leaves by (RFC 1812 4.3.2.4), chosen per packet from the graph's devices' addresses%s: the "+
		"router's address on the link of the packet's source; else the first address of the device the "+
		"packet arrived on (the error goes back the way the packet came); else the first of any device. "+
		"Errors about packets to the router itself follow the same rule", family, note)
}
