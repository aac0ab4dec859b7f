package conntrack_test

import (
	"testing"

	"github.com/junction-dataplane/junction/elements/conntrack"
	ct "github.com/junction-dataplane/junction/elements/conntrack/cttest"
	"github.com/junction-dataplane/junction/packet"
)

// TestClosingEarlyDrop: closing TCP connections (FIN_WAIT, CLOSE_WAIT,
// LAST_ACK, TIME_WAIT, CLOSE) are assured but evictable, as Linux's
// early_drop takes them (tcp_can_early_drop): a table full of connections
// waiting out TIME_WAIT admits new flows, each counted as evicted, oldest
// closing first, while established connections are never evicted and a
// table of nothing but those refuses ("table full").
func TestClosingEarlyDrop(t *testing.T) {
	const capacity = 8
	h, tb, _ := newCT(t, capacity, nil)
	seg := func(i int, flags uint8, reply bool) []byte {
		port := uint16(40000 + i)
		if reply {
			return ct.Frame(ct.F{Proto: "tcp", Src: sv, Dst: cl, Sport: 80, Dport: port, Flags: flags})
		}
		return ct.Frame(ct.F{Proto: "tcp", Src: cl, Dst: sv, Sport: port, Dport: 80, Flags: flags})
	}
	key := func(i int) conntrack.Tuple {
		return conntrack.Tuple{Src: 0xc0a8010a, Dst: 0xc6336407, Sport: uint16(40000 + i), Dport: 80, Proto: packet.ProtoTCP}
	}
	state := func(i int) (uint8, bool) {
		k := key(i)
		idx, _, ok := tb.Lookup(&k)
		if !ok {
			return 0, false
		}
		c := tb.Conn(idx)
		if !c.Has(conntrack.FlagAssured) {
			t.Fatalf("connection %d is not assured", i)
		}
		return c.State, true
	}
	open := func(i int) {
		push(t, h, seg(i, ct.SYN, false))
		push(t, h, seg(i, ct.SYN|ct.ACK, true))
		push(t, h, seg(i, ct.ACK, false))
		if s, ok := state(i); !ok || s != conntrack.TCPEstablished {
			t.Fatalf("connection %d: state %s, want ESTABLISHED", i, conntrack.TCPStateName(s))
		}
	}
	closeTo := func(i int, want uint8) {
		for _, s := range []struct {
			flags uint8
			reply bool
			state uint8
		}{
			{ct.FIN | ct.ACK, false, conntrack.TCPFinWait},
			{ct.ACK, true, conntrack.TCPCloseWait},
			{ct.FIN | ct.ACK, true, conntrack.TCPLastAck},
			{ct.ACK, false, conntrack.TCPTimeWait},
		} {
			push(t, h, seg(i, s.flags, s.reply))
			if got, _ := state(i); got != s.state {
				t.Fatalf("connection %d: state %s, want %s", i, conntrack.TCPStateName(got), conntrack.TCPStateName(s.state))
			}
			if s.state == want {
				return
			}
		}
	}

	// A full table of connections in TIME_WAIT: every new connection
	// gets in, evicting the oldest closed one.
	for i := range capacity {
		open(i)
		closeTo(i, conntrack.TCPTimeWait)
	}
	for i := range capacity {
		if st, _ := push(t, h, seg(100+i, ct.SYN, false)); st != packet.CtNew {
			t.Fatalf("new connection %d in a table full of TIME_WAIT: state %d, want new", i, st)
		}
		if _, ok := state(i); ok {
			t.Fatalf("new connection %d: the oldest TIME_WAIT connection %d is still there", i, i)
		}
	}
	if n := h.Counter("evicted"); n != capacity {
		t.Fatalf("evicted = %d, want %d", n, capacity)
	}
	if n := h.Counter("table full"); n != 0 {
		t.Fatalf("table full = %d, want 0", n)
	}

	// Established connections stay; each closing state is evictable, in
	// the order the connections began to close.
	h2, tb2, _ := newCT(t, capacity, nil)
	h, tb = h2, tb2
	for i := range capacity {
		open(i)
	}
	closing := []uint8{conntrack.TCPTimeWait, conntrack.TCPFinWait, conntrack.TCPLastAck, conntrack.TCPCloseWait}
	for j, s := range closing {
		closeTo(2*j+1, s) // connections 1, 3, 5, 7 close; 0, 2, 4, 6 stay established
	}
	push(t, h, seg(5, ct.RST, true)) // LAST_ACK → CLOSE
	if s, _ := state(5); s != conntrack.TCPClose {
		t.Fatalf("connection 5 after RST: %s", conntrack.TCPStateName(s))
	}
	for j := range closing {
		if st, _ := push(t, h, seg(200+j, ct.SYN, false)); st != packet.CtNew {
			t.Fatalf("new connection %d: state %d, want new", j, st)
		}
		if _, ok := state(2*j + 1); ok {
			t.Fatalf("new connection %d: closing connection %d was not the one evicted", j, 2*j+1)
		}
	}
	// Now four established connections and four new ones: once those are
	// established too, nothing is evictable and a new flow is refused.
	for j := range closing {
		push(t, h, seg(200+j, ct.SYN|ct.ACK, true))
		push(t, h, seg(200+j, ct.ACK, false))
		if s, _ := state(200 + j); s != conntrack.TCPEstablished {
			t.Fatalf("connection %d: %s", 200+j, conntrack.TCPStateName(s))
		}
	}
	if st, _ := push(t, h, seg(400, ct.SYN, false)); st != 0xff {
		t.Fatalf("new connection in a table of established ones: state %d, want dropped", st)
	}
	for _, i := range []int{0, 2, 4, 6, 200, 201, 202, 203} {
		if s, ok := state(i); !ok || s != conntrack.TCPEstablished {
			t.Fatalf("established connection %d was evicted", i)
		}
	}
	if e, f := h.Counter("evicted"), h.Counter("table full"); e != 4 || f != 1 {
		t.Fatalf("evicted = %d, table full = %d; want 4, 1", e, f)
	}
	h.CheckNoLeak()
}
