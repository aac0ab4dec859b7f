package ip

import (
	"encoding/binary"
	"net/netip"

	"github.com/junction-dataplane/junction/elements"
	"github.com/junction-dataplane/junction/packet"
)

// What ICMPError and ICMP6Error share: their icmp_code, rate and burst
// keys, and the way they lay the error out in the packet's own buffer.
// Each keeps its own checks of what it may answer: the RFC 1812 and RFC
// 4443 rules differ in every step.

// lookup returns the value of k: its number, or the value of its name in
// names (after normName folding); false for an unknown name.
func (k NumberOrName) lookup(names map[string]int) (int, bool) {
	if k.Name == "" {
		return k.Num, true
	}
	v, ok := names[normName(k.Name)]
	return v, ok
}

// icmpCode resolves the icmp_code key k of type t (codes: the names of each
// type's codes) and checks its range.
func icmpCode(k NumberOrName, t int, codes map[int]map[string]int) (uint8, error) {
	code, ok := k.lookup(codes[t])
	if !ok {
		return 0, elements.Errorf("icmp_code", "unknown code %q for type %d", k.Name, t)
	}
	if code < 0 || code > 255 {
		return 0, elements.Errorf("icmp_code", "code %d out of range 0..255", code)
	}
	return uint8(code), nil
}

// checkRate checks the rate and burst keys of the token bucket.
func checkRate(rate, burst int) error {
	if rate < 0 || rate > 1e9 {
		return elements.Errorf("rate", "%d out of range 0..1000000000 (0 = unlimited)", rate)
	}
	if burst < 1 || burst > 1e6 {
		return elements.Errorf("burst", "%d out of range 1..1000000", burst)
	}
	return nil
}

// errorFrame lays out the error about p, whose L3 header is at l3, in p's
// buffer so that the q bytes quoted (from l3 on) need not move: the new
// frame starts quoteAt bytes before them, in the headroom. Only when the
// headroom is too small (an exotic driver) do they move. It writes the
// Ethernet header (to dst from src, etherType) and returns the frame; the
// caller writes the IP and ICMP headers in between and calls sent.
func errorFrame(p *packet.Packet, l3, quoteAt, q int, dst, src *[6]byte, etherType uint16) []byte {
	buf := p.Buffer()
	qsrc := p.Headroom() + l3
	start := qsrc - quoteAt
	if start < 0 {
		start = 0
		copy(buf[quoteAt:quoteAt+q], buf[qsrc:qsrc+q])
	}
	f := buf[start : start+quoteAt+q]
	copy(f[0:6], dst[:])
	copy(f[6:12], src[:])
	binary.BigEndian.PutUint16(f[12:], etherType)
	return f
}

// sent makes the error frame f p's data, to be routed.
func sent(p *packet.Packet, f []byte) {
	p.Data = f
	p.L3 = packet.EthernetLen
	p.NextHop = netip.Addr{}
}
