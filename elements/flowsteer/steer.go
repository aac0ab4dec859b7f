package flowsteer

import (
	"encoding/binary"
	"sync"
	"sync/atomic"

	"github.com/junction-dataplane/junction/elements"
	"github.com/junction-dataplane/junction/packet"
)

// Steering. Workers own flows: both directions of a flow must reach the
// worker holding its Conntrack entry. Software spreading (and RSS with a
// symmetric key) sends a packet to the worker its symmetric flow hash
// names. SNAT keeps that true by choosing ports whose reply tuple hashes to
// the owning worker (Target). DNAT cannot choose anything: the original
// direction hashes (client, public address:port) and the reply (backend,
// client), two different tuples. Table.Hash closes that gap statelessly:
// it hashes a packet whose source is a DNAT backend as if the source were
// the public address and port the backend serves, so the reply of a DNAT'd
// flow hashes exactly like its original direction.

// Reverse maps a DNAT backend endpoint back to its public one.
type Reverse struct {
	Proto    uint8
	Backend  uint32 // address
	Lo, Hi   uint16 // backend source ports covered (0, 0: any)
	Public   uint32
	PubLo    uint16 // public port of backend port Lo (0: keep the port)
	KeepPort bool
}

// Table is one graph's steering table: the union of the Reverses its DNAT
// elements set.
type Table struct {
	mu    sync.Mutex
	sets  map[any][]Reverse
	table atomic.Pointer[[]Reverse] // nil or empty: no DNAT rules
	pins  atomic.Pointer[Pins]      // nil: none (pins.go)
	masqs map[string]*Masq
	masq  masqPtr // nil: no SNAT steers by port (masq.go)
	// hostsBy are the host networks each FromDevice asked for; hosts
	// their union (hosts.go), nil: none.
	hostsBy map[string]*Hosts
	hosts   hostsPtr
}

type tableKey struct{}

// Of returns the steering table of ctx's graph.
func Of(ctx *elements.Context) *Table {
	return elements.GraphValue(ctx, tableKey{}, func() *Table { return &Table{} })
}

// Set replaces owner's reverses (nil withdraws them) and publishes the
// union of every owner's. Every worker's instance of a DNAT sets the same
// rules; duplicates are published once. Not for the hot path.
func (t *Table) Set(owner any, rs []Reverse) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.sets == nil {
		t.sets = map[any][]Reverse{}
	}
	if rs == nil {
		delete(t.sets, owner)
	} else {
		t.sets[owner] = rs
	}
	var all []Reverse
	seen := map[Reverse]bool{}
	for _, rs := range t.sets {
		for _, r := range rs {
			if !seen[r] {
				seen[r] = true
				all = append(all, r)
			}
		}
	}
	t.table.Store(&all)
}

// Hash is packet.FlowHashFrame for choosing a packet's worker: for a TCP or
// UDP packet from a DNAT backend endpoint (of any DNAT element of the
// graph) the source is first mapped back to the public address and port it
// serves, so that both directions of a DNAT'd flow hash alike. An ICMP
// error hashes as the packet it quotes (FlowHashFrame does that too), with
// either quoted endpoint that is a DNAT backend mapped back to its public
// one: the quote is the packet as it was when the error's sender saw it,
// on the backend's side of the router (translated) or on the client's
// (public), and either way it names the flow whose owner must get the
// error. Other packets get FlowHashFrame's hash. It takes no lock and
// allocates nothing; with no DNAT rules it costs one atomic load more than
// FlowHashFrame. With a masquerading SNAT that steers by port (masq.go),
// packets of masqueraded flows are steered by port ownership instead;
// with host networks (hosts.go), a packet with an end in them by that
// host, before anything else.
func (t *Table) Hash(frame []byte, l3 int) uint32 {
	if s := t.hosts.Load(); s != nil {
		if h, ok := t.hostHash(s, frame, l3); ok {
			return h
		}
	}
	if s := t.masq.Load(); s != nil {
		if h, ok := t.masqHash(s, frame, l3); ok {
			return h
		}
	}
	if src, dst, sport, dport, proto, ok := t.Tuple(frame, l3); ok {
		return packet.FlowHashV4(src, dst, sport, dport, proto)
	}
	return packet.FlowHashFrame(frame, l3)
}

