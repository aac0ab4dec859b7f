package conntrack

import (
	"strconv"
	"time"

	"github.com/junction-dataplane/junction/elements"
	"github.com/junction-dataplane/junction/packet"
)

var _ elements.FlowLister = (*Conntrack)(nil)

// Flows lists the worker's live flows, IPv4 then IPv6 (list6.go), for the control socket (forwarder
// show flows). It runs on another goroutine than the worker that owns the
// table and takes no lock: the entries are plain memory that never moves
// or goes away while the element lives, and each is copied and then
// checked (its tag and live flag read again) so that an entry reused while
// it was being copied is skipped rather than shown half old, half new.
// Counters and the timeout of a flow the worker updates during the copy
// may be a few packets behind.
func (e *Conntrack) Flows(yield func(elements.Flow) bool) {
	e.listMu.Lock()
	defer e.listMu.Unlock()
	t := e.t
	if t == nil || len(t.conns) == 0 {
		return
	}
	now := t.now()
	gen := t.Generation().Current()
	for i := 1; i < len(t.conns); i++ {
		p := &t.conns[i]
		tag := p.Tag
		if p.Flags&flagLive == 0 {
			continue
		}
		c := *p
		if p.Tag != tag || p.Flags&flagLive == 0 {
			continue
		}
		if !yield(flowOf(&c, now, gen, e.worker)) {
			return
		}
	}
	e.flows6(gen, yield)
}

func flowOf(c *Conn, now int64, gen uint32, worker int) elements.Flow {
	f := elements.Flow{
		Proto:   protoName(c.T[0].Proto),
		Orig:    tupleOf(c.T[0]),
		Reply:   tupleOf(c.T[1]),
		Assured: c.Has(FlagAssured),
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
	case c.Has(FlagSeenReply):
		f.State = "REPLIED"
	default:
		f.State = "UNREPLIED"
	}
	switch {
	case c.Has(FlagSNAT) && c.Has(FlagDNAT):
		f.NAT = "snat+dnat"
	case c.Has(FlagSNAT):
		f.NAT = "snat"
	case c.Has(FlagDNAT):
		f.NAT = "dnat"
	}
	for d := range c.Fast {
		if c.Fast[d].Valid && c.Fast[d].Gen == gen {
			f.FastTracked = true
		}
	}
	f.FastTracked = f.FastTracked || c.InCache()
	return f
}

func tupleOf(t Tuple) elements.FlowTuple {
	return elements.FlowTuple{Src: packet.AddrFromU32(t.Src), Dst: packet.AddrFromU32(t.Dst), Sport: t.Sport, Dport: t.Dport}
}

func protoName(p uint8) string {
	switch p {
	case packet.ProtoTCP:
		return "tcp"
	case packet.ProtoUDP:
		return "udp"
	case packet.ProtoICMP:
		return "icmp"
	}
	return strconv.Itoa(int(p))
}
