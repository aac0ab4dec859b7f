package conntrack_test

import (
	"testing"

	"github.com/junction-dataplane/junction/elements/conntrack"
	ct "github.com/junction-dataplane/junction/elements/conntrack/cttest"
	"github.com/junction-dataplane/junction/elements/elementtest"
	"github.com/junction-dataplane/junction/packet"
)

// winConn drives one TCP connection, client cl:40000 to server sv:80,
// through a Conntrack with window tracking.
type winConn struct {
	t  *testing.T
	h  *elementtest.Harness
	tb *conntrack.Table
}

func newWinConn(t *testing.T, window bool) *winConn {
	cfg := &conntrack.Config{Capacity: 64, TCPWindow: window}
	h := elementtest.New(t, "Conntrack", cfg, nil)
	return &winConn{t: t, h: h, tb: h.Element.(*conntrack.Conntrack).Table()}
}

// send pushes a segment (reply: server to client) and returns its
// annotation's state and the flow's TCP state after it.
func (w *winConn) send(reply bool, flags uint8, seq, ack uint32, win uint16, payload int, opts ...func(*ct.Seg)) (uint8, string) {
	w.t.Helper()
	s := ct.Seg{Src: cl, Dst: sv, Sport: 40000, Dport: 80, Flags: flags, Seq: seq, Ack: ack, Win: win, Payload: payload, WScale: -1}
	if reply {
		s.Src, s.Dst, s.Sport, s.Dport = sv, cl, 80, 40000
	}
	for _, o := range opts {
		o(&s)
	}
	st, _ := push(w.t, w.h, ct.TCPSeg(s))
	return st, w.state()
}

func (w *winConn) state() string {
	k := conntrack.Tuple{Src: 0xc0a8010a, Dst: 0xc6336407, Sport: 40000, Dport: 80, Proto: packet.ProtoTCP}
	idx, _, ok := w.tb.Lookup(&k)
	if !ok {
		return ""
	}
	return conntrack.TCPStateName(w.tb.Conn(idx).State)
}

func (w *winConn) conn() *conntrack.Conn {
	k := conntrack.Tuple{Src: 0xc0a8010a, Dst: 0xc6336407, Sport: 40000, Dport: 80, Proto: packet.ProtoTCP}
	idx, _, ok := w.tb.Lookup(&k)
	if !ok {
		w.t.Fatal("no flow")
	}
	return w.tb.Conn(idx)
}

func (w *winConn) invalid() uint64 { return w.h.Counter("invalid: tcp window") }

// expect checks a segment's fate: passed (annotated established) or
// invalid, and the TCP state after it.
func (w *winConn) expect(what string, gotState uint8, gotTCP string, pass bool, tcpState string) {
	w.t.Helper()
	want := uint8(packet.CtEstablished)
	if !pass {
		want = packet.CtInvalid
	}
	if gotState != want || gotTCP != tcpState {
		w.t.Errorf("%s: annotation %d, TCP state %s; want %d, %s", what, gotState, gotTCP, want, tcpState)
	}
}

func wscale(n int) func(*ct.Seg) { return func(s *ct.Seg) { s.WScale = n; s.SackPerm = true } }
func sack(l, r uint32) func(*ct.Seg) {
	return func(s *ct.Seg) { s.Sack = append(s.Sack, [2]uint32{l, r}) }
}

// Sequence numbers of the connections below: the client's ISN 1000, the
// server's 5000.
const (
	cISN = 1000
	sISN = 5000
)

// handshake opens the connection, each side's window scale (< 0: no
// option) given; the client's SYN window 64240, the server's 65160; the
// client's ACK advertises 502 (scaled).
func (w *winConn) handshake(cs, ss int) {
	w.t.Helper()
	st, tcp := w.send(false, ct.SYN, cISN, 0, 64240, 0, wscale(cs))
	if st != packet.CtNew || tcp != "SYN_SENT" {
		w.t.Fatalf("SYN: %d %s", st, tcp)
	}
	st, tcp = w.send(true, ct.SYN|ct.ACK, sISN, cISN+1, 65160, 0, wscale(ss))
	w.expect("SYN/ACK", st, tcp, true, "SYN_RECV")
	st, tcp = w.send(false, ct.ACK, cISN+1, sISN+1, 502, 0)
	w.expect("ACK", st, tcp, true, "ESTABLISHED")
}

