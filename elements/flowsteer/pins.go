package flowsteer

import (
	"encoding/binary"

	"github.com/junction-dataplane/junction/packet"
)

// Pins: exceptions to the steering, for flow directions that must reach
// a worker other than the one their hash names. A masqueraded flow (SNAT)
// got a port whose reply tuple hashes to the flow's owner among the
// workers the router had then; a reload that changes the number of
// workers changes the owners, and the reply of such a flow may now hash
// to another worker than its original direction. Its reply tuple cannot
// change (the other end knows the port), so the reload pins it: packets
// with exactly that tuple are handed to the flow's owner whatever their
// hash says, and SNAT never gives that tuple to a new flow. The pins are
// rebuilt from the live flows at every reload that changes the number of
// workers (while every worker is parked) and stay as they are in between:
// a pin of a flow that has ended keeps its tuple out of SNAT's choice
// until then.

// Pin sends the packets whose IPv4 TCP or UDP tuple is exactly this one
// (this direction) to Worker.
type Pin struct {
	Src, Dst     uint32
	Sport, Dport uint16
	Proto        uint8
	Worker       int
}

// Pins is an immutable set of pins, looked up without locks.
type Pins struct {
	slots []pinSlot
	mask  uint32
	n     int
}

type pinSlot struct {
	src, dst     uint32
	sport, dport uint16
	proto        uint8
	used         bool
	worker       uint16
}

// SetPins replaces the table's pins (none: nil or empty). Not for the hot
// path: it builds the set and publishes it with one atomic store.
func (t *Table) SetPins(ps []Pin) {
	if len(ps) == 0 {
		t.pins.Store(nil)
		return
	}
	n := 1
	for n < 2*len(ps) {
		n <<= 1
	}
	s := &Pins{slots: make([]pinSlot, n), mask: uint32(n - 1), n: len(ps)}
	for _, p := range ps {
		i := packet.FlowHashV4(p.Src, p.Dst, p.Sport, p.Dport, p.Proto) & s.mask
		for s.slots[i].used {
			i = (i + 1) & s.mask
		}
		s.slots[i] = pinSlot{src: p.Src, dst: p.Dst, sport: p.Sport, dport: p.Dport, proto: p.Proto, used: true, worker: uint16(p.Worker)}
	}
	t.pins.Store(s)
}

// Pins returns the table's pins, nil when there are none (one atomic
// load: load it once per batch).
func (t *Table) Pins() *Pins { return t.pins.Load() }

// Len is the number of pins.
func (s *Pins) Len() int {
	if s == nil {
		return 0
	}
	return s.n
}

// Lookup returns the worker tuple (src, dst, sport, dport, proto) is
// pinned to.
func (s *Pins) Lookup(src, dst uint32, sport, dport uint16, proto uint8) (int, bool) {
	i := packet.FlowHashV4(src, dst, sport, dport, proto) & s.mask
	for {
		e := &s.slots[i]
		if !e.used {
			return 0, false
		}
		if e.src == src && e.dst == dst && e.sport == sport && e.dport == dport && e.proto == proto {
			return int(e.worker), true
		}
		i = (i + 1) & s.mask
	}
}

// Owner returns the worker the frame's flow direction is pinned to, if it
// is an IPv4 TCP or UDP packet (not a fragment) with a pinned tuple, or an
// ICMP error about a packet whose reply tuple is pinned: a pin is a reply
// tuple (the far end to the masqueraded address and port), and an error
// from the far end's side quotes the masqueraded packet that went the
// other way, so the error is pinned where that packet's reply is. It
// allocates nothing and takes no lock.
func (s *Pins) Owner(frame []byte, l3 int) (int, bool) {
	if l3 < packet.EthernetLen || l3+packet.IPv4MinLen+4 > len(frame) ||
		binary.BigEndian.Uint16(frame[l3-2:]) != packet.EtherTypeIPv4 {
		return 0, false
	}
	h := frame[l3:]
	if q, isErr := packet.ICMPErrorQuote4(h); isErr {
		src, dst, sport, dport, proto := packet.Tuple4(q)
		if proto != packet.ProtoTCP && proto != packet.ProtoUDP || sport == 0 && dport == 0 {
			return 0, false
		}
		return s.Lookup(dst, src, dport, sport, proto)
	}
	proto := h[9]
	ihl := int(h[0]&0x0f) * 4
	if proto != packet.ProtoTCP && proto != packet.ProtoUDP || h[0]>>4 != 4 || ihl < packet.IPv4MinLen ||
		len(h) < ihl+4 || binary.BigEndian.Uint16(h[6:])&(packet.IPv4FlagMF|packet.IPv4FragOffset) != 0 {
		return 0, false
	}
	return s.Lookup(binary.BigEndian.Uint32(h[12:]), binary.BigEndian.Uint32(h[16:]),
		binary.BigEndian.Uint16(h[ihl:]), binary.BigEndian.Uint16(h[ihl+2:]), proto)
}
