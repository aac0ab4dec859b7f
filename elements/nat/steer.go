package nat

import (
	"encoding/binary"
	"sync"
	"sync/atomic"

	"github.com/junction-dataplane/junction/packet"
)

// Steering. Workers own flows: both directions of a flow must reach the
// worker holding its Conntrack entry. Software spreading (and RSS with a
// symmetric key) sends a packet to the worker its symmetric flow hash
// names. SNAT keeps that true by choosing ports whose reply tuple hashes to
// the owning worker (Target). DNAT cannot choose anything: the original
// direction hashes (client, public address:port) and the reply (backend,
// client), two different tuples. SteeringHash closes that gap statelessly:
// it hashes a packet whose source is a DNAT backend as if the source were
// the public address and port the backend serves, so the reply of a DNAT'd
// flow hashes exactly like its original direction.

// reverse maps a DNAT backend endpoint back to its public one.
type reverse struct {
	proto    uint8
	backend  uint32 // address
	lo, hi   uint16 // backend source ports covered (0, 0: any)
	public   uint32
	pubLo    uint16 // public port of backend port lo (0: keep the port)
	keepPort bool
}

var steer struct {
	mu    sync.Mutex
	sets  map[*DNAT][]reverse
	table atomic.Pointer[[]reverse] // nil or empty: no DNAT rules
}

// reverses lists what SteeringHash must map back for a set of rules.
func reverses(rules []Rule) []reverse {
	var rs []reverse
	for _, r := range rules {
		for _, b := range r.Backends {
			v := reverse{proto: r.Proto, backend: b.Addr, public: r.Addr}
			switch {
			case r.Proto == packet.ProtoICMP:
				// Echo: no ports; the identifier is not hashed.
			case b.Port == 0: // ports kept
				v.lo, v.hi, v.keepPort = r.Lo, r.Hi, true
			case r.Lo == 0: // any public port -> one backend port: ambiguous
				continue
			default:
				v.lo, v.hi, v.pubLo = b.Port, b.Port+(r.Hi-r.Lo), r.Lo
			}
			rs = append(rs, v)
		}
	}
	return rs
}

func registerSteering(e *DNAT, rules []Rule) {
	steer.mu.Lock()
	defer steer.mu.Unlock()
	if steer.sets == nil {
		steer.sets = map[*DNAT][]reverse{}
	}
	if rules == nil {
		delete(steer.sets, e)
	} else {
		steer.sets[e] = reverses(rules)
	}
	var all []reverse
	seen := map[reverse]bool{}
	for _, rs := range steer.sets {
		for _, r := range rs {
			if !seen[r] { // every worker registers the same rules
				seen[r] = true
				all = append(all, r)
			}
		}
	}
	steer.table.Store(&all)
}

// SteeringHash is packet.FlowHashFrame for choosing a packet's worker: for
// a TCP or UDP packet from a DNAT backend endpoint (of any DNAT element of
// the process) the source is first mapped back to the public address and
// port it serves, so that both directions of a DNAT'd flow hash alike.
// Other packets get FlowHashFrame's hash. It takes no lock and allocates
// nothing; with no DNAT rules it costs one atomic load more than
// FlowHashFrame. Software spreading (elements/devices) should call it in
// place of packet.FlowHash.
func SteeringHash(frame []byte, l3 int) uint32 {
	if src, dst, sport, dport, proto, ok := SteeringTuple(frame, l3); ok {
		return packet.FlowHashV4(src, dst, sport, dport, proto)
	}
	return packet.FlowHashFrame(frame, l3)
}

// SteeringTuple returns the tuple SteeringHash hashes for a packet from a
// DNAT backend (ok == false: the packet is not one, hash it as it is).
func SteeringTuple(frame []byte, l3 int) (src, dst uint32, sport, dport uint16, proto uint8, ok bool) {
	tp := steer.table.Load()
	if tp == nil || len(*tp) == 0 || l3 < packet.EthernetLen || l3+packet.IPv4MinLen+4 > len(frame) ||
		binary.BigEndian.Uint16(frame[l3-2:]) != packet.EtherTypeIPv4 {
		return
	}
	h := frame[l3:]
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
		r := &(*tp)[i]
		if r.proto != proto || r.backend != src || r.lo != 0 && (sport < r.lo || sport > r.hi) {
			continue
		}
		src = r.public
		if !r.keepPort {
			sport = r.pubLo + (sport - r.lo)
		}
		return src, dst, sport, dport, proto, true
	}
	return
}