func TestTCPWindowInWindow(t *testing.T) {
	w := newWinConn(t, true)
	w.handshake(7, 7)
	// Data both ways, each acknowledged.
	st, tcp := w.send(false, ct.ACK|ct.PSH, cISN+1, sISN+1, 502, 1000)
	w.expect("client data", st, tcp, true, "ESTABLISHED")
	st, tcp = w.send(true, ct.ACK|ct.PSH, sISN+1, cISN+1001, 509, 1400)
	w.expect("server data", st, tcp, true, "ESTABLISHED")
	st, tcp = w.send(false, ct.ACK, cISN+1001, sISN+1401, 502, 0)
	w.expect("client ACK", st, tcp, true, "ESTABLISHED")
	// The close.
	st, tcp = w.send(false, ct.FIN|ct.ACK, cISN+1001, sISN+1401, 502, 0)
	w.expect("client FIN", st, tcp, true, "FIN_WAIT")
	st, tcp = w.send(true, ct.FIN|ct.ACK, sISN+1401, cISN+1002, 509, 0)
	w.expect("server FIN", st, tcp, true, "LAST_ACK")
	st, tcp = w.send(false, ct.ACK, cISN+1002, sISN+1402, 502, 0)
	w.expect("last ACK", st, tcp, true, "TIME_WAIT")
	if n := w.invalid(); n != 0 {
		t.Errorf("invalid: tcp window = %d for an orderly connection", n)
	}
}

func TestTCPWindowOutOfWindow(t *testing.T) {
	// The server's window for the client: its ACK of the handshake is
	// the SYN/ACK's, 65160 (SYN windows are not scaled); the client's
	// for the server: 502 << 7 = 64256.
	cases := []struct {
		name  string
		reply bool
		seq   uint32
		ack   uint32
	}{
		{"client data beyond the server's window", false, cISN + 1 + 65160 + 2*65160, sISN + 1},
		{"server data beyond the client's window", true, sISN + 1 + 64256 + 2*65160, cISN + 1},
		{"client ACK of data the server never sent", false, cISN + 1, sISN + 1 + 100000},
		{"server ACK of data the client never sent", true, sISN + 1, cISN + 1 + 5000},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w := newWinConn(t, true)
			w.handshake(7, 7)
			st, tcp := w.send(c.reply, ct.ACK|ct.PSH, c.seq, c.ack, 502, 100)
			w.expect(c.name, st, tcp, false, "ESTABLISHED")
			if n := w.invalid(); n != 1 {
				t.Errorf("invalid: tcp window = %d, want 1", n)
			}
			// The connection goes on in the window.
			st, tcp = w.send(false, ct.ACK|ct.PSH, cISN+1, sISN+1, 502, 100)
			w.expect("in-window data after it", st, tcp, true, "ESTABLISHED")

			// The same segment with window tracking off passes.
			w = newWinConn(t, false)
			w.handshake(7, 7)
			st, tcp = w.send(c.reply, ct.ACK|ct.PSH, c.seq, c.ack, 502, 100)
			w.expect(c.name+", tcp_window = false", st, tcp, true, "ESTABLISHED")
		})
	}
}

