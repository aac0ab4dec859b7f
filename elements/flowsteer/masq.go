package flowsteer

import (
	"encoding/binary"
	"math/bits"
	"sync/atomic"

	"github.com/junction-dataplane/junction/packet"
)

// Steering by port ownership, for masqueraded flows. Endpoint-independent
// mapping (RFC 4787 REQ-1, RFC 5382 REQ-1) gives an inside endpoint one
// outside port for every destination, so every flow of that endpoint must
// be decided by the worker holding its mapping; and the replies, from any
// remote, come to that outside port. The symmetric flow hash cannot do
// that: it names a worker per destination. So each port belongs to one
// worker, Port(port) (the ports in units of PortUnit, each unit hashed),
// and a masquerading SNAT publishes a Masq: the outside addresses and
// port range it maps to, and the inside networks whose flows it
// masquerades. A TCP or UDP packet from an inside address is steered by
// its source port's owner, a packet to an outside address and port of the
// range by its destination port's owner; SNAT keeps the inside port when
// it is free (its owner is the worker deciding) and otherwise picks a port
// of its own, so the replies come home. A packet with both ends port-owned
// (inside to inside, or an inside host to an outside address: hairpinning)
// goes to the lower of the two owners, which both directions agree on.
// An ICMP echo request or reply is steered the same way with its
// identifier as both ports (SNAT maps it so): the reply to the outside
// address carries nothing else of the inside host's. DNAT'd flows (an
// endpoint that is a DNAT backend's or a DNAT public one) and everything
// else keep the symmetric hash.

// PortUnit is how many consecutive ports belong to one worker: a unit of
// SNAT's mapping table (20 to 2 bytes a port in its arrays) spans whole
// or most of cache lines, so two workers seldom write one line.
const PortUnit = 16

// Masq is one masquerading SNAT's steering: packets from Inside networks
// and to Addrs within [Lo, Hi] are steered by port among Workers.
type Masq struct {
	Addrs   []uint32
	Lo, Hi  uint16
	Inside  []Prefix
	Workers int
}

// Prefix is an IPv4 network: Addr with the top Bits bits significant.
type Prefix struct {
	Addr uint32
	Bits int
}

// Contains reports whether a is in the network.
func (p Prefix) Contains(a uint32) bool {
	return p.Bits == 0 || (a^p.Addr)>>(32-p.Bits) == 0
}

type masqSet struct {
	list []Masq
}

// SetMasq sets the masquerade steering published under key (an SNAT
// element's name: every worker's instance sets the same one, and the
// instances a reload builds replace those before them). Not for the hot
// path.
func (t *Table) SetMasq(key string, m *Masq) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.masqs == nil {
		t.masqs = map[string]*Masq{}
	}
	t.masqs[key] = m
	t.publishMasq()
}

// WithdrawMasq removes m, when it is still what key holds (an instance
// closed after a reload replaced it leaves its successor's).
func (t *Table) WithdrawMasq(key string, m *Masq) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.masqs[key] == m {
		delete(t.masqs, key)
		t.publishMasq()
	}
}

func (t *Table) publishMasq() {
	if len(t.masqs) == 0 {
		t.masq.Store(nil)
		return
	}
	s := &masqSet{}
	for _, m := range t.masqs {
		s.list = append(s.list, *m)
	}
	t.masq.Store(s)
}

// masqPtr is the published set (nil: no masquerading SNAT).
type masqPtr = atomic.Pointer[masqSet]

// unitHash is the hash a port's unit is owned by.
func unitHash(port uint16) uint32 { return (uint32(port)/PortUnit + 1) * 0x9e3779b1 }

// Port is the worker among workers that owns port: the worker that steers
// the packets from an inside endpoint with this port, and to an outside
// endpoint with it, and that SNAT lets allocate it.
func Port(port uint16, workers int) int { return Owner(unitHash(port), workers) }

// steerHash is the hash handOff maps to a worker (Owner) for a tuple with
// a port-owned end, or ok false. The hash lies within the owning worker's
// share of the hash space, offset by the flow's own hash so that flows
// stay apart for whatever else reads the FlowHash annotation (ECMP's path
// choice, the queue-move order).
func (s *masqSet) steerHash(src, dst uint32, sport, dport uint16, proto uint8, rs []Reverse) (uint32, bool) {
	for i := range s.list {
		m := &s.list[i]
		ps, pd := m.owned(src, sport), m.owned(dst, dport)
		if !ps && !pd {
			continue
		}
		// DNAT'd flows keep the symmetric hash (with the reverses).
		for j := range rs {
			r := &rs[j]
			if r.Proto != proto {
				continue
			}
			if _, _, hit := r.public(proto, src, sport); hit {
				return 0, false
			}
			if _, _, hit := r.public(proto, dst, dport); hit {
				return 0, false
			}
			if r.servesPublic(src, sport) || r.servesPublic(dst, dport) {
				return 0, false
			}
		}
		w := m.Workers
		var g int
		switch {
		case ps && pd:
			g = min(Port(sport, w), Port(dport, w))
		case ps:
			g = Port(sport, w)
		default:
			g = Port(dport, w)
		}
		return ownerHash(g, w, packet.FlowHashV4(src, dst, sport, dport, proto)), true
	}
	return 0, false
}

