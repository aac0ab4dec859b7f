package qos

import "github.com/junction-dataplane/junction/packet"

// creditsPerByte: a bucket counts credits of one bit-nanosecond, so that a
// rate of r bit/s earns r credits every nanosecond and a byte costs 8e9.
const creditsPerByte = 8_000_000_000

// Colours (RFC 2697 section 1, RFC 2698 section 1).
const (
	green = iota
	yellow
	red
)

var colourNames = [3]string{"green", "yellow", "red"}

// meter is one policing bucket pair and when it was last refilled. In
// single-rate mode (RFC 2697) c and e are the committed and excess
// buckets Tc and Te; in two-rate mode (RFC 2698) c is Tc and e is the peak
// bucket Tp. Credits are bytes times creditsPerByte.
type meter struct {
	c, e int64
	last int64
}

// profile is a meter's configuration in credits, per worker.
type profile struct {
	cir, pir int64 // credits per nanosecond (bit/s)
	cbs, ebs int64 // bucket sizes: CBS, and EBS (single rate) or PBS (two rate)
	twoRate  bool
	// fullAfter: nanoseconds after which an idle meter is full whatever
	// it held (bounds dt so that dt*rate cannot overflow); in two-rate
	// mode fullC and fullE bound each bucket's own.
	fullAfter, fullC, fullE int64
}

func newProfile(cir, pir Rate, cbs, ebs Size, twoRate bool) profile {
	p := profile{cir: int64(cir), pir: int64(pir), cbs: int64(cbs) * creditsPerByte,
		ebs: int64(ebs) * creditsPerByte, twoRate: twoRate}
	if twoRate {
		p.fullC, p.fullE = p.cbs/p.cir+1, p.ebs/p.pir+1
		p.fullAfter = max(p.fullC, p.fullE)
	} else {
		p.fullAfter = (p.cbs+p.ebs)/p.cir + 1
	}
	return p
}

// full is a meter with both buckets full: RFC 2697 and 2698 start there.
func (pr *profile) full(now int64) meter { return meter{c: pr.cbs, e: pr.ebs, last: now} }

// colour1 is RFC 2697's colour-blind test (section 3) of a packet of b
// credits, on a meter refilled to now: it returns the packet's colour and
// takes its tokens. Small enough to inline in the packet loop; the
// refill, once per meter and batch, is a call.
func colour1(m *meter, b int64) int {
	if m.c >= b {
		m.c -= b
		return green
	}
	if m.e >= b {
		m.e -= b
		return yellow
	}
	return red
}

// colour2 is RFC 2698's colour-blind test (section 3), as colour1.
func colour2(m *meter, b int64) int {
	switch {
	case m.e < b: // Tp - B < 0
		return red
	case m.c < b: // Tc - B < 0
		m.e -= b
		return yellow
	}
	m.e -= b
	m.c -= b
	return green
}

// colour1Aware is RFC 2697's colour-aware test (section 4) of a packet
// of b credits precoloured pre: green only if it came green and Tc holds
// it, yellow if it came green or yellow and Te holds it, else red.
func colour1Aware(m *meter, b int64, pre int) int {
	if pre == green && m.c >= b {
		m.c -= b
		return green
	}
	if pre <= yellow && m.e >= b {
		m.e -= b
		return yellow
	}
	return red
}

// colour2Aware is RFC 2698's colour-aware test (section 3): red if it came
// red or Tp does not hold it; yellow (Tp -= B) if it came yellow or Tc
// does not hold it; else green (both -= B).
func colour2Aware(m *meter, b int64, pre int) int {
	switch {
	case pre == red || m.e < b:
		return red
	case pre == yellow || m.c < b:
		m.e -= b
		return yellow
	}
	m.e -= b
	m.c -= b
	return green
}

// refill adds the credits earned since m.last (< now).
func (pr *profile) refill(m *meter, now int64) {
	dt := now - m.last
	m.last = now
	if pr.twoRate {
		// RFC 2698: Tc grows at CIR up to CBS, Tp at PIR up to PBS.
		if dt >= pr.fullC {
			m.c = pr.cbs
		} else {
			m.c = min(m.c+dt*pr.cir, pr.cbs)
		}
		if dt >= pr.fullE {
			m.e = pr.ebs
		} else {
			m.e = min(m.e+dt*pr.pir, pr.ebs)
		}
		return
	}
	if dt >= pr.fullAfter {
		m.c, m.e = pr.cbs, pr.ebs
		return
	}
	// RFC 2697: tokens go to Tc while it is below CBS, then to Te, up
	// to EBS.
	m.c += dt * pr.cir
	if m.c > pr.cbs {
		m.e = min(m.e+m.c-pr.cbs, pr.ebs)
		m.c = pr.cbs
	}
}

// ipSize is what a packet costs: its bytes from the IP header on (RFC
// 2697's "bytes of IP packets"; a frame's Ethernet header is not counted,
// padding of a minimum-size frame is).
func ipSize(p *packet.Packet) int {
	return max(len(p.Data)-int(p.L3), 0)
}

// dscpOf returns the packet's DSCP, or -1 when it is neither IPv4 nor IPv6.
func dscpOf(p *packet.Packet) int {
	l3 := int(p.L3)
	if len(p.Data) < l3+2 {
		return -1
	}
	h := p.Data[l3:]
	switch h[0] >> 4 {
	case 4:
		return int(h[1] >> 2)
	case 6:
		return int((h[0]&0x0f)<<2 | h[1]>>6)
	}
	return -1
}

// setDSCP rewrites the packet's DSCP, keeping its ECN bits: in IPv4 with
// the header checksum patched incrementally (RFC 1624), in IPv6 in the
// traffic class (no checksum). It reports false for a packet that is
// neither (or too short).
func setDSCP(p *packet.Packet, d uint8) bool {
	l3 := int(p.L3)
	if len(p.Data) < l3+2 {
		return false
	}
	h := p.Data[l3:]
	switch h[0] >> 4 {
	case 4:
		if len(h) < packet.IPv4MinLen {
			return false
		}
		old := uint16(h[0])<<8 | uint16(h[1])
		h[1] = d<<2 | h[1]&3
		v4 := packet.IPv4(h)
		v4.SetChecksum(packet.UpdateChecksum16(v4.Checksum(), old, uint16(h[0])<<8|uint16(h[1])))
		return true
	case 6:
		// Traffic class = low nibble of byte 0 and high nibble of byte 1;
		// DSCP is its top six bits.
		h[0] = h[0]&0xf0 | d>>2
		h[1] = h[1]&0x3f | (d&3)<<6
		return true
	}
	return false
}