func TestTCPWindowScaling(t *testing.T) {
	// The server advertises 1000 << 7 = 128000 bytes: the client may send
	// 120000 bytes ahead.
	w := newWinConn(t, true)
	w.handshake(7, 7)
	st, tcp := w.send(true, ct.ACK, sISN+1, cISN+1, 1000, 0)
	w.expect("server window update", st, tcp, true, "ESTABLISHED")
	st, tcp = w.send(false, ct.ACK|ct.PSH, cISN+1+120000, sISN+1, 502, 1000)
	w.expect("client data 120000 ahead, scale 7", st, tcp, true, "ESTABLISHED")

	// Scaling needs both sides' option (RFC 7323): the client sent none,
	// so the server's 1000 is 1000 bytes and the segment is far outside.
	w = newWinConn(t, true)
	w.handshake(-1, 7)
	w.send(true, ct.ACK, sISN+1, cISN+1, 1000, 0)
	st, tcp = w.send(false, ct.ACK|ct.PSH, cISN+1+120000+65160, sISN+1, 502, 1000)
	w.expect("client data beyond an unscaled window", st, tcp, false, "ESTABLISHED")
	// With scaling it would pass.
	w = newWinConn(t, true)
	w.handshake(7, 7)
	w.send(true, ct.ACK, sISN+1, cISN+1, 2000, 0)
	st, tcp = w.send(false, ct.ACK|ct.PSH, cISN+1+120000+65160, sISN+1, 502, 1000)
	w.expect("the same data, window 2000 << 7", st, tcp, true, "ESTABLISHED")
}

func TestTCPWindowRetransmission(t *testing.T) {
	w := newWinConn(t, true)
	w.handshake(7, 7)
	seq := uint32(cISN + 1)
	for range 100 { // 100 × 1400 bytes, each acknowledged
		st, tcp := w.send(false, ct.ACK|ct.PSH, seq, sISN+1, 502, 1400)
		w.expect("data", st, tcp, true, "ESTABLISHED")
		seq += 1400
		w.send(true, ct.ACK, sISN+1, seq, 1000, 0)
	}
	// The last segment again, and the first (more than a window old):
	// both pass (Linux lets already-acknowledged data through: the
	// receiver answers with an ACK), the state does not move.
	st, tcp := w.send(false, ct.ACK|ct.PSH, seq-1400, sISN+1, 502, 1400)
	w.expect("the last segment again", st, tcp, true, "ESTABLISHED")
	st, tcp = w.send(false, ct.ACK|ct.PSH, cISN+1, sISN+1, 502, 1400)
	w.expect("the first segment again", st, tcp, true, "ESTABLISHED")
	// An old FIN-less ACK from the server too.
	st, tcp = w.send(true, ct.ACK, sISN+1, cISN+1, 1000, 0)
	w.expect("a very old ACK", st, tcp, true, "ESTABLISHED")
	if n := w.invalid(); n != 0 {
		t.Errorf("invalid: tcp window = %d for retransmissions", n)
	}
	// Still tracked: data beyond the window is refused.
	st, tcp = w.send(false, ct.ACK|ct.PSH, seq+3*128000, sISN+1, 502, 1400)
	w.expect("data beyond the window after them", st, tcp, false, "ESTABLISHED")
}

func TestTCPWindowSACK(t *testing.T) {
	w := newWinConn(t, true)
	w.handshake(7, 7)
	w.send(false, ct.ACK|ct.PSH, cISN+1, sISN+1, 502, 1000)
	w.send(false, ct.ACK|ct.PSH, cISN+1001, sISN+1, 502, 1000)
	// The server lost the first segment and SACKs the second.
	st, tcp := w.send(true, ct.ACK, sISN+1, cISN+1, 1000, 0, sack(cISN+1001, cISN+2001))
	w.expect("SACK of sent data", st, tcp, true, "ESTABLISHED")
	st, tcp = w.send(true, ct.ACK, sISN+1, cISN+1, 1000, 0, sack(cISN+3001, cISN+4001))
	w.expect("SACK of data never sent", st, tcp, false, "ESTABLISHED")
}

