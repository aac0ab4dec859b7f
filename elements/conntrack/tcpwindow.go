package conntrack

import (
	"encoding/binary"
	"runtime"
	"unsafe"

	"github.com/junction-dataplane/junction/packet"
)

// TCP window tracking, after Linux's tcp_in_window (nf_conntrack_proto_tcp.c,
// itself after Guido van Rooij's "Real Stateful TCP Packet Filtering in IP
// Filter"): for each direction the tracker keeps the highest sequence number
// sent (end), the highest the receiver's advertised window allows (maxend),
// the largest window seen (maxwin, scaled by the SYN's window scale option)
// and the highest acknowledgment sent (maxack). A segment is in the window
// when
//
//	I   its sequence number is not beyond the receiver's window (seq ≤ maxend),
//	II  it acknowledges nothing the other side has not sent (ack ≤ other end),
//	III its data ends no earlier than one window before what was sent, and
//	IV  its acknowledgment is no older than one window (at least 66000 bytes).
//
// A segment failing I or II is invalid ("invalid: tcp window"); one failing
// III or IV (old data retransmitted, a very late ACK) passes without moving
// the state, as Linux (since 5.19) lets them through. The window state lives
// beside the flow table (64 bytes per flow: tcpWin), not in Conn, so that
// the table's entries stay two cache lines and a table without window
// tracking pays nothing.
//
// A flow whose history the tracker lacks is followed liberally, as Linux
// does: one picked up mid-stream (nf_conntrack_tcp_loose: the window scale
// was in the SYN nobody saw), and one whose packets went around the tracker
// (FastTrack, or a device's in-kernel fast path: Linux's flowtable marks an
// offloaded flow the same way). Such a flow still follows the state table.

// maxAckWindow is Linux's MAXACKWINCONST: the least window check IV allows.
const maxAckWindow = 66000

// maxWScale is the largest window scale RFC 7323 allows.
const maxWScale = 14

// tcpDir flags.
const (
	wfScale  = 1 << iota // the SYN carried the window scale option
	wfSack               // the SYN said SACK is permitted
	wfMaxack             // maxack holds an acknowledgment
)

// tcpDir is one direction's window state (Linux's ip_ct_tcp_state).
type tcpDir struct {
	end    uint32 // td_end: sequence number after the last byte sent
	maxend uint32 // td_maxend: the end of the receiver's advertised window
	maxwin uint32 // td_maxwin: the largest window seen; 0: nothing seen yet
	maxack uint32 // td_maxack: the highest acknowledgment sent (wfMaxack)
	scale  uint8  // td_scale: window scale
	flags  uint8
	_      [2]byte
}

// tcpWin is one flow's window state, one cache line.
type tcpWin struct {
	d [2]tcpDir
	// seen is the flow's packet count (both directions of Conn.Packets)
	// once the last segment the tracker passed is counted: a count that
	// moved beyond it means packets went around the tracker.
	seen    uint32
	liberal bool // no window checks: the flow's history is unknown
	_       [19]byte
}

// tcpWindows is a table's window state: one tcpWin per entry, or none
// when window tracking is off.
type tcpWindows struct {
	w   []tcpWin
	mem *mapping
}

// SetTCPWindow turns window tracking on (Linux's default) or off (as
// nf_conntrack_tcp_be_liberal); it allocates or frees the per-flow state.
// Conntrack calls it once it configured the table; flows tracked before
// are followed liberally.
func (t *Table) SetTCPWindow(on bool) {
	t.tw.release()
	if !on || len(t.conns) == 0 {
		return
	}
	n := len(t.conns)
	if p, m := allocRaw(n * int(unsafe.Sizeof(tcpWin{}))); p != nil {
		t.tw.w, t.tw.mem = unsafe.Slice((*tcpWin)(p), n), m
		runtime.AddCleanup(t, func(m *mapping) { m.free() }, m)
	} else {
		t.tw.w = make([]tcpWin, n)
	}
	for i := range t.tw.w {
		t.tw.w[i].liberal = true // live flows, if any, have no history here
	}
}

