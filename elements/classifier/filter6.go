package classifier

import (
	"encoding/binary"
	"fmt"

	"github.com/junction-dataplane/junction/elements"
	"github.com/junction-dataplane/junction/packet"
)

// matchFlow6 is MatchFlow for an IPv6 flow: the frame built on the stack
// is Ethernet/IPv6 with the flow's original tuple, so "ip6", "src host
// 2001:db8::1", "tcp and dst port 443" and "icmp6" match as they would
// match its first packet.
func (f *Filter) matchFlow6(fl elements.Flow) bool {
	var b [14 + 40 + 20]byte
	binary.BigEndian.PutUint16(b[12:], packet.EtherTypeIPv6)
	h := b[14:]
	h[0] = 6 << 4
	binary.BigEndian.PutUint16(h[4:], 20) // payload length
	h[7] = 64
	var proto uint8
	switch fl.Proto {
	case "tcp":
		proto = packet.ProtoTCP
	case "udp":
		proto = packet.ProtoUDP
	case "icmp6", "icmp":
		proto = 58
	default:
		var n int
		fmt.Sscan(fl.Proto, &n)
		proto = uint8(n)
	}
	h[6] = proto
	s, d := fl.Orig.Src.As16(), fl.Orig.Dst.As16()
	copy(h[8:24], s[:])
	copy(h[24:40], d[:])
	l4 := h[40:]
	if proto == 58 {
		l4[0] = 128 // echo request: the identifier is in both ports
		binary.BigEndian.PutUint16(l4[4:], fl.Orig.Sport)
	} else {
		binary.BigEndian.PutUint16(l4[0:], fl.Orig.Sport)
		binary.BigEndian.PutUint16(l4[2:], fl.Orig.Dport)
		if proto == packet.ProtoTCP {
			l4[12] = 5 << 4
		}
	}
	return f.Match(b[:], 14, flowCt(fl))
}

// flowCt is the ct state a packet of flow fl would carry.
func flowCt(fl elements.Flow) uint8 {
	if fl.State == "ESTABLISHED" || fl.State == "REPLIED" || fl.Assured {
		return packet.CtEstablished
	}
	return packet.CtNew
}
