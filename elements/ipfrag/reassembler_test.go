package ipfrag

import (
	"encoding/binary"
	"slices"
	"testing"

	"github.com/junction-dataplane/junction/elements"
	"github.com/junction-dataplane/junction/elements/elementtest"
	"github.com/junction-dataplane/junction/elements/flowsteer"
	"github.com/junction-dataplane/junction/packet"
)

const (
	inside  = 0xc0a8010a // 192.168.1.10
	outside = 0xcb007102 // 203.0.113.2
)

// RFC 4787 REQ-14: a NAT MUST support receiving in-order and out-of-order
// fragments. Every order of a datagram's fragments gives back the datagram
// that was fragmented, byte for byte, and the fragments are counted as
// reassembled once it is complete.
func TestRFC4787REQ14InAndOutOfOrder(t *testing.T) {
	want := udpFrame(inside, outside, 40000, 5000, 7, 2972, nil) // a 3000-byte datagram
	frags := split(want, 1480)
	orders := [][]int{{0, 1, 2}, {2, 1, 0}, {1, 0, 2}, {2, 0, 1}, {1, 2, 0}}
	for _, ord := range orders {
		h, e := reassembler(t, nil, nil)
		for i, k := range ord {
			h.Push(0, frags[k])
			got := frames(h, 0)
			if i < len(ord)-1 && len(got) != 0 {
				t.Fatalf("order %v: a datagram after %d fragments", ord, i+1)
			}
		}
		got := frames(h, 0)
		if len(got) != 1 {
			t.Fatalf("order %v: %d datagrams out, want 1", ord, len(got))
		}
		sameFrame(t, got[0], want)
		ooo := uint64(0)
		if !slices.IsSorted(ord) {
			ooo = 1
		}
		if h.Counter("out of order") != ooo {
			t.Errorf("order %v: out of order %d, want %d", ord, h.Counter("out of order"), ooo)
		}
		if h.Counter("reassembled") != 3 || h.Counter("datagrams") != 1 || e.t.live != 0 {
			t.Errorf("order %v: reassembled %d datagrams %d live %d", ord, h.Counter("reassembled"), h.Counter("datagrams"), e.t.live)
		}
		if h.Pool.Outstanding() != 0 {
			t.Errorf("order %v: %d fragment frames not freed", ord, h.Pool.Outstanding())
		}
	}
}

// The first fragment's options and link header are the datagram's; DF
// kept, MF and offset cleared.
func TestReassembleKeepsHeaders(t *testing.T) {
	opts := []byte{0x94, 0x04, 0, 0} // router alert (copied), 4 bytes
	want := udpFrame(inside, outside, 1, 2, 9, 1000, opts)
	frags := split(want, 512)
	h, _ := reassembler(t, nil, nil)
	h.Push(0, frags[1])
	h.Push(0, frags[0])
	got := frames(h, 0)
	if len(got) != 1 {
		t.Fatalf("%d datagrams", len(got))
	}
	sameFrame(t, got[0], want)
	if !packet.IPv4(got[0][14:]).ChecksumValid() {
		t.Error("header checksum")
	}
}

// Non-fragments pass in order around the fragments, and a completed
// datagram takes its last fragment's place.
func TestNonFragmentsPassInOrder(t *testing.T) {
	a := udpFrame(inside, outside, 1, 2, 1, 10, nil)
	b := udpFrame(inside, outside, 1, 2, 2, 11, nil)
	d := udpFrame(inside, outside, 3, 4, 3, 2000, nil)
	fr := split(d, 1480)
	h, _ := reassembler(t, nil, nil)
	h.Push(0, a, fr[0], b, fr[1])
	got := frames(h, 0)
	if len(got) != 3 {
		t.Fatalf("%d packets out", len(got))
	}
	sameFrame(t, got[0], a)
	sameFrame(t, got[1], b)
	sameFrame(t, got[2], d)
}