// TCPWindow reports whether window tracking is on.
func (t *Table) TCPWindow() bool { return t.tw.w != nil }

func (tw *tcpWindows) release() {
	tw.w = nil
	tw.mem.free()
	tw.mem = nil
}

// warmWindows prefetches the window state of the flows warmNew found
// (found: node id + 1, or a missHint), for the TCP packets among them.
func (t *Table) warmWindows(keys []Tuple, found []uint32) {
	if t.tw.w == nil {
		return
	}
	pf := t.pf[:0]
	base := uintptr(unsafe.Pointer(&t.tw.w[0]))
	for i := range keys {
		if f := found[i]; f != 0 && f < missHint && keys[i].Proto == packet.ProtoTCP {
			pf = append(pf, base+uintptr((f-1)>>1)*unsafe.Sizeof(tcpWin{}))
		}
	}
	prefetchAll(pf)
	runtime.KeepAlive(t)
}

// trackTCP moves flow idx (c) through the TCP state table for a segment
// of kind seg in direction dir (l4: its TCP header and payload, to the IP
// total length), checking the segment against the flow's windows when
// window tracking is on; created says the segment just created the flow.
// It returns resOK (the segment passes; the state moved unless the
// segment was to be ignored), resTCPState, resTCPWindow or resMalformed.
func (t *Table) trackTCP(idx uint32, c *Conn, dir uint8, seg int, l4 []byte, created bool) int {
	old := c.State
	ns := tcpNext(old, dir, seg)
	if ns == tcpIV {
		return resTCPState
	}
	if t.tw.w == nil {
		if ns != tcpIG {
			t.setTCPState(idx, ns)
		}
		return resOK
	}
	w := &t.tw.w[idx]
	sum := c.Packets[0] + c.Packets[1]
	doff := int(l4[12]>>4) * 4
	if doff < packet.TCPMinLen || doff > len(l4) {
		return resMalformed
	}
	fl := l4[13]
	switch {
	case created || seg == segSyn && dir == 0 && (old == TCPTimeWait || old == TCPClose):
		// A new flow (or a new connection on a closed one's tuple,
		// which Linux tracks as a new entry).
		w.start(l4, doff, fl)
	case sum != w.seen || c.Fast[0].Offload|c.Fast[1].Offload != 0:
		// Packets went around the tracker (FastTrack, the device's
		// fast path, whose counts are folded in later: handed to it
		// is enough): the windows it saw are stale.
		w.liberal = true
	}
	if ns != tcpIG && !w.liberal {
		if seg == segRst && ns == TCPClose {
			var ok bool
			if ns, ok = w.checkRst(c, old, dir, l4); !ok {
				return resTCPWindow
			}
		}
		switch w.inWindow(old, dir, l4, doff, fl) {
		case winInvalid:
			return resTCPWindow
		case winIgnore:
			ns = tcpIG
		}
	}
	if ns != tcpIG {
		t.setTCPState(idx, ns)
	}
	w.seen = sum + 1 // track counts this packet
	return resOK
}

// start is Linux's tcp_new: a SYN opens the originator's window state
// (its scale and SACK from the options); anything else picks the flow up
// mid-stream, liberally.
func (w *tcpWin) start(l4 []byte, doff int, fl uint8) {
	*w = tcpWin{}
	s := &w.d[0]
	end := segEnd(l4, doff, fl)
	s.end = end
	s.maxwin = max(uint32(binary.BigEndian.Uint16(l4[14:])), 1)
	if fl&packet.TCPSyn != 0 {
		s.maxend = end
		s.options(l4[packet.TCPMinLen:doff])
		return
	}
	s.maxend = end + s.maxwin
	s.flags = wfSack
	w.d[1].flags = wfSack
	w.liberal = true
}

// segEnd is the sequence number after the segment (SYN and FIN count one).
func segEnd(l4 []byte, doff int, fl uint8) uint32 {
	end := binary.BigEndian.Uint32(l4[4:]) + uint32(len(l4)-doff)
	if fl&packet.TCPSyn != 0 {
		end++
	}
	if fl&packet.TCPFin != 0 {
		end++
	}
	return end
}

