package conntrack_test

import (
	"net/netip"
	"testing"

	"github.com/junction-dataplane/junction/elements/conntrack"
	"github.com/junction-dataplane/junction/elements/elementtest"
	"github.com/junction-dataplane/junction/packet"
)

// TestClosingEarlyDrop6 is TestClosingEarlyDrop for the IPv6 table:
// closing TCP connections are evictable although assured, in the order
// they began to close; established ones are never evicted, and a table of
// nothing but those refuses a new flow ("table full").
func TestClosingEarlyDrop6(t *testing.T) {
	const capacity = 8 // the IPv6 table is as large below 1024
	in, out := "2001:db8:1::10", "2001:db8:2::2"
	var h *elementtest.Harness
	var t6 *conntrack.Table6
	fresh := func() {
		h = elementtest.New(t, "Conntrack", &conntrack.Config{Capacity: capacity}, nil)
		t6 = h.Element.(*conntrack.Conntrack).Table().Table6()
	}
	seg := func(i int, flags string, reply bool) []byte {
		port := uint16(40000 + i)
		if reply {
			return f6{src: out, dst: in, sport: 80, dport: port, proto: "tcp", flags: flags}.bytes(t)
		}
		return f6{src: in, dst: out, sport: port, dport: 80, proto: "tcp", flags: flags}.bytes(t)
	}
	state := func(i int) (uint8, bool) {
		k := conntrack.Tuple6{Src: netip.MustParseAddr(in).As16(), Dst: netip.MustParseAddr(out).As16(),
			Sport: uint16(40000 + i), Dport: 80, Proto: packet.ProtoTCP}
		c, ok := t6.Find6(&k)
		if !ok {
			return 0, false
		}
		if c.Flags&conntrack.FlagAssured == 0 {
			t.Fatalf("connection %d is not assured", i)
		}
		return c.State, true
	}
	open := func(i int) {
		push(t, h, seg(i, "S", false))
		push(t, h, seg(i, "SA", true))
		push(t, h, seg(i, "A", false))
		if s, ok := state(i); !ok || s != conntrack.TCPEstablished {
			t.Fatalf("connection %d: state %s, want ESTABLISHED", i, conntrack.TCPStateName(s))
		}
	}
	closeTo := func(i int, want uint8) {
		for _, s := range []struct {
			flags string
			reply bool
			state uint8
		}{
			{"FA", false, conntrack.TCPFinWait},
			{"A", true, conntrack.TCPCloseWait},
			{"FA", true, conntrack.TCPLastAck},
			{"A", false, conntrack.TCPTimeWait},
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

	// A full table of connections in TIME_WAIT admits every new one,
	// evicting the oldest closed connection.
	fresh()
	for i := range capacity {
		open(i)
		closeTo(i, conntrack.TCPTimeWait)
	}
	for i := range capacity {
		if st, _ := push(t, h, seg(100+i, "S", false)); st != packet.CtNew {
			t.Fatalf("new connection %d in a table full of TIME_WAIT: state %d, want new (counters %v)", i, st, h.Stats.Counters())
		}
		if _, ok := state(i); ok {
			t.Fatalf("new connection %d: the oldest TIME_WAIT connection %d is still there", i, i)
		}
	}
	if e, f := h.Counter("evicted"), h.Counter("table full"); e != capacity || f != 0 {
		t.Fatalf("evicted = %d, table full = %d; want %d, 0", e, f, capacity)
	}

	// Established connections stay; each closing state is evictable, in
	// the order the connections began to close.
	fresh()
	for i := range capacity {
		open(i)
	}
	closing := []uint8{conntrack.TCPTimeWait, conntrack.TCPFinWait, conntrack.TCPLastAck, conntrack.TCPCloseWait}
	for j, s := range closing {
		closeTo(2*j+1, s) // 1, 3, 5, 7 close; 0, 2, 4, 6 stay established
	}
	push(t, h, seg(5, "R", true)) // LAST_ACK → CLOSE
	if s, _ := state(5); s != conntrack.TCPClose {
		t.Fatalf("connection 5 after RST: %s", conntrack.TCPStateName(s))
	}
	for j := range closing {
		if st, _ := push(t, h, seg(200+j, "S", false)); st != packet.CtNew {
			t.Fatalf("new connection %d: state %d, want new", j, st)
		}
		if _, ok := state(2*j + 1); ok {
			t.Fatalf("new connection %d: closing connection %d was not the one evicted", j, 2*j+1)
		}
	}
	for j := range closing {
		push(t, h, seg(200+j, "SA", true))
		push(t, h, seg(200+j, "A", false))
		if s, _ := state(200 + j); s != conntrack.TCPEstablished {
			t.Fatalf("connection %d: %s", 200+j, conntrack.TCPStateName(s))
		}
	}
	if st, _ := push(t, h, seg(400, "S", false)); st != 0xff {
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
}