func TestOverlappingFragmentsDropTheDatagram(t *testing.T) {
	d := udpFrame(inside, outside, 1, 2, 5, 3000, nil)
	h, e := reassembler(t, nil, nil)
	h.Push(0, fragment(d, 0, 1480, true), fragment(d, 1472, 2000, true))
	if n := h.Counter("overlapping fragments"); n != 2 || e.t.live != 0 {
		t.Fatalf("overlapping fragments %d (want 2: the held one and the new one), live %d", n, e.t.live)
	}
	// The same piece twice: only the copy is dropped.
	h.Push(0, fragment(d, 0, 1480, true), fragment(d, 0, 1480, true))
	h.Push(0, fragment(d, 1480, 3008, false))
	if h.Counter("duplicate fragment") != 1 || len(frames(h, 0)) != 1 {
		t.Fatalf("duplicate %d, datagrams %d", h.Counter("duplicate fragment"), len(frames(h, 0)))
	}
	// A last fragment that ends before a fragment already held.
	h.Reset()
	h.Push(0, fragment(d, 1480, 2960, true), fragment(d, 8, 1000, false))
	if h.Counter("overlapping fragments") != 4 {
		t.Fatalf("overlapping fragments %d after a short last fragment", h.Counter("overlapping fragments"))
	}
}

// RFC 1858: a first fragment too short for the ports, or a TCP fragment
// at offset 8 (rewriting the flags), is dropped.
func TestRFC1858TinyFragments(t *testing.T) {
	d := udpFrame(inside, outside, 1, 2, 5, 100, nil)
	h, e := reassembler(t, nil, nil)
	tiny := fragment(d, 0, 0, true) // no payload at all
	h.Push(0, tiny)
	if h.Counter("malformed fragment") != 1 {
		t.Errorf("empty fragment: malformed %d", h.Counter("malformed fragment"))
	}
	tcp := fragment(d, 0, 16, true)
	tcp[14+9] = packet.ProtoTCP
	at8 := fragment(d, 8, 24, true)
	at8[14+9] = packet.ProtoTCP
	for _, f := range [][]byte{tcp, at8} {
		binary.BigEndian.PutUint16(f[24:], 0)
		binary.BigEndian.PutUint16(f[24:], packet.Checksum(f[14:34]))
	}
	h.Push(0, tcp, at8)
	if h.Counter("tiny first fragment") != 2 || e.t.live != 0 {
		t.Errorf("tiny first fragment %d, live %d", h.Counter("tiny first fragment"), e.t.live)
	}
}

func TestOversizedDatagram(t *testing.T) {
	d := udpFrame(inside, outside, 1, 2, 5, 100, nil)
	f := fragment(d, 0, 16, false)
	binary.BigEndian.PutUint16(f[14+6:], 8190) // offset 65,520 + 16 bytes
	h, _ := reassembler(t, nil, nil)
	h.Push(0, f)
	if h.Counter("datagram over 65535 bytes") != 1 {
		t.Errorf("oversized %d", h.Counter("datagram over 65535 bytes"))
	}
}

// The timeout drops a datagram that did not complete, from the tick or
// when a late fragment finds it.
func TestTimeout(t *testing.T) {
	d := udpFrame(inside, outside, 1, 2, 5, 3000, nil)
	fr := split(d, 1480)
	h, e := reassembler(t, nil, nil)
	var now int64 = 1e9
	e.now = func() int64 { return now }
	h.Push(0, fr[0], fr[1])
	now += 29e9
	e.Tick(now)
	if e.t.live != 1 {
		t.Fatal("dropped before the timeout")
	}
	now += 1e9
	e.Tick(now)
	if h.Counter("timeout") != 2 || e.t.live != 0 {
		t.Fatalf("timeout %d, live %d", h.Counter("timeout"), e.t.live)
	}
	// A late fragment after expiry without a tick.
	h.Push(0, fr[0])
	now += 31e9
	h.Push(0, fr[1], fr[2])
	if h.Counter("timeout") != 3 || len(frames(h, 0)) != 0 || e.t.live != 1 {
		t.Fatalf("timeout %d, out %d, live %d", h.Counter("timeout"), len(frames(h, 0)), e.t.live)
	}
}