// before and after compare sequence numbers modulo 2³².
func before(a, b uint32) bool { return int32(a-b) < 0 }
func after(a, b uint32) bool  { return int32(b-a) < 0 }

// options reads the window scale and SACK-permitted options of a SYN
// (Linux's tcp_options; other flags are cleared as there).
func (d *tcpDir) options(opts []byte) {
	d.scale, d.flags = 0, 0
	for i := 0; i < len(opts); {
		switch opts[i] {
		case 0: // end of options
			return
		case 1: // no-op
			i++
			continue
		}
		if i+1 >= len(opts) {
			return
		}
		size := int(opts[i+1])
		if size < 2 || i+size > len(opts) {
			return
		}
		switch {
		case opts[i] == 4 && size == 2:
			d.flags |= wfSack
		case opts[i] == 3 && size == 3:
			d.scale = min(opts[i+2], maxWScale)
			d.flags |= wfScale
		}
		i += size
	}
}

// tcpSack returns the highest right edge of the SACK blocks in opts if it
// is after ack, else ack (Linux's tcp_sack). The common header of a data
// segment, timestamps alone, is recognised first.
func tcpSack(opts []byte, ack uint32) uint32 {
	if len(opts) == 0 || len(opts) == 12 && binary.BigEndian.Uint32(opts) == 0x0101080a {
		return ack
	}
	sack := ack
	for i := 0; i < len(opts); {
		switch opts[i] {
		case 0:
			return sack
		case 1:
			i++
			continue
		}
		if i+1 >= len(opts) {
			return sack
		}
		size := int(opts[i+1])
		if size < 2 || i+size > len(opts) {
			return sack
		}
		if opts[i] == 5 && size >= 10 && (size-2)%8 == 0 {
			for b := i + 2; b < i+size; b += 8 {
				if r := binary.BigEndian.Uint32(opts[b+4:]); after(r, sack) {
					sack = r
				}
			}
		}
		i += size
	}
	return sack
}

// initSender is Linux's tcp_init_sender: a SYN/ACK answering a SYN (or a
// SYN in the reply direction: simultaneous open) opens its direction.
func (w *tcpWin) initSender(dir uint8, l4 []byte, doff int, end, win uint32) {
	s, r := &w.d[dir&1], &w.d[dir&1^1]
	s.end, s.maxend = end, end
	s.maxwin = max(win, 1)
	s.options(l4[packet.TCPMinLen:doff])
	// RFC 7323: scaling is on only if both sides sent the option.
	if s.flags&wfScale == 0 || r.flags&wfScale == 0 {
		s.scale, r.scale = 0, 0
	}
}

// Window check results (Linux's nf_ct_tcp_action).
const (
	winAccept  = iota // in the window: the state moves
	winIgnore         // passes, the state does not move
	winInvalid        // out of the window
)

