package conntrack

import "github.com/junction-dataplane/junction/packet"

// TCP states, as Linux's nf_conntrack_proto_tcp names them.
const (
	TCPNone        = iota // sNO: no state yet
	TCPSynSent            // sSS: SYN seen from the originator
	TCPSynRecv            // sSR: SYN/ACK seen from the responder
	TCPEstablished        // sES
	TCPFinWait            // sFW: one side sent FIN
	TCPCloseWait          // sCW: the FIN was acknowledged
	TCPLastAck            // sLA: FIN from both sides, the last not yet acknowledged
	TCPTimeWait           // sTW
	TCPClose              // sCL: reset or fully closed
	TCPSynSent2           // sS2: simultaneous open (SYN seen from both sides)
	tcpStates

	tcpIV = 0xfe // invalid: the packet does not fit the state; the state is kept
	tcpIG = 0xff // ignored: the packet passes but does not change the state
)

var tcpStateNames = [tcpStates]string{"NONE", "SYN_SENT", "SYN_RECV", "ESTABLISHED", "FIN_WAIT",
	"CLOSE_WAIT", "LAST_ACK", "TIME_WAIT", "CLOSE", "SYN_SENT2"}

// TCPStateName is the name of a TCP state (for tests and the stats).
func TCPStateName(s uint8) string {
	if int(s) < len(tcpStateNames) {
		return tcpStateNames[s]
	}
	return "?"
}

// Segment kinds, the rows of the transition table.
const (
	segSyn = iota
	segSynAck
	segFin
	segAck
	segRst
	segNone
)

// tcpTransitions[dir][segment][state] is the next state; it follows the
// table of Linux's nf_conntrack_proto_tcp.c (tcp_conntracks); a segment
// that fits is then checked against the flow's windows (tcpwindow.go) when
// window tracking is on. A flow may be picked up in the middle from an ACK
// with no entry (nf_conntrack_tcp_loose).
var tcpTransitions = [2][6][tcpStates]uint8{
	{ // original direction
		//           sNO          sSS          sSR          sES          sFW          sCW          sLA          sTW          sCL          sS2
		segSyn:    {TCPSynSent, TCPSynSent, tcpIG, tcpIG, tcpIG, tcpIG, tcpIG, TCPSynSent, TCPSynSent, TCPSynSent2},
		segSynAck: {tcpIV, tcpIV, TCPSynRecv, tcpIV, tcpIV, tcpIV, tcpIV, tcpIV, tcpIV, TCPSynRecv},
		segFin:    {tcpIV, tcpIV, TCPFinWait, TCPFinWait, TCPLastAck, TCPLastAck, TCPLastAck, TCPTimeWait, TCPClose, tcpIV},
		segAck:    {TCPEstablished, tcpIV, TCPEstablished, TCPEstablished, TCPCloseWait, TCPCloseWait, TCPTimeWait, TCPTimeWait, TCPClose, tcpIV},
		segRst:    {tcpIV, TCPClose, TCPClose, TCPClose, TCPClose, TCPClose, TCPClose, TCPClose, TCPClose, TCPClose},
		segNone:   {tcpIV, tcpIV, tcpIV, tcpIV, tcpIV, tcpIV, tcpIV, tcpIV, tcpIV, tcpIV},
	},
	{ // reply direction
		//           sNO    sSS          sSR    sES             sFW           sCW           sLA          sTW          sCL       sS2
		segSyn:    {tcpIV, TCPSynSent2, tcpIV, tcpIV, tcpIV, tcpIV, tcpIV, TCPSynSent, tcpIV, TCPSynSent2},
		segSynAck: {tcpIV, TCPSynRecv, tcpIG, tcpIG, tcpIG, tcpIG, tcpIG, tcpIG, tcpIG, TCPSynRecv},
		segFin:    {tcpIV, tcpIV, TCPFinWait, TCPFinWait, TCPLastAck, TCPLastAck, TCPLastAck, TCPTimeWait, TCPClose, tcpIV},
		segAck:    {tcpIV, tcpIG, TCPSynRecv, TCPEstablished, TCPCloseWait, TCPCloseWait, TCPTimeWait, TCPTimeWait, TCPClose, tcpIG},
		segRst:    {tcpIV, TCPClose, TCPClose, TCPClose, TCPClose, TCPClose, TCPClose, TCPClose, TCPClose, TCPClose},
		segNone:   {tcpIV, tcpIV, tcpIV, tcpIV, tcpIV, tcpIV, tcpIV, tcpIV, tcpIV, tcpIV},
	},
}

// tcpValidFlags marks the flag combinations a TCP segment may carry (as
// Linux's tcp_valid_flags, ECE and CWR ignored): SYN with FIN, no flags at
// all, FIN without ACK and the like are invalid.
var tcpValidFlags = func() (v [64]bool) {
	const (
		f, s, r, p, a, u = packet.TCPFin, packet.TCPSyn, packet.TCPRst, packet.TCPPsh, packet.TCPAck, packet.TCPUrg
	)
	for _, x := range []uint8{s, s | u, s | a, r, r | a, r | a | p, f | a, f | a | u, a, a | u, a | p, a | p | u,
		f | a | p, f | a | p | u} {
		v[x] = true
	}
	return v
}()

// tcpSegment classifies a segment's flags into a transition-table row, or
// reports that the combination is invalid.
func tcpSegment(flags uint8) (int, bool) {
	flags &= 0x3f
	if !tcpValidFlags[flags] {
		return segNone, false
	}
	switch {
	case flags&packet.TCPRst != 0:
		return segRst, true
	case flags&packet.TCPSyn != 0:
		if flags&packet.TCPAck != 0 {
			return segSynAck, true
		}
		return segSyn, true
	case flags&packet.TCPFin != 0:
		return segFin, true
	case flags&packet.TCPAck != 0:
		return segAck, true
	}
	return segNone, true
}

// tcpNext returns the state after a segment of kind seg in direction dir.
func tcpNext(state uint8, dir uint8, seg int) uint8 {
	if state >= tcpStates {
		return tcpIV
	}
	return tcpTransitions[dir&1][seg][state]
}
