package nat

import (
	"github.com/junction-dataplane/junction/drivers/rss"
	"github.com/junction-dataplane/junction/elements"
	"github.com/junction-dataplane/junction/elements/conntrack"
	"github.com/junction-dataplane/junction/packet"
)

// RSS-aware port choice (SNAT's reply_device key). A reply reaches the
// worker that polls the RX queue the device's RSS puts it on (afxdp: queue
// q is polled by worker q mod workers); when that is not the flow's owner,
// FromDevice hands it over (a copy and a ring). When the reply device
// reports its RSS key and indirection table, SNAT can compute that queue
// for each candidate port, and bind first looks for a port whose reply
// both hashes home and lands on a queue of this worker: the flow's own
// port, then the ports drawn from the flow (the same after a restart).
// Only if none of those qualifies does it choose as without RSS, so the
// preference costs neither ports nor the walk's guarantees.

// rssCandidates is how many ports drawn from the flow the first pass
// looks at (the first flowCandidates of them are those bind draws too):
// with W workers about one in W² qualifies, so with 2 workers 16 find one
// for 99% of flows (8: 92%).
const rssCandidates = 16

// rssPoller is a device that reports its RSS configuration (afxdp).
type rssPoller interface{ RSS() *rss.Config }

// SetReplyRSS makes SNAT prefer ports whose replies land, by c, on a
// queue polled by this worker (nil: no preference). newSNAT calls it for
// reply_device; tests call it with a configuration of their own.
func (e *SNAT) SetReplyRSS(c *rss.Config) {
	if c != nil && !c.Toeplitz() {
		c = nil
	}
	e.rss = c
}

// replyRSS resolves the reply_device key: its RSS configuration, or nil
// when the device has none (veth) or its driver does not report one.
func replyRSS(name string, ctx *elements.Context) (*rss.Config, error) {
	if name == "" {
		return nil, nil
	}
	if ctx.Devices == nil {
		return nil, elements.Errorf("reply_device", "%q: no devices in this graph", name)
	}
	d, _, ok := ctx.Devices.Device(name)
	if !ok {
		return nil, elements.Errorf("reply_device", "no device %q", name)
	}
	if p, ok := d.(rssPoller); ok {
		return p.RSS(), nil
	}
	return nil, nil
}

// rssHome reports whether the reply tuple with port lands on a queue of
// this worker.
func (e *SNAT) rssHome(reply *conntrack.Tuple, port uint16) bool {
	if reply.Proto != packet.ProtoTCP && reply.Proto != packet.ProtoUDP {
		return true
	}
	return e.rss.Queue(reply.Src, reply.Dst, reply.Sport, port)%e.workers == e.worker
}

// bindRSS is bind's first pass with an RSS configuration: the flow's own
// port and the ports drawn from the flow, each only if its reply lands on
// this worker's queue as well.
func (e *SNAT) bindRSS(t *conntrack.Table, c *conntrack.Conn, idx uint32, reply *conntrack.Tuple, addr uint32) bool {
	k := &c.T[0]
	if k.Sport >= e.lo && k.Sport <= e.hi && e.rssHome(reply, k.Sport) && e.try(t, c, idx, reply, k.Sport) {
		return true
	}
	x := uint64(packet.FlowHashV4(k.Src, k.Dst, k.Sport, k.Dport, k.Proto))<<32 | uint64(addr)
	span := uint32(e.hi-e.lo) + 1
	for range rssCandidates {
		x = (x ^ x>>29) * 0xbf58476d1ce4e5b9
		p := e.lo + uint16(uint64(uint32(x>>32))*uint64(span)>>32)
		if e.rssHome(reply, p) && e.try(t, c, idx, reply, p) {
			return true
		}
	}
	return false
}
