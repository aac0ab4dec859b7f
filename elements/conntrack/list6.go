package conntrack

import (
	"net/netip"
	"time"

	"github.com/junction-dataplane/junction/elements"
	"github.com/junction-dataplane/junction/packet"
)

// flows6 lists the worker's live IPv6 flows after the IPv4 ones (Flows),
// with the same copy-then-recheck rule: an entry reused during the copy is
// skipped. It reports whether yield wants more. IPv6 flows have no NAT.
func (e *Conntrack) flows6(gen uint32, yield func(elements.Flow) bool) bool {
	t6 := e.t.t6 // the table's: a reload that kept the table kept this one too
	if t6 == nil || len(t6.conns) == 0 {
		return true
	}
	now := t6.Now()
	for i := 1; i < len(t6.conns); i++ {
		p := &t6.conns[i]
		tag := p.Tag
		if p.Flags&flagLive == 0 {
			continue
		}
		c := *p
		if p.Tag != tag || p.Flags&flagLive == 0 {
			continue
		}
		if !yield(flowOf6(&c, now, gen, e.worker)) {
			return false
		}
	}
	return true
}

func flowOf6(c *Conn6, now int64, gen uint32, worker int) elements.Flow {
	f := elements.Flow{
		Proto:   protoName6(c.T[0].Proto),
		Orig:    tupleOf6(c.T[0]),
		Reply:   tupleOf6(c.T[1]),
		Assured: c.Flags&FlagAssured != 0,
		Packets: [2]uint64{uint64(c.Packets[0]), uint64(c.Packets[1])},
		Bytes:   c.Bytes,
		Worker:  worker,
	}
	if c.Expires > now {
		f.Timeout = time.Duration(c.Expires - now)
	}
	switch {
	case c.T[0].Proto == packet.ProtoTCP:
		f.State = TCPStateName(c.State)
	case c.Flags&FlagSeenReply != 0:
		f.State = "REPLIED"
	default:
		f.State = "UNREPLIED"
	}
	for d := range c.Fast {
		if c.Fast[d].Valid && c.Fast[d].Gen == gen {
			f.FastTracked = true
		}
	}
	return f
}

func tupleOf6(t Tuple6) elements.FlowTuple {
	return elements.FlowTuple{Src: netip.AddrFrom16(t.Src), Dst: netip.AddrFrom16(t.Dst), Sport: t.Sport, Dport: t.Dport}
}

// protoName6 names an IPv6 upper-layer protocol: ICMPv6 is "icmp6", so
// that a listing tells it from ICMPv4 (the filter "icmp" matches both).
func protoName6(p uint8) string {
	if p == protoICMPv6 {
		return "icmp6"
	}
	return protoName(p)
}