// inWindow is Linux's tcp_in_window for a segment of direction dir while
// the flow is in TCP state state.
func (w *tcpWin) inWindow(state, dir uint8, l4 []byte, doff int, fl uint8) int {
	s, r := &w.d[dir&1], &w.d[dir&1^1]
	seq := binary.BigEndian.Uint32(l4[4:])
	ack := binary.BigEndian.Uint32(l4[8:])
	win := uint32(binary.BigEndian.Uint16(l4[14:]))
	end := segEnd(l4, doff, fl)
	sack := ack
	if r.flags&wfSack != 0 && doff > packet.TCPMinLen {
		sack = tcpSack(l4[packet.TCPMinLen:doff], ack)
	}

	if s.maxwin == 0 {
		if fl&packet.TCPSyn != 0 {
			w.initSender(dir, l4, doff, end, win)
			if fl&packet.TCPAck == 0 {
				return winAccept // simultaneous open
			}
		} else {
			// Seen in the middle: start from this segment.
			s.end = end
			swin := max(win<<s.scale, 1)
			s.maxwin = swin
			s.maxend = end + swin
			if r.maxwin == 0 {
				r.end, r.maxend = sack, sack
			} else if sack == r.end+1 {
				r.end++ // likely the answer to a keepalive
			}
		}
	} else if fl&packet.TCPSyn != 0 && after(end, s.end) && (state == TCPSynSent || state == TCPSynRecv) {
		// A SYN (or SYN/ACK) sent again with a new sequence number
		// (RFC 793: a reinitialised TCP): start over.
		w.initSender(dir, l4, doff, end, win)
		if dir == 1 && fl&packet.TCPAck == 0 {
			return winAccept
		}
	}

	if fl&packet.TCPAck == 0 || fl&packet.TCPRst != 0 && ack == 0 {
		// No ACK (or a RST with an ACK of zero from a broken stack):
		// as if it acknowledged what was sent.
		ack, sack = r.end, r.end
	}
	if fl&packet.TCPRst != 0 && seq == 0 && state == TCPSynSent {
		seq, end = s.end, s.end // a RST answering a SYN
	}
	maxAck := max(s.maxwin, maxAckWindow)

	// I: not beyond the receiver's window.
	if !before(seq, s.maxend+1) {
		overshot := end - s.maxend + 1
		if r.maxwin != 0 && after(end, s.end-r.maxwin-1) && after(sack, r.end-maxAck-1) &&
			overshot <= r.maxwin && before(sack, r.end+1) {
			// A sender that overran the window by less than a
			// window: passed, and its end recorded so that the
			// ACK of this data is in the window (Linux does the same).
			s.end = end
			return winIgnore
		}
		return winInvalid
	}
	// II: acknowledges nothing unsent.
	if !before(sack, r.end+1) {
		return winInvalid
	}
	// III: old data sent again passes but moves nothing.
	if r.maxwin != 0 && !after(end, s.end-r.maxwin-1) {
		return winIgnore
	}
	// IV: an acknowledgment older than a window, likewise.
	if !after(sack, r.end-maxAck-1) {
		return winIgnore
	}

	if fl&packet.TCPSyn == 0 {
		win <<= s.scale
	}
	if swin := win + (sack - ack); s.maxwin < swin {
		s.maxwin = swin
	}
	if after(end, s.end) {
		s.end = end
	}
	if fl&packet.TCPAck != 0 {
		if s.flags&wfMaxack == 0 || after(ack, s.maxack) {
			s.maxack = ack
			s.flags |= wfMaxack
		}
	}
	if r.maxwin != 0 && after(end, s.maxend) {
		r.maxwin += end - s.maxend
	}
	if after(sack+win, r.maxend-1) {
		r.maxend = sack + win
		if win == 0 {
			r.maxend++
		}
	}
	return winAccept
}

// checkRst is Linux's check of a RST that would close a flow not yet
// closing: one whose sequence number is before what the receiver has
// acknowledged is invalid
// (RFC 5961 blind reset); on an established flow one that is not exactly
// at the acknowledged point (nor right after the sender's last data) passes
// but leaves the state, so that the challenge ACK it draws can follow. It
// returns the state the RST leads to and false when it is invalid.
func (w *tcpWin) checkRst(c *Conn, old, dir uint8, l4 []byte) (uint8, bool) {
	r := &w.d[dir&1^1]
	switch old {
	case TCPFinWait, TCPCloseWait, TCPLastAck, TCPTimeWait, TCPClose:
		// Closing: the numbers may be outdated (Linux's
		// tcp_can_early_drop skips the check too); the window
		// check still applies.
		return TCPClose, true
	}
	if r.flags&wfMaxack == 0 {
		return TCPClose, true
	}
	seq := binary.BigEndian.Uint32(l4[4:])
	established := old == TCPEstablished && c.Flags&FlagAssured != 0
	if seq == 0 && !established {
		return TCPClose, true // the answer to a SYN let through
	}
	if before(seq, r.maxack) {
		return 0, false
	}
	if !established || seq == r.maxack || seq == w.d[dir&1].end {
		return TCPClose, true
	}
	return old, true
}
