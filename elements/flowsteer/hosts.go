package flowsteer

import (
	"encoding/binary"
	"net/netip"
	"sync/atomic"

	"github.com/junction-dataplane/junction/packet"
)

// Steering by host. A per-host limit (a Policer keyed "src/32" or
// "dst/32", a Shaper per host) meters on each worker alone: with several
// workers it is exact only when every packet of a host reaches one
// worker. The flow hash cannot promise that (a host's flows spread over
// the workers, which is its point), so a graph can name host networks
// (FromDevice's host_affinity key): a packet with an end in one of them
// is steered by that end's address, IPv4 by the whole address, IPv6 by
// its /64 (the Policer's default prefix6: a host holds many addresses of
// its subnet), both directions alike; with an end in two such networks,
// to the lower of the two hosts' workers. The FlowHash annotation stays
// the flow's own within the host's worker's share of the hash space
// (ownerHash), so that what reads it to tell flows apart still can.
//
// What it is applied to is the tuple the rest of the steering hashes: an
// ICMP error's quote (the flow it is about), and a reply from a DNAT
// backend mapped back to the public endpoint it serves. A masqueraded
// flow from a host of these networks leaves by its host's worker, and
// SNAT picks an outside port that worker owns, so that the replies, which
// carry only the outside address, are steered home by the port. ICMP
// echoes are the exception when a masquerading SNAT steers: SNAT keeps
// an echo's identifier without asking which worker owns it, so both
// directions are steered by the identifier (masq.go), not by the host.

// Hosts is the host networks one owner (a FromDevice) asked for.
type Hosts struct {
	V4      []Prefix
	V6      []netip.Prefix
	Workers int
}

type hostSet struct {
	v4      []Prefix
	v6      []netip.Prefix
	workers int
}

type hostsPtr = atomic.Pointer[hostSet]

// SetHosts publishes key's host networks (nil withdraws them); the
// table steers by the union of every key's. Every worker's instance of
// an element sets the same ones. Not for the hot path.
func (t *Table) SetHosts(key string, h *Hosts) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.hostsBy == nil {
		t.hostsBy = map[string]*Hosts{}
	}
	if h == nil || len(h.V4)+len(h.V6) == 0 {
		delete(t.hostsBy, key)
	} else {
		t.hostsBy[key] = h
	}
	t.publishHosts()
}

// WithdrawHosts removes h, when it is still what key holds (an instance
// closed after a reload replaced it leaves its successor's).
func (t *Table) WithdrawHosts(key string, h *Hosts) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.hostsBy[key] == h {
		delete(t.hostsBy, key)
		t.publishHosts()
	}
}

func (t *Table) publishHosts() {
	if len(t.hostsBy) == 0 {
		t.hosts.Store(nil)
		return
	}
	s := &hostSet{}
	seen4, seen6 := map[Prefix]bool{}, map[netip.Prefix]bool{}
	for _, h := range t.hostsBy {
		s.workers = max(s.workers, h.Workers)
		for _, p := range h.V4 {
			if !seen4[p] {
				seen4[p] = true
				s.v4 = append(s.v4, p)
			}
		}
		for _, p := range h.V6 {
			if !seen6[p] {
				seen6[p] = true
				s.v6 = append(s.v6, p)
			}
		}
	}
	t.hosts.Store(s)
}

// hostOwner4 is the worker of IPv4 host a, or -1 when a is in none of
// the networks.
func (s *hostSet) hostOwner4(a uint32) int {
	for _, p := range s.v4 {
		if p.Contains(a) {
			return Owner(packet.FlowHashV4(a, a, 0, 0, 0), s.workers)
		}
	}
	return -1
}

// hostOwner6 is hostOwner4 for IPv6 address a (16 bytes), by its /64.
func (s *hostSet) hostOwner6(a []byte) int {
	for _, p := range s.v6 {
		if p.Contains(netip.AddrFrom16([16]byte(a))) {
			var k [16]byte
			copy(k[:8], a[:8])
			return Owner(packet.FlowHashV6(k, k, 0, 0, 0), s.workers)
		}
	}
	return -1
}

// pair is the worker for a flow whose ends have workers g1, g2 (-1: not
// a host of the networks), ok false when neither is.
func pair(g1, g2 int) (int, bool) {
	switch {
	case g1 < 0 && g2 < 0:
		return 0, false
	case g1 < 0:
		return g2, true
	case g2 < 0:
		return g1, true
	}
	return min(g1, g2), true
}