// Bad input: a flood of datagrams that never complete. The table never
// holds more than capacity datagrams (memory bounded), the oldest are
// evicted and counted, and a datagram whose fragments arrive together
// still completes, as do the plain packets of an established flow.
func TestFloodOfIncompleteDatagrams(t *testing.T) {
	h, e := reassembler(t, &ReassemblerConfig{Capacity: 16, Timeout: 30e9, MaxFragments: 64}, nil)
	plain := udpFrame(inside, outside, 1000, 53, 1, 64, nil)
	good := udpFrame(inside, outside, 1001, 53, 0xffff, 2000, nil)
	for round := range 100 {
		var batch [][]byte
		for i := range 32 {
			junk := udpFrame(0x0a000000+uint32(round), outside, 9, 9, uint16(i), 2000, nil)
			batch = append(batch, fragment(junk, 0, 1480, true))
		}
		batch = append(batch, plain)
		h.Push(0, batch...)
		if e.t.live > 16 || e.pool.Outstanding() > 16 {
			t.Fatalf("round %d: %d datagrams, %d buffers held", round, e.t.live, e.pool.Outstanding())
		}
	}
	if got := len(frames(h, 0)); got != 100 {
		t.Fatalf("%d plain packets out, want 100", got)
	}
	if n := h.Counter("table full"); n != 100*32-16 {
		t.Errorf("table full %d, want %d", n, 100*32-16)
	}
	h.Reset()
	fr := split(good, 1480)
	h.Push(0, fr[0], plain, fr[1])
	if got := frames(h, 0); len(got) != 2 || len(got[1]) != len(good) {
		t.Fatalf("during the flood: %d out", len(got))
	}
}

// Bad input: a 64 KiB datagram in 8-byte fragments is dropped as too many
// fragments after max_fragments, at every size of table.
func TestDatagramIn8ByteFragments(t *testing.T) {
	h, e := reassembler(t, nil, &elementtest.Options{PoolSize: 64})
	d := udpFrame(inside, outside, 1, 2, 5, 65000, nil)
	ihl := 20
	total := len(d) - 14 - ihl
	n := 0
	for off := 0; off < total; off += 8 {
		end := min(off+8, total)
		h.Push(0, fragment(d, off, end, end < total))
		n++
		if e.t.live > 1 {
			t.Fatal("more than one datagram")
		}
	}
	// 64 held, the 65th refused: 65 dropped as too many; the next
	// fragment starts a new datagram (no first fragment: it never
	// completes), and so on.
	if got := h.Counter("too many fragments"); got < uint64(n)/65*65 {
		t.Errorf("too many fragments %d of %d", got, n)
	}
	if len(frames(h, 0)) != 0 {
		t.Error("a datagram came out")
	}
	if h.Pool.Outstanding() != 0 {
		t.Errorf("%d frames held", h.Pool.Outstanding())
	}
}

// Every fragment is counted once: reassembled or dropped by reason.
func TestEveryFragmentCounted(t *testing.T) {
	h, e := reassembler(t, &ReassemblerConfig{Capacity: 4, Timeout: 30e9, MaxFragments: 8}, nil)
	var in int
	for i := range 50 {
		d := udpFrame(inside, outside, 1, 2, uint16(i%9), 700+i*37, nil)
		fr := split(d, 256)
		if i%3 == 0 {
			fr = fr[1:] // never completes
		}
		if i%5 == 0 {
			slices.Reverse(fr)
		}
		in += len(fr)
		h.Push(0, fr...)
	}
	e.Tick(e.now() + 31e9)
	var sum uint64
	for _, c := range h.Stats.Counters() {
		if c.Drop || c.Consumed {
			sum += c.Value
		}
	}
	if sum != uint64(in) {
		t.Errorf("%d fragments in, %d counted (%v)", in, sum, h.Stats.Counters())
	}
}

// twoWorkers builds the instances of one IPReassembler on two workers of
// one graph, each past its first tick.
func twoWorkers(t *testing.T) ([]*elementtest.Harness, []*Reassembler) {
	st := elements.NewGraphState()
	hs := make([]*elementtest.Harness, 2)
	es := make([]*Reassembler, 2)
	for w := range 2 {
		hs[w], es[w] = reassembler(t, nil, &elementtest.Options{Worker: w, Workers: 2, State: st, PoolSize: 256})
	}
	for _, e := range es {
		e.Tick(e.now()) // each lends the other its buffers
	}
	return hs, es
}