// Tuple returns the tuple Hash hashes for a packet from a DNAT backend, or
// for an ICMP error quoting a packet from or to one (ok == false: the
// packet is neither, hash it as it is).
func (t *Table) Tuple(frame []byte, l3 int) (src, dst uint32, sport, dport uint16, proto uint8, ok bool) {
	tp := t.table.Load()
	if tp == nil || len(*tp) == 0 || l3 < packet.EthernetLen || l3+packet.IPv4MinLen+4 > len(frame) ||
		binary.BigEndian.Uint16(frame[l3-2:]) != packet.EtherTypeIPv4 {
		return
	}
	h := frame[l3:]
	if q, isErr := packet.ICMPErrorQuote4(h); isErr {
		return quoteTuple(*tp, q)
	}
	proto = h[9]
	ihl := int(h[0]&0x0f) * 4
	if proto != packet.ProtoTCP && proto != packet.ProtoUDP || h[0]>>4 != 4 || ihl < packet.IPv4MinLen ||
		len(h) < ihl+4 || binary.BigEndian.Uint16(h[6:])&(packet.IPv4FlagMF|packet.IPv4FragOffset) != 0 {
		return
	}
	src = binary.BigEndian.Uint32(h[12:])
	dst = binary.BigEndian.Uint32(h[16:])
	sport = binary.BigEndian.Uint16(h[ihl:])
	dport = binary.BigEndian.Uint16(h[ihl+2:])
	for i := range *tp {
		if psrc, psport, hit := (*tp)[i].public(proto, src, sport); hit {
			return psrc, dst, psport, dport, proto, true
		}
	}
	return
}

// quoteTuple is Tuple for an ICMP error quoting q: the quoted tuple with
// each endpoint that is a DNAT backend's mapped to the public one it
// serves, ok when one was.
func quoteTuple(rs []Reverse, q []byte) (src, dst uint32, sport, dport uint16, proto uint8, ok bool) {
	src, dst, sport, dport, proto = packet.Tuple4(q)
	if proto != packet.ProtoTCP && proto != packet.ProtoUDP {
		return src, dst, sport, dport, proto, false
	}
	src, sport, okSrc := publicOf(rs, proto, src, sport)
	dst, dport, okDst := publicOf(rs, proto, dst, dport)
	return src, dst, sport, dport, proto, okSrc || okDst
}

// publicOf maps a:port to the public endpoint it serves when it is a DNAT
// backend endpoint of one of rs (hit), else returns it unchanged.
func publicOf(rs []Reverse, proto uint8, a uint32, port uint16) (uint32, uint16, bool) {
	for i := range rs {
		if pa, pp, hit := rs[i].public(proto, a, port); hit {
			return pa, pp, true
		}
	}
	return a, port, false
}

// public maps a reply's source, a DNAT backend's address and port, back to
// the public endpoint the rule serves, if the rule is the backend's.
func (r *Reverse) public(proto uint8, src uint32, sport uint16) (uint32, uint16, bool) {
	if r.Proto != proto || r.Backend != src || r.Lo != 0 && (sport < r.Lo || sport > r.Hi) {
		return src, sport, false
	}
	if !r.KeepPort {
		sport = r.PubLo + (sport - r.Lo)
	}
	return r.Public, sport, true
}

// HashTuple is Hash for a flow direction given by its tuple rather than a
// frame (a reload that moves flows between workers computes their owners
// from the flow table): ports count for TCP and UDP only, as in
// packet.FlowHashFrame, and a TCP or UDP source that is a DNAT backend is
// mapped back to the public endpoint it serves. Not for the hot path.
func (t *Table) HashTuple(src, dst uint32, sport, dport uint16, proto uint8) uint32 {
	if proto != packet.ProtoTCP && proto != packet.ProtoUDP {
		return packet.FlowHashV4(src, dst, 0, 0, proto)
	}
	if tp := t.table.Load(); tp != nil {
		for i := range *tp {
			if psrc, psport, hit := (*tp)[i].public(proto, src, sport); hit {
				src, sport = psrc, psport
				break
			}
		}
	}
	return packet.FlowHashV4(src, dst, sport, dport, proto)
}

// Owner is the worker among workers that flow hash h is steered to (the
// mapping FromDevice's spreading and SNAT's port choice use).
func Owner(h uint32, workers int) int { return int(uint64(h) * uint64(workers) >> 32) }

// Public is the endpoint Hash hashes for a TCP or UDP source src:sport:
// the public address and port a DNAT backend endpoint serves, else
// src:sport itself. SNAT's port choice hashes a reply tuple through it,
// because the reply of a hairpinned flow (DNAT'd to an inside backend and
// masqueraded) comes from the backend, and FromDevice steers it by the
// public endpoint. No lock, no allocation: one atomic load and a walk of
// the (few) reverses.
func (t *Table) Public(proto uint8, src uint32, sport uint16) (uint32, uint16) {
	if proto != packet.ProtoTCP && proto != packet.ProtoUDP {
		return src, sport
	}
	if tp := t.table.Load(); tp != nil {
		src, sport, _ = publicOf(*tp, proto, src, sport)
	}
	return src, sport
}