func TestTCPWindowReset(t *testing.T) {
	// After the handshake and 1000 bytes from the client, acknowledged:
	// the server's highest ACK is cISN+1001.
	setup := func() *winConn {
		w := newWinConn(t, true)
		w.handshake(7, 7)
		w.send(false, ct.ACK|ct.PSH, cISN+1, sISN+1, 502, 1000)
		w.send(true, ct.ACK, sISN+1, cISN+1001, 1000, 0)
		return w
	}
	w := setup()
	st, tcp := w.send(false, ct.RST, cISN+500, 0, 0, 0)
	w.expect("RST before the acknowledged point", st, tcp, false, "ESTABLISHED")
	st, tcp = w.send(false, ct.RST, cISN+1001+1000, 0, 0, 0)
	w.expect("RST in the window, not at the acknowledged point", st, tcp, true, "ESTABLISHED")
	st, tcp = w.send(false, ct.RST, cISN+1001+10_000_000, 0, 0, 0)
	w.expect("RST beyond the window", st, tcp, false, "ESTABLISHED")
	st, tcp = w.send(false, ct.RST, cISN+1001, 0, 0, 0)
	w.expect("RST at the acknowledged point", st, tcp, true, "CLOSE")

	// A RST right after the sender's last data closes too (a RST train).
	w = setup()
	w.send(false, ct.ACK|ct.PSH, cISN+1001, sISN+1, 502, 500)
	st, tcp = w.send(false, ct.RST|ct.ACK, cISN+1501, sISN+1, 0, 0)
	w.expect("RST after the sender's data", st, tcp, true, "CLOSE")

	// Answering a SYN: no ACK seen yet from the other side.
	w = newWinConn(t, true)
	w.send(false, ct.SYN, cISN, 0, 64240, 0, wscale(7))
	st, tcp = w.send(true, ct.RST|ct.ACK, 0, cISN+1, 0, 0)
	w.expect("RST answering a SYN", st, tcp, true, "CLOSE")
}

func TestTCPWindowPickup(t *testing.T) {
	// A flow seen first in the middle (a restarted forwarder): its window
	// scale is unknown, so it is followed liberally, as Linux does.
	w := newWinConn(t, true)
	st, tcp := w.send(false, ct.ACK|ct.PSH, 3_000_000_000, 123456, 502, 1400)
	if st != packet.CtNew || tcp != "ESTABLISHED" {
		t.Fatalf("pickup: %d %s", st, tcp)
	}
	st, tcp = w.send(true, ct.ACK, 123456, 3_000_001_400, 500, 0)
	w.expect("the other side's ACK", st, tcp, true, "ESTABLISHED")
	st, tcp = w.send(false, ct.ACK|ct.PSH, 3_000_001_400+5_000_000, 123456, 502, 1400)
	w.expect("data far ahead (the scale may be 14)", st, tcp, true, "ESTABLISHED")
	if n := w.invalid(); n != 0 {
		t.Errorf("invalid: tcp window = %d for a flow picked up mid-stream", n)
	}
	// The next connection on the tuple starts with a SYN and is tracked.
	w.send(false, ct.FIN|ct.ACK, 3_000_001_400, 123456, 502, 0)
	w.send(true, ct.FIN|ct.ACK, 123456, 3_000_001_401, 500, 0)
	w.send(false, ct.ACK, 3_000_001_401, 123457, 502, 0)
	if s := w.state(); s != "TIME_WAIT" {
		t.Fatalf("after the close: %s", s)
	}
	// (the entry is reused: the SYN is annotated established, as before)
	w.send(false, ct.SYN, cISN, 0, 64240, 0, wscale(7))
	w.send(true, ct.SYN|ct.ACK, sISN, cISN+1, 65160, 0, wscale(7))
	st, tcp = w.send(false, ct.ACK, cISN+1, sISN+1, 502, 0)
	w.expect("the new handshake", st, tcp, true, "ESTABLISHED")
	st, tcp = w.send(false, ct.ACK|ct.PSH, cISN+1+4*65160, sISN+1, 502, 100)
	w.expect("data beyond the window of the new connection", st, tcp, false, "ESTABLISHED")
}

func TestTCPWindowBypass(t *testing.T) {
	// Packets that went around the tracker (FastTrack counts them in
	// the flow): its windows are stale, the flow is followed liberally.
	w := newWinConn(t, true)
	w.handshake(7, 7)
	w.conn().Packets[0] += 1000
	st, tcp := w.send(false, ct.ACK|ct.PSH, cISN+1+1000*1400, sISN+1, 502, 1400)
	w.expect("data after a fast-tracked stretch", st, tcp, true, "ESTABLISHED")
	st, tcp = w.send(false, ct.FIN|ct.ACK, cISN+1+1001*1400, sISN+1, 502, 0)
	w.expect("FIN after it", st, tcp, true, "FIN_WAIT")

	// Handed to a device's fast path (its counts come later): the same.
	w = newWinConn(t, true)
	w.handshake(7, 7)
	w.conn().Fast[0].Offload = 1
	st, tcp = w.send(false, ct.FIN|ct.ACK, cISN+1+1000*1400, sISN+1, 502, 0)
	w.expect("FIN after an offloaded stretch", st, tcp, true, "FIN_WAIT")
}

