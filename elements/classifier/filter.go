package classifier

import (
	"encoding/binary"
	"fmt"

	"github.com/junction-dataplane/junction/elements"
	"github.com/junction-dataplane/junction/packet"
)

// Filter is one expression of the rule language, compiled for matching
// outside a Classifier: forwarder trace and capture select packets with
// it, forwarder show flows selects flows. The empty text and "-" match
// everything.
type Filter struct {
	prog *program
	text string
}

// FilterError is a filter that does not parse: the text, the 1-based
// column of the offending token and what is wrong there.
type FilterError struct {
	Text string
	Col  int
	Msg  string
}

func (e *FilterError) Error() string {
	return fmt.Sprintf("filter %q: col %d: %s", e.Text, e.Col, e.Msg)
}

// ParseFilter compiles text.
func ParseFilter(text string) (*Filter, error) {
	if text == "" {
		text = "-"
	}
	n, perr := parseRule(text)
	if perr != nil {
		return nil, &FilterError{Text: text, Col: perr.Col, Msg: perr.Msg}
	}
	return &Filter{prog: compile([]*node{n}), text: text}, nil
}

// String is the filter's text.
func (f *Filter) String() string { return f.text }

// Match reports whether frame (network header at l3; ct the packet's
// connection-tracking state) matches. It allocates nothing.
func (f *Filter) Match(frame []byte, l3 int, ct uint8) bool {
	return f.prog.classifyCt(frame, l3, ct) == 0
}

// MatchPacket matches a packet on its frame, L3 annotation and ct state.
func (f *Filter) MatchPacket(p *packet.Packet) bool {
	return f.Match(p.Data, int(p.L3), p.Ct.State)
}

// MatchFlow matches a tracked flow on its original tuple (as the first
// packet arrived, before NAT), as a packet of that tuple would match:
// "tcp and dst port 80", "src net 192.168.1.0/24", "ct established";
// an IPv6 flow as an IPv6 packet ("ip6 and src net 2001:db8::/32").
func (f *Filter) MatchFlow(fl elements.Flow) bool {
	if !fl.Orig.Src.Is4() && fl.Orig.Src.IsValid() {
		return f.matchFlow6(fl) // filter6.go
	}
	var b [14 + 20 + 20]byte
	binary.BigEndian.PutUint16(b[12:], packet.EtherTypeIPv4)
	h := b[14:]
	h[0] = 0x45
	binary.BigEndian.PutUint16(h[2:], 40)
	h[8] = 64
	var proto uint8
	switch fl.Proto {
	case "tcp":
		proto = packet.ProtoTCP
	case "udp":
		proto = packet.ProtoUDP
	case "icmp":
		proto = packet.ProtoICMP
	default:
		var n int
		fmt.Sscan(fl.Proto, &n)
		proto = uint8(n)
	}
	h[9] = proto
	if fl.Orig.Src.Is4() && fl.Orig.Dst.Is4() {
		s, d := fl.Orig.Src.As4(), fl.Orig.Dst.As4()
		copy(h[12:16], s[:])
		copy(h[16:20], d[:])
	}
	l4 := h[20:]
	if proto == packet.ProtoICMP {
		l4[0] = 8 // echo request: the identifier is in both ports
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