// owned reports whether endpoint a:port is steered by its port: an inside
// address, or an outside address with a port of the range.
func (m *Masq) owned(a uint32, port uint16) bool {
	for _, x := range m.Addrs {
		if x == a {
			return port >= m.Lo && port <= m.Hi
		}
	}
	for _, p := range m.Inside {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// ownerHash is a hash that Owner maps to worker g of w: the start of g's
// share plus the flow hash's top bits, scaled below the share's size.
func ownerHash(g, w int, fh uint32) uint32 {
	k := uint(bits.Len(uint(w)))
	base := uint32((uint64(g)<<32 + uint64(w) - 1) / uint64(w))
	return base + fh>>k | 1
}

// servesPublic reports whether a:port is the public endpoint of the rule
// (a DNAT'd port: its flows keep the symmetric hash).
func (r *Reverse) servesPublic(a uint32, port uint16) bool {
	if r.Public != a {
		return false
	}
	if r.KeepPort {
		return r.Lo == 0 || port >= r.Lo && port <= r.Hi
	}
	return port >= r.PubLo && port <= r.PubLo+(r.Hi-r.Lo)
}

// IsPublic reports whether addr:port of proto is a DNAT rule's public
// endpoint: SNAT leaves such ports out of its mappings, since their
// packets are DNAT's and steered by the symmetric hash.
func (t *Table) IsPublic(proto uint8, addr uint32, port uint16) bool {
	tp := t.table.Load()
	if tp == nil {
		return false
	}
	for i := range *tp {
		if r := &(*tp)[i]; r.Proto == proto && r.servesPublic(addr, port) {
			return true
		}
	}
	return false
}

// masqHash is Hash for a frame when a masquerading SNAT steers by port:
// ok false when the frame is not a TCP or UDP packet or an ICMP echo
// request or reply (or an ICMP error quoting one) with a port-owned end.
// An echo's identifier plays both ports, as in SNAT's mapping of it: an
// inside host's echo requests go to its identifier's owner, and the
// replies to the outside address, carrying the identifier SNAT kept or
// gave, to that identifier's owner.
func (t *Table) masqHash(s *masqSet, frame []byte, l3 int) (uint32, bool) {
	if l3 < packet.EthernetLen || l3+packet.IPv4MinLen+4 > len(frame) ||
		binary.BigEndian.Uint16(frame[l3-2:]) != packet.EtherTypeIPv4 {
		return 0, false
	}
	h := frame[l3:]
	if h[0]>>4 != 4 {
		return 0, false
	}
	if q, isErr := packet.ICMPErrorQuote4(h); isErr {
		// The quote is a packet of the flow: steered as it was.
		h = q
	}
	src, dst, sport, dport, proto := packet.Tuple4(h)
	if proto == packet.ProtoICMP {
		id, ok := echoID(h)
		if !ok {
			return 0, false
		}
		sport, dport = id, id
	}
	if proto != packet.ProtoTCP && proto != packet.ProtoUDP && proto != packet.ProtoICMP || sport == 0 && dport == 0 {
		return 0, false
	}
	var rs []Reverse
	if tp := t.table.Load(); tp != nil {
		rs = *tp
	}
	return s.steerHash(src, dst, sport, dport, proto, rs)
}

// OwnerTuple is the worker among n that a flow direction given by its
// tuple is steered to: by port ownership when a masquerading SNAT steers
// it so, else by HashTuple (a reload that changes the number of workers
// computes the flows' new owners with it). Not for the hot path.
func (t *Table) OwnerTuple(src, dst uint32, sport, dport uint16, proto uint8, n int) int {
	if g, ok := t.ownerHost4(src, dst, sport, proto, n); ok {
		return g
	}
	if s := t.masq.Load(); s != nil && (proto == packet.ProtoTCP || proto == packet.ProtoUDP || proto == packet.ProtoICMP) {
		var rs []Reverse
		if tp := t.table.Load(); tp != nil {
			rs = *tp
		}
		c := *s
		c.list = append([]Masq(nil), s.list...)
		for i := range c.list {
			c.list[i].Workers = n
		}
		if h, ok := c.steerHash(src, dst, sport, dport, proto, rs); ok {
			return Owner(h, n)
		}
	}
	return Owner(t.HashTuple(src, dst, sport, dport, proto), n)
}

// echoID is the identifier of IPv4 packet h (a whole one or an error's
// quote: its header and at least 8 bytes) when it is an ICMP echo request
// or reply, not a fragment.
func echoID(h []byte) (uint16, bool) {
	ihl := int(h[0]&0x0f) * 4
	if h[9] != packet.ProtoICMP || ihl < packet.IPv4MinLen || len(h) < ihl+8 ||
		binary.BigEndian.Uint16(h[6:])&(packet.IPv4FlagMF|packet.IPv4FragOffset) != 0 {
		return 0, false
	}
	if t := h[ihl]; t != packet.ICMPEchoRequest && t != packet.ICMPEchoReply {
		return 0, false
	}
	return binary.BigEndian.Uint16(h[ihl+4:]), true
}