func TestTCPWindowMalformed(t *testing.T) {
	w := newWinConn(t, true)
	w.handshake(7, 7)
	f := ct.TCPSeg(ct.Seg{Src: cl, Dst: sv, Sport: 40000, Dport: 80, Flags: ct.ACK, Seq: cISN + 1, Ack: sISN + 1, Win: 502, WScale: -1})
	f[14+20+12] = 0xf0 // a 60-byte header in a 20-byte segment
	if st, _ := push(t, w.h, f); st != packet.CtInvalid || w.h.Counter("invalid: malformed") != 1 {
		t.Errorf("a data offset beyond the segment: annotation %d, invalid: malformed %d", st, w.h.Counter("invalid: malformed"))
	}
}

func TestTCPWindowAllocs(t *testing.T) {
	w := newWinConn(t, true)
	w.handshake(7, 7)
	var fs [][]byte
	for i := range 32 {
		fs = append(fs, ct.TCPSeg(ct.Seg{Src: cl, Dst: sv, Sport: 40000, Dport: 80, Flags: ct.ACK | ct.PSH, Seq: cISN + 1 + uint32(i)*100, Ack: sISN + 1, Win: 502, Payload: 100, WScale: -1, Timestamps: true}),
			ct.TCPSeg(ct.Seg{Src: sv, Dst: cl, Sport: 80, Dport: 40000, Flags: ct.ACK, Seq: sISN + 1, Ack: cISN + 1 + uint32(i)*100, Win: 1000, WScale: -1, Timestamps: true}))
	}
	if a := w.h.AllocsPerBatch(100, fs...); a != 0 {
		t.Fatalf("%v allocs per batch", a)
	}
	if n := w.invalid(); n != 0 {
		t.Errorf("invalid: tcp window = %d", n)
	}
}

func TestTCPWindowOvershoot(t *testing.T) {
	// A sender that overruns the advertised window by less than a window
	// passes (some stacks do), and the receiver's ACK of that data too.
	w := newWinConn(t, true)
	w.handshake(7, 7)
	end := uint32(cISN + 1 + 65160 + 500 + 1000)
	st, tcp := w.send(false, ct.ACK|ct.PSH, cISN+1+65160+500, sISN+1, 502, 1000)
	w.expect("data 1500 bytes beyond the window", st, tcp, true, "ESTABLISHED")
	st, tcp = w.send(true, ct.ACK, sISN+1, end, 1000, 0)
	w.expect("its ACK", st, tcp, true, "ESTABLISHED")
	if n := w.invalid(); n != 0 {
		t.Errorf("invalid: tcp window = %d", n)
	}
}

func TestTCPWindowResetWhileClosing(t *testing.T) {
	// A server closing with unread data resets after its FIN, at the
	// FIN's sequence number, already acknowledged; as in Linux the reset
	// check is skipped once a side is closing (the window check is not).
	w := newWinConn(t, true)
	w.handshake(7, 7)
	w.send(false, ct.ACK|ct.PSH, cISN+1, sISN+1, 502, 1000)
	w.send(true, ct.FIN|ct.ACK, sISN+1, cISN+1001, 1000, 0)
	w.send(false, ct.ACK, cISN+1001, sISN+2, 502, 0)
	st, tcp := w.send(true, ct.RST|ct.ACK, sISN+1, cISN+1001, 0, 0)
	w.expect("RST at the acknowledged FIN's number", st, tcp, true, "CLOSE")
	st, tcp = w.send(true, ct.RST, sISN+1, 0, 0, 0)
	w.expect("the RST again, closed", st, tcp, true, "CLOSE")
	st, tcp = w.send(true, ct.RST, sISN+1+10_000_000, 0, 0, 0)
	w.expect("a RST beyond the window, closed", st, tcp, false, "CLOSE")
}