// hostHash is Hash for a packet with an end in the host networks: a hash
// that Owner maps to the host's worker, ok false for any other packet.
func (t *Table) hostHash(s *hostSet, frame []byte, l3 int) (uint32, bool) {
	if l3 < packet.EthernetLen || l3 > len(frame) || s.workers < 2 {
		return 0, false
	}
	h := frame[l3:]
	switch binary.BigEndian.Uint16(frame[l3-2:]) {
	case packet.EtherTypeIPv4:
		if len(h) < packet.IPv4MinLen || h[0]>>4 != 4 {
			return 0, false
		}
		var src, dst uint32
		if q, isErr := packet.ICMPErrorQuote4(h); isErr {
			if len(q) < packet.IPv4MinLen || t.masqEcho(q) {
				return 0, false
			}
			var sp, dp uint16
			var proto uint8
			src, dst, sp, dp, proto = packet.Tuple4(q)
			if tp := t.table.Load(); tp != nil && (proto == packet.ProtoTCP || proto == packet.ProtoUDP) {
				src, _, _ = publicOf(*tp, proto, src, sp)
				dst, _, _ = publicOf(*tp, proto, dst, dp)
			}
		} else {
			if t.masqEcho(h) {
				return 0, false
			}
			var sp uint16
			var proto uint8
			src, dst, sp, _, proto = packet.Tuple4(h)
			if tp := t.table.Load(); tp != nil && (proto == packet.ProtoTCP || proto == packet.ProtoUDP) {
				src, _, _ = publicOf(*tp, proto, src, sp)
			}
		}
		g, ok := pair(s.hostOwner4(src), s.hostOwner4(dst))
		if !ok {
			return 0, false
		}
		return ownerHash(g, s.workers, packet.FlowHashFrame(frame, l3)), true
	case packet.EtherTypeIPv6:
		if len(s.v6) == 0 || len(h) < packet.IPv6Len {
			return 0, false
		}
		// An ICMPv6 error is about the flow it quotes (as flowHashIPv6).
		if h[6] == 58 && len(h) >= 2*packet.IPv6Len+8 && h[packet.IPv6Len] < 128 && h[packet.IPv6Len+8]>>4 == 6 {
			h = h[packet.IPv6Len+8:]
		}
		g, ok := pair(s.hostOwner6(h[8:24]), s.hostOwner6(h[24:40]))
		if !ok {
			return 0, false
		}
		return ownerHash(g, s.workers, packet.FlowHashFrame(frame, l3)), true
	}
	return 0, false
}

// masqEcho reports whether IPv4 packet h is an ICMP echo that a
// masquerading SNAT's steering takes (by its identifier): its request and
// its translated reply carry no common address, only the identifier, so
// the host steering leaves echoes to it.
func (t *Table) masqEcho(h []byte) bool {
	if h[9] != packet.ProtoICMP || t.masq.Load() == nil {
		return false
	}
	_, ok := echoID(h)
	return ok
}

// ownerHost4 is OwnerTuple's host steering: the worker among n of a flow
// direction with an end in the host networks (ok false otherwise).
func (t *Table) ownerHost4(src, dst uint32, sport uint16, proto uint8, n int) (int, bool) {
	s := t.hosts.Load()
	if s == nil || n < 2 {
		return 0, false
	}
	if proto == packet.ProtoICMP && t.masq.Load() != nil {
		return 0, false // echoes: the masquerade's steering (masqEcho)
	}
	c := *s
	c.workers = n
	if tp := t.table.Load(); tp != nil && (proto == packet.ProtoTCP || proto == packet.ProtoUDP) {
		src, _, _ = publicOf(*tp, proto, src, sport)
	}
	return pair(c.hostOwner4(src), c.hostOwner4(dst))
}

// OwnerTuple6 is OwnerTuple for an IPv6 flow direction: by host when an
// end is in the host networks (by its /64), else by the flow hash (ports
// for TCP and UDP only, as packet.FlowHashFrame). A reload that changes
// the number of workers computes the IPv6 flows' new owners with it. Not
// for the hot path.
func (t *Table) OwnerTuple6(src, dst [16]byte, sport, dport uint16, proto uint8, n int) int {
	if s := t.hosts.Load(); s != nil && n >= 2 && len(s.v6) > 0 {
		c := *s
		c.workers = n
		if g, ok := pair(c.hostOwner6(src[:]), c.hostOwner6(dst[:])); ok {
			return g
		}
	}
	if proto != packet.ProtoTCP && proto != packet.ProtoUDP {
		sport, dport = 0, 0
	}
	return Owner(packet.FlowHashV6(src, dst, sport, dport, proto), n)
}