// ownedBy1 is a UDP datagram of n payload bytes whose flow worker 1 of 2
// owns.
func ownedBy1(n int) []byte {
	for sport := uint16(1000); ; sport++ {
		d := udpFrame(inside, outside, sport, 5000, sport, n, nil)
		if flowsteer.Owner(packet.FlowHashFrame(d, 14), 2) == 1 {
			return d
		}
	}
}

// Two workers: a datagram reassembled on a worker that does not own its
// flow is handed to the owner, which sends it on at its next tick.
func TestHandoffToFlowOwner(t *testing.T) {
	hs, es := twoWorkers(t)
	d := ownedBy1(3000)
	hs[0].Push(0, split(d, 1480)...)
	if len(frames(hs[0], 0)) != 0 || hs[0].Counter("handed off") != 1 {
		t.Fatalf("worker 0 sent it on itself (handed off %d)", hs[0].Counter("handed off"))
	}
	es[1].Tick(es[1].now())
	got := frames(hs[1], 0)
	if len(got) != 1 || hs[1].Counter("handed in") != 1 {
		t.Fatalf("worker 1: %d out", len(got))
	}
	sameFrame(t, got[0], d)
	if p := hs[1].Outs[0].Pkts[0]; p.Pool() != es[1].pool {
		t.Error("the handed datagram is not in the owner's buffer")
	}
	// A burst beyond what the owner lends: the rest is counted, and the
	// owner gets what it lent, at its next push.
	hs[1].Reset()
	fr := split(d, 1480)
	for range 3 * lendDepth {
		hs[0].Push(0, fr...)
	}
	if got, full := hs[0].Counter("handed off"), hs[0].Counter("handoff full"); got != 1+lendDepth || full != 2*lendDepth*3 {
		t.Fatalf("handed off %d, handoff full %d fragments", got, full)
	}
	hs[1].Push(0)
	if got := len(frames(hs[1], 0)); got != lendDepth {
		t.Fatalf("worker 1 sent on %d, want %d", got, lendDepth)
	}
	hs[1].Reset()
	hs[0].Push(0, fr...)
	es[1].Tick(es[1].now())
	if got := len(frames(hs[1], 0)); got != 1 {
		t.Fatalf("after the owner lent again: %d", got)
	}
}

// A non-fragment costs no allocation, nor does the fragment path.
func TestZeroAllocs(t *testing.T) {
	h, _ := reassembler(t, nil, &elementtest.Options{Sink: true, PoolSize: 256})
	plain := udpFrame(inside, outside, 1, 2, 1, 64, nil)
	if a := h.AllocsPerBatch(100, plain); a != 0 {
		t.Errorf("non-fragments: %v allocs per batch", a)
	}
	fr := split(udpFrame(inside, outside, 1, 2, 1, 1400, nil), 720)
	if a := h.AllocsPerBatch(100, fr...); a != 0 {
		t.Errorf("fragments: %v allocs per batch", a)
	}
}

// The handoff between two running workers (go test -race): every
// datagram worker 0 hands over reaches worker 1 once, and every one it
// could not is counted.
func TestHandoffConcurrent(t *testing.T) {
	hs, es := twoWorkers(t)
	fr := split(ownedBy1(2000), 1480)
	const n = 2000
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range n {
			hs[0].Push(0, fr...)
		}
	}()
	got := 0
	for running := true; running; {
		select {
		case <-done:
			running = false
		default:
		}
		es[1].Tick(es[1].now())
		got += len(hs[1].Outs[0].Pkts)
		hs[1].Reset()
	}
	es[1].Tick(es[1].now())
	got += len(hs[1].Outs[0].Pkts)
	off, full := hs[0].Counter("handed off"), hs[0].Counter("handoff full")
	if uint64(got) != off || off+full/2 != n {
		t.Fatalf("received %d, handed off %d, handoff full %d fragments (of %d datagrams)", got, off, full, n)
	}
	t.Logf("%d handed over, %d datagrams refused", off, full/2)
}
