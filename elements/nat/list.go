package nat

import (
	"net/netip"
	"time"

	"github.com/junction-dataplane/junction/elements/flowsteer"
	"github.com/junction-dataplane/junction/internal/monotime"
	"github.com/junction-dataplane/junction/packet"
)

// Mapping is one endpoint-independent mapping as `forwarder show nat`
// lists it.
type Mapping struct {
	Proto     string         `json:"proto"`
	Inside    netip.AddrPort `json:"inside"`
	Outside   netip.AddrPort `json:"outside"`
	Filtering string         `json:"filtering"`
	// Remotes are the addresses a new flow may come in from under
	// address-dependent filtering (the last two the mapping sent to).
	Remotes []netip.Addr  `json:"remotes,omitempty"`
	Age     time.Duration `json:"age_ns"`
	// Timeout is what is left of the mapping's timeout; once it is 0
	// the mapping ends with its last tracked flow.
	Timeout time.Duration `json:"timeout_ns"`
	Worker  int           `json:"worker"`
}

// MappingLister is an element with endpoint mappings (SNAT).
type MappingLister interface {
	Mappings(yield func(Mapping) bool)
}

var _ MappingLister = (*SNAT)(nil)

func addr4(a uint32) netip.Addr {
	return netip.AddrFrom4([4]byte{byte(a >> 24), byte(a >> 16), byte(a >> 8), byte(a)})
}

// Mappings lists the mappings of the ports this instance's worker owns,
// for the control socket. It runs on another goroutine than the worker
// and takes no lock, as Conntrack's Flows: a slot is copied and its key
// read again, so that a mapping replaced during the copy is skipped.
func (e *SNAT) Mappings(yield func(Mapping) bool) {
	s := e.ms
	if s == nil {
		return
	}
	now := uint32(monotime.Now() >> 30)
	for pi, proto := range []uint8{packet.ProtoTCP, packet.ProtoUDP} {
		name := "tcp"
		if proto == packet.ProtoUDP {
			name = "udp"
		}
		for ai, a := range s.addrs {
			ents := s.ents[pi][ai]
			for i := range ents {
				port := s.lo + uint16(i)
				if flowsteer.Port(port, s.workers) != e.worker {
					continue
				}
				key := ents[i].word.Load()
				if key&wordUsed == 0 {
					continue
				}
				since, until, remote := ents[i].since, ents[i].until, ents[i].remote
				if ents[i].word.Load() != key {
					continue
				}
				m := Mapping{Proto: name, Inside: netip.AddrPortFrom(addr4(uint32(key>>32)), uint16(key>>16)),
					Outside: netip.AddrPortFrom(addr4(a), port), Filtering: filterNames[s.filtering], Worker: e.worker,
					Age: time.Duration(int64(now-min(since, now)) << 30)}
				if until > now {
					m.Timeout = time.Duration(int64(until-now) << 30)
				}
				if s.filtering == filterAD {
					for _, r := range remote {
						if r != 0 {
							m.Remotes = append(m.Remotes, addr4(r))
						}
					}
				}
				if !yield(m) {
					return
				}
			}
		}
	}
}
