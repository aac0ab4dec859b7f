package qos

import (
	"math"

	"github.com/junction-dataplane/junction/packet"
)

// CoDel (RFC 8289), the Shaper's active queue management. A drop-tail
// queue in front of a rate limit fills during TCP's slow start and then
// loses a whole burst at once: a lost retransmission leaves the sender
// waiting for its timeout, and the queue, once full, keeps adding its
// whole length to every packet's delay (benchmarks/qos.md measured both).
// CoDel looks at how long each packet waited (its sojourn time) when it
// leaves. While the sojourn time stays above target for a whole interval,
// the queue is a standing one, not a burst passing through: a packet is
// dropped (or, ECN-capable, marked Congestion Experienced) and the next
// drop is scheduled interval/sqrt(count) later, count growing with every
// drop until the sojourn time falls below target; the sender slows down
// after one loss or mark instead of a burst of them.

// codel is one band's CoDel state (RFC 8289 section 5).
type codel struct {
	firstAbove int64 // when the sojourn time will have been above target for an interval; 0: it is not above
	dropNext   int64 // when the next drop is due while dropping
	count      uint32
	lastCount  uint32
	dropping   bool
}

// codelParams are a Shaper's CoDel settings (nanoseconds).
type codelParams struct {
	on       bool
	target   int64
	interval int64
	ecn      bool
}

// controlLaw is when the drop after the count-th one is due: t plus
// interval/sqrt(count) (RFC 8289 5.5). It runs once per drop, not per
// packet: a square root is a few cycles.
func controlLaw(t, interval int64, count uint32) int64 {
	return t + int64(float64(interval)/math.Sqrt(float64(max(count, 1))))
}

// okToDrop is RFC 8289's dodequeue test for a packet leaving at now after
// waiting sojourn, with backlog bytes still queued behind it in its band:
// true once the sojourn time has been above target for an interval. A
// band holding no more than a packet's worth is never a standing queue.
func (c *codel) okToDrop(pr *codelParams, sojourn, now int64, backlog int) bool {
	if sojourn < pr.target || backlog <= maxPacket {
		c.firstAbove = 0
		return false
	}
	if c.firstAbove == 0 {
		c.firstAbove = now + pr.interval
		return false
	}
	return now >= c.firstAbove
}

// maxPacket is RFC 8289's MAXPACKET: a band with no more than this queued
// behind the leaving packet is not judged.
const maxPacket = packet.BufSize - packet.Headroom

// verdict is what CoDel does with a packet about to leave.
type verdict uint8

const (
	pass verdict = iota
	drop         // drop it (not ECN-capable, or ECN off)
	mark         // send it marked Congestion Experienced
)

// decide is RFC 8289's dequeue for one packet leaving at now after
// waiting sojourn (backlog bytes behind it in its band; ect: the packet
// is ECN-capable). A marked packet leaves, a dropped one does not; either
// way it counts as a drop of the control law.
func (c *codel) decide(pr *codelParams, sojourn, now int64, backlog int, ect bool) verdict {
	ok := c.okToDrop(pr, sojourn, now, backlog)
	act := drop
	if pr.ecn && ect {
		act = mark
	}
	if c.dropping {
		if !ok {
			// The sojourn time went below target: leave the dropping
			// state.
			c.dropping = false
			return pass
		}
		if now >= c.dropNext {
			c.count++
			c.dropNext = controlLaw(c.dropNext, pr.interval, c.count)
			return act
		}
		return pass
	}
	if !ok {
		return pass
	}
	// Enter the dropping state. If it was left only a little while ago
	// (within 16 intervals), start from about the drop rate it had
	// reached rather than from one (RFC 8289 5.6).
	c.dropping = true
	delta := c.count - c.lastCount
	c.count = 1
	if delta > 1 && now-c.dropNext < 16*pr.interval {
		c.count = delta
	}
	c.dropNext = controlLaw(now, pr.interval, c.count)
	c.lastCount = c.count
	return act
}

// empty is what an empty band does to its state: a queue that drained is
// not standing (RFC 8289: dequeue of an empty queue).
func (c *codel) empty() {
	c.firstAbove = 0
	c.dropping = false
}

// ecnCapable reports whether the packet is IPv4 or IPv6 with an ECN-capable
// transport (ECT(0), ECT(1)) or already marked CE.
func ecnCapable(p *packet.Packet) bool {
	l3 := int(p.L3)
	if len(p.Data) < l3+packet.IPv4MinLen {
		return false
	}
	h := p.Data[l3:]
	switch h[0] >> 4 {
	case 4:
		return h[1]&3 != 0
	case 6:
		return h[1]>>4&3 != 0
	}
	return false
}

// markCE sets the packet's ECN field to Congestion Experienced (RFC
// 3168), the IPv4 header checksum patched (RFC 1624). The caller checked
// ecnCapable.
func markCE(p *packet.Packet) {
	h := p.Data[p.L3:]
	switch h[0] >> 4 {
	case 4:
		old := uint16(h[0])<<8 | uint16(h[1])
		h[1] |= 3
		v4 := packet.IPv4(h)
		v4.SetChecksum(packet.UpdateChecksum16(v4.Checksum(), old, uint16(h[0])<<8|uint16(h[1])))
	case 6:
		h[1] |= 3 << 4
	}
}
