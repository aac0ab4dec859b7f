package ipfrag

import (
	"encoding/binary"
	"net/netip"
	"slices"
	"testing"

	"github.com/junction-dataplane/junction/elements"
	"github.com/junction-dataplane/junction/elements/elementtest"
	"github.com/junction-dataplane/junction/elements/flowsteer"
	"github.com/junction-dataplane/junction/packet"
)

var (
	inside6  = netip.MustParseAddr("2001:db8:1::10").As16()
	outside6 = netip.MustParseAddr("2001:db8:2::2").As16()
)

// udp6Frame builds an Ethernet frame holding an IPv6 UDP datagram of n
// payload bytes (a pattern that differs at every offset) behind the
// extension headers ext (each a whole header; its Next Header byte is
// set here).
func udp6Frame(src, dst [16]byte, sport, dport uint16, n int, ext ...[]byte) []byte {
	f := []byte{2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 0x86, 0xdd}
	h := make([]byte, packet.IPv6Len)
	h[0], h[7] = 6<<4, 64
	copy(h[8:], src[:])
	copy(h[24:], dst[:])
	f = append(f, h...)
	nh := packet.EthernetLen + 6
	for _, x := range ext {
		f[nh] = 0 // hop-by-hop unless the caller's header says otherwise
		if len(x) > 8 && x[len(x)-1] == 43 {
			x = x[:len(x)-1]
			f[nh] = packet.IPv6Routing
		}
		nh = len(f)
		f = append(f, x...)
	}
	f[nh] = packet.ProtoUDP
	u := make([]byte, packet.UDPLen+n)
	binary.BigEndian.PutUint16(u, sport)
	binary.BigEndian.PutUint16(u[2:], dport)
	binary.BigEndian.PutUint16(u[4:], uint16(len(u)))
	for i := range n {
		u[packet.UDPLen+i] = byte(i*7 + i>>8)
	}
	f = append(f, u...)
	binary.BigEndian.PutUint16(f[packet.EthernetLen+4:], uint16(len(f)-packet.EthernetLen-packet.IPv6Len))
	return f
}

// unfrag6 is the length of f's fixed header and unfragmentable part, and
// the offset (from L3) of the Next Header byte that names what follows.
func unfrag6(f []byte) (int, int) {
	h := f[packet.EthernetLen:]
	nhOff, off := 6, packet.IPv6Len
	for h[nhOff] == packet.IPv6HopByHop || h[nhOff] == packet.IPv6Routing || h[nhOff] == packet.IPv6DestOpts {
		nhOff, off = off, off+(int(h[off+1])+1)*8
	}
	return off, nhOff
}

// split6 cuts an Ethernet+IPv6 frame into RFC 8200 fragments of at most
// size fragmentable bytes (a multiple of 8), with identification id: what
// a sender (and IPFragmenter) makes.
func split6(f []byte, size int, id uint32) [][]byte {
	u, _ := unfrag6(f)
	n := len(f) - packet.EthernetLen - u
	var out [][]byte
	for off := 0; off < n; off += size {
		end := min(off+size, n)
		out = append(out, fragment6(f, off, end, end < n, id))
	}
	return out
}

// fragment6 is the fragment of frame f holding fragmentable bytes [off,
// end), with M as given.
func fragment6(f []byte, off, end int, more bool, id uint32) []byte {
	u, nhOff := unfrag6(f)
	l := packet.EthernetLen + u
	g := append([]byte(nil), f[:l]...)
	h := g[packet.EthernetLen:]
	nh := h[nhOff]
	h[nhOff] = packet.IPv6Fragment
	w := uint16(off)
	if more {
		w |= 1
	}
	g = append(g, nh, 0, byte(w>>8), byte(w), byte(id>>24), byte(id>>16), byte(id>>8), byte(id))
	g = append(g, f[l+off:l+end]...)
	binary.BigEndian.PutUint16(g[packet.EthernetLen+4:], uint16(len(g)-packet.EthernetLen-packet.IPv6Len))
	return g
}

// reassembler6 builds an IP6Reassembler harness.
func reassembler6(t testing.TB, cfg *ReassemblerConfig, o *elementtest.Options) (*elementtest.Harness, *Reassembler) {
	t.Helper()
	if cfg == nil {
		cfg = &ReassemblerConfig{Capacity: 64, Timeout: 60e9, MaxFragments: 64} // IP6Reassembler's defaults
	}
	if o == nil {
		o = &elementtest.Options{PoolSize: 1024}
	}
	h := elementtest.New(t, "IP6Reassembler", cfg, o)
	return h, h.Element.(*Reassembler)
}

// takeOut takes the one packet h's output 0 recorded (for the test to
// push on and free).
func takeOut(h *elementtest.Harness) *packet.Packet {
	p := h.Outs[0].Pkts[0]
	h.Outs[0].Pkts = h.Outs[0].Pkts[:0]
	return p
}

// RFC 8200 section 4.5 (and RFC 4787 REQ-14): a 3000-byte UDP datagram
// its sender fragmented at a 1500-byte link comes back byte for byte in
// every order of its fragments, annotated with its longest fragment and
// its identification; and IPFragmenter on a 1500-byte link makes the very
// fragments the sender sent.
func TestRFC8200ReassemblyInAndOutOfOrder(t *testing.T) {
	want := udp6Frame(inside6, outside6, 40000, 5000, 2992) // 3000 bytes of UDP
	frags := split6(want, 1448, 0x01020304)
	if len(frags) != 3 || len(frags[0])-packet.EthernetLen != 1496 {
		t.Fatalf("test fragments: %d, first %d bytes", len(frags), len(frags[0]))
	}
	for _, ord := range [][]int{{0, 1, 2}, {2, 1, 0}, {1, 0, 2}, {2, 0, 1}} {
		h, e := reassembler6(t, nil, nil)
		for i, k := range ord {
			h.Push(0, frags[k])
			if i < len(ord)-1 && len(frames(h, 0)) != 0 {
				t.Fatalf("order %v: a datagram after %d fragments", ord, i+1)
			}
		}
		got := frames(h, 0)
		if len(got) != 1 {
			t.Fatalf("order %v: %d datagrams out", ord, len(got))
		}
		sameFrame(t, got[0], want)
		p := takeOut(h)
		f, ok := getFrag6(p)
		if !ok || f.maxLen != 1496 || f.id != 0x01020304 || f.unfrag != packet.IPv6Len || f.nhOff != 6 {
			t.Errorf("order %v: annotation %+v %v", ord, f, ok)
		}
		setFrag6(p, f)
		ooo := uint64(0)
		if !slices.IsSorted(ord) {
			ooo = 1
		}
		if h.Counter("reassembled") != 3 || h.Counter("datagrams") != 1 || h.Counter("out of order") != ooo || e.t.live != 0 {
			t.Errorf("order %v: counters %v", ord, h.Stats.Counters())
		}
		// On output, the sender's fragments again.
		fh := fragmenter(t, 1500, true, nil)
		fh.PushBatch(0, p)
		out := frames(fh, 0)
		if len(out) != 3 || fh.Counter("fragmented") != 1 {
			t.Fatalf("order %v: refragmented into %d", ord, len(out))
		}
		for i := range out {
			sameFrame(t, out[i], frags[i])
		}
		if h.Pool.Outstanding() != 0 {
			t.Errorf("order %v: %d fragment frames not freed", ord, h.Pool.Outstanding())
		}
	}
}

// RFC 8200 section 4.5: the unfragmentable part (hop-by-hop options and a
// routing header here) is the first fragment's, in front of the
// reassembled payload; the Next Header that named the fragment header
// names the upper layer again. IPFragmenter repeats the unfragmentable
// part in each fragment.
func TestRFC8200UnfragmentablePart(t *testing.T) {
	hbh := []byte{43, 0, 1, 4, 0, 0, 0, 0}                                                   // hop-by-hop, then routing; PadN
	rh := []byte{0, 2, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 43} // type 4, no segments left (the 43: see udp6Frame)
	rh[0] = packet.ProtoUDP
	want := udp6Frame(inside6, outside6, 1, 2, 2000, hbh, rh)
	u, nhOff := unfrag6(want)
	if u != packet.IPv6Len+8+24 || nhOff != packet.IPv6Len+8 {
		t.Fatalf("test frame: unfragmentable %d, next header at %d", u, nhOff)
	}
	frags := split6(want, 1024, 9)
	h, _ := reassembler6(t, nil, nil)
	h.Push(0, frags[1])
	h.Push(0, frags[0])
	got := frames(h, 0)
	if len(got) != 1 {
		t.Fatalf("%d datagrams", len(got))
	}
	sameFrame(t, got[0], want)
	fh := fragmenter(t, 1500, true, nil)
	fh.PushBatch(0, takeOut(h))
	out := frames(fh, 0)
	if len(out) != 2 {
		t.Fatalf("refragmented into %d", len(out))
	}
	for i := range out {
		sameFrame(t, out[i], frags[i])
	}
}

// RFC 8200 section 5 (a router does not fragment): a datagram whose
// fragments were longer than the egress link goes to packet too big
// (output 1), whole; one whose sender fragmented at 1280 leaves in
// fragments of at most 1280 bytes though the link takes 1500; a datagram
// that no longer needs splitting (no longer than its longest fragment)
// leaves whole. Without the annotation, long IPv6 goes to output 1 as
// before.
func TestIPv6FragmentSizeKept(t *testing.T) {
	d := udp6Frame(inside6, outside6, 1, 2, 2992)
	reasm := func(size int) *packet.Packet {
		h, _ := reassembler6(t, nil, nil)
		h.Push(0, split6(d, size, 5)...)
		if len(h.Outs[0].Pkts) != 1 {
			t.Fatalf("not reassembled")
		}
		return takeOut(h)
	}
	fh := fragmenter(t, 1400, true, nil)
	fh.PushBatch(0, reasm(1448))
	if len(frames(fh, 0)) != 0 || len(frames(fh, 1)) != 1 || fh.Counter("too big") != 1 {
		t.Errorf("fragments of 1496 bytes into a 1400 link: %d out, %d too big", len(frames(fh, 0)), len(frames(fh, 1)))
	}
	fh = fragmenter(t, 1500, true, nil)
	fh.PushBatch(0, reasm(1232))
	out := frames(fh, 0)
	if len(out) != 3 {
		t.Fatalf("1280-byte fragments: %d out", len(out))
	}
	for _, f := range out {
		if len(f)-packet.EthernetLen > 1280 {
			t.Errorf("a fragment of %d bytes", len(f)-packet.EthernetLen)
		}
	}
	small := udp6Frame(inside6, outside6, 1, 2, 100)
	p := reasm(1448)
	p.SetLen(len(small))
	copy(p.Data, small) // rewritten shorter than its fragments were
	fh = fragmenter(t, 1500, true, nil)
	fh.PushBatch(0, p)
	if out := frames(fh, 0); len(out) != 1 || len(out[0]) != len(small) {
		t.Errorf("a datagram that fits: %d out", len(out))
	}
	fh = fragmenter(t, 1500, true, nil)
	pushBig(fh, d)
	if len(frames(fh, 1)) != 1 {
		t.Error("an IPv6 packet longer than the link, not reassembled here, was not sent to packet too big")
	}
}

// RFC 5722: a fragment overlapping another drops the whole datagram
// (counted, silently); its later fragments start a datagram that never
// completes. An exact duplicate is dropped alone.
func TestRFC5722OverlappingFragments(t *testing.T) {
	d := udp6Frame(inside6, outside6, 1, 2, 2992)
	fr := split6(d, 1448, 3)
	h, e := reassembler6(t, nil, nil)
	h.Push(0, fr[0])
	h.Push(0, fragment6(d, 1440, 2896, true, 3)) // overlaps the first by 8 bytes
	h.Push(0, fr[1], fr[2])
	if len(frames(h, 0)) != 0 {
		t.Fatal("a datagram with overlapping fragments came out")
	}
	if h.Counter("overlapping fragments") != 2 || e.t.live != 1 {
		t.Errorf("overlapping %d, live %d", h.Counter("overlapping fragments"), e.t.live)
	}
	h, _ = reassembler6(t, nil, nil)
	h.Push(0, fr[0], fr[0], fr[1], fr[2])
	if len(frames(h, 0)) != 1 || h.Counter("duplicate fragment") != 1 {
		t.Errorf("duplicate: %d out, %d counted", len(frames(h, 0)), h.Counter("duplicate fragment"))
	}
}

// RFC 6946: an atomic fragment (offset 0, M clear) is passed on at once,
// unchanged, even while a datagram with the same source, destination and
// identification is in reassembly, which it does not disturb.
func TestRFC6946AtomicFragments(t *testing.T) {
	d := udp6Frame(inside6, outside6, 1, 2, 2992)
	fr := split6(d, 1448, 11)
	small := udp6Frame(inside6, outside6, 1, 2, 100)
	atomic := fragment6(small, 0, len(small)-packet.EthernetLen-packet.IPv6Len, false, 11)
	h, e := reassembler6(t, nil, nil)
	h.Push(0, fr[0])
	h.Push(0, atomic)
	got := frames(h, 0)
	if len(got) != 1 || h.Counter("atomic fragments") != 1 {
		t.Fatalf("atomic fragment: %d out, counted %d", len(got), h.Counter("atomic fragments"))
	}
	sameFrame(t, got[0], atomic)
	h.Reset()
	h.Push(0, fr[2], fr[1])
	if got := frames(h, 0); len(got) != 1 || e.t.live != 0 {
		t.Fatalf("the datagram in reassembly: %d out", len(got))
	}
	sameFrame(t, frames(h, 0)[0], d)
}

// RFC 7112: a first fragment without the whole header chain through the
// upper-layer header is dropped: TCP's 20 bytes not all there, or a
// destination options header with the upper layer in the next fragment.
// One that holds it passes.
func TestRFC7112TinyFirstFragment(t *testing.T) {
	tcp := udp6Frame(inside6, outside6, 1, 2, 100)
	tcp[packet.EthernetLen+6] = packet.ProtoTCP
	dst := []byte{0, 0, 1, 4, 0, 0, 0, 0}
	chain := udp6Frame(inside6, outside6, 1, 2, 100)
	// The fragmentable part: a destination options header, then UDP.
	chain = append(chain[:packet.EthernetLen+packet.IPv6Len], append(dst, chain[packet.EthernetLen+packet.IPv6Len:]...)...)
	chain[packet.EthernetLen+6] = packet.IPv6DestOpts
	chain[packet.EthernetLen+packet.IPv6Len] = packet.ProtoUDP
	binary.BigEndian.PutUint16(chain[packet.EthernetLen+4:], uint16(len(chain)-packet.EthernetLen-packet.IPv6Len))
	h, e := reassembler6(t, nil, nil)
	h.Push(0, fragment6(tcp, 0, 8, true, 1))
	// unfrag6 would take the destination options header as
	// unfragmentable: cut by hand, the header alone in the first fragment.
	first := fragment6(udp6Frame(inside6, outside6, 1, 2, 0), 0, 0, true, 2)
	first[packet.EthernetLen+packet.IPv6Len] = packet.IPv6DestOpts
	first = append(first, dst...)
	binary.BigEndian.PutUint16(first[packet.EthernetLen+4:], uint16(len(first)-packet.EthernetLen-packet.IPv6Len))
	h.Push(0, first)
	if h.Counter("tiny first fragment") != 2 || e.t.live != 0 {
		t.Errorf("tiny first fragments: %d counted, %d held", h.Counter("tiny first fragment"), e.t.live)
	}
	h.Push(0, fragment6(tcp, 0, 24, true, 3))
	if e.t.live != 1 {
		t.Error("a first fragment holding the TCP header was not kept")
	}
}

// RFC 8200 section 4.5: reassembly is abandoned 60 seconds after the
// first-arriving fragment (the default timeout), not before; the
// fragments held are counted as "timeout".
func TestRFC8200Timeout(t *testing.T) {
	h, e := reassembler6(t, nil, nil)
	var now int64 = 1e9
	e.now = func() int64 { return now }
	fr := split6(udp6Frame(inside6, outside6, 1, 2, 2992), 1448, 4)
	h.Push(0, fr[0], fr[1])
	now += 59e9
	e.Tick(now)
	if e.t.live != 1 {
		t.Fatal("abandoned before 60 s")
	}
	now += 1e9
	e.Tick(now)
	if e.t.live != 0 || h.Counter("timeout") != 2 {
		t.Errorf("after 60 s: live %d, timeout %d", e.t.live, h.Counter("timeout"))
	}
}

// Bad input: a flood of first fragments that never complete, a 64 KiB
// datagram in 8-byte fragments and payloads past 65,535 bytes: the table
// never holds more than capacity datagrams, the pool never runs dry,
// every drop is counted, and a datagram sent after the flood passes.
func TestFragment6Flood(t *testing.T) {
	h, e := reassembler6(t, &ReassemblerConfig{Capacity: 8, Timeout: 60e9, MaxFragments: 64}, &elementtest.Options{PoolSize: 256})
	d := udp6Frame(inside6, outside6, 1, 2, 2992)
	for i := range 1000 {
		h.Push(0, fragment6(d, 0, 1448, true, uint32(1000+i)))
		if e.t.live > 8 {
			t.Fatalf("%d datagrams held", e.t.live)
		}
	}
	big := udp6Frame(inside6, outside6, 1, 2, 65000)
	for off := 0; off < 8*70; off += 8 {
		h.Push(0, fragment6(big, off, off+8, true, 77))
	}
	past := fragment6(d, 0, 16, true, 78)
	binary.BigEndian.PutUint16(past[packet.EthernetLen+packet.IPv6Len+2:], 65528|1) // 16 bytes at 65,528
	h.Push(0, past)
	if h.Counter("table full") != 1000-8+1 || h.Counter("too many fragments") == 0 || h.Counter("datagram over 65535 bytes") != 1 {
		t.Errorf("counters %v", h.Stats.Counters())
	}
	h.Reset()
	h.Push(0, split6(d, 1448, 5)...)
	if got := frames(h, 0); len(got) != 1 {
		t.Fatalf("after the flood: %d out", len(got))
	}
	if e.pool.Available() < 8 {
		t.Errorf("pool: %d free", e.pool.Available())
	}
}

// Two workers: a reassembled datagram, and an atomic fragment, whose
// flow (with its ports) another worker owns is handed to that worker,
// though FromDevice steered its fragments by addresses alone.
func TestHandoff6ToFlowOwner(t *testing.T) {
	st := elements.NewGraphState()
	hs := make([]*elementtest.Harness, 2)
	es := make([]*Reassembler, 2)
	for w := range 2 {
		hs[w], es[w] = reassembler6(t, nil, &elementtest.Options{Worker: w, Workers: 2, State: st, PoolSize: 256})
	}
	for _, e := range es {
		e.Tick(e.now())
	}
	var d []byte
	for sport := uint16(1000); ; sport++ {
		d = udp6Frame(inside6, outside6, sport, 5000, 2992)
		if flowsteer.Owner(packet.FlowHashFrame(d, 14), 2) == 1 {
			break
		}
	}
	hs[0].Push(0, split6(d, 1448, 1)...)
	small := append([]byte(nil), d[:packet.EthernetLen+packet.IPv6Len+packet.UDPLen+8]...)
	binary.BigEndian.PutUint16(small[packet.EthernetLen+4:], packet.UDPLen+8)
	atomic := fragment6(small, 0, packet.UDPLen+8, false, 2)
	hs[0].Push(0, atomic)
	if len(frames(hs[0], 0)) != 0 || hs[0].Counter("handed off") != 2 {
		t.Fatalf("worker 0 sent on %d itself, handed off %d", len(frames(hs[0], 0)), hs[0].Counter("handed off"))
	}
	es[1].Tick(es[1].now())
	got := frames(hs[1], 0)
	if len(got) != 2 {
		t.Fatalf("worker 1: %d out", len(got))
	}
	sameFrame(t, got[0], d)
	sameFrame(t, got[1], atomic)
	if _, ok := getFrag6(hs[1].Outs[0].Pkts[0]); !ok {
		t.Error("the handed datagram lost its annotation")
	}
}

// Non-fragments (IPv6 and IPv4) cost no allocation, nor do the IPv6
// fragment path, the atomic fragment's hash and the refragmentation.
func TestZeroAllocs6(t *testing.T) {
	h, _ := reassembler6(t, nil, &elementtest.Options{Sink: true, PoolSize: 256})
	if a := h.AllocsPerBatch(100, udp6Frame(inside6, outside6, 1, 2, 64), udpFrame(inside, outside, 1, 2, 1, 64, nil)); a != 0 {
		t.Errorf("non-fragments: %v allocs per batch", a)
	}
	d := udp6Frame(inside6, outside6, 1, 2, 1400)
	fr := split6(d, 720, 1)
	if a := h.AllocsPerBatch(100, fr...); a != 0 {
		t.Errorf("fragments: %v allocs per batch", a)
	}
	small := udp6Frame(inside6, outside6, 1, 2, 16)
	if a := h.AllocsPerBatch(100, fragment6(small, 0, 24, false, 1)); a != 0 {
		t.Errorf("atomic fragments: %v allocs per batch", a)
	}
}

// A reload: datagrams in reassembly carry over to the new instance (same
// name and type) and complete with the fragments that come after it; the
// old instance's Close then frees nothing. A new instance with less room
// counts what it cannot take as "reload: no room".
func TestReloadCarriesDatagrams(t *testing.T) {
	for _, v6 := range []bool{false, true} {
		typ, d, frags := "IPReassembler", udpFrame(inside, outside, 1, 2, 5, 2972, nil), [][]byte(nil)
		cfg := &ReassemblerConfig{Capacity: 64, Timeout: 30e9, MaxFragments: 64}
		frags = split(d, 1480)
		if v6 {
			typ, d = "IP6Reassembler", udp6Frame(inside6, outside6, 1, 2, 2992)
			frags = split6(d, 1448, 5)
		}
		h := elementtest.New(t, typ, cfg, &elementtest.Options{PoolSize: 256})
		old := h.Element.(*Reassembler)
		h.Push(0, frags[2], frags[0])
		other := append([]byte(nil), frags[1]...)
		other[len(other)-1] ^= 1 // another datagram's middle, to fill the small table below
		if v6 {
			other[packet.EthernetLen+packet.IPv6Len+7]++ // its identification
		} else {
			other[packet.EthernetLen+5]++
		}
		h.Push(0, other)
		renew := func(capacity int) *Reassembler {
			t.Helper()
			tp, _ := elements.Lookup(typ)
			ctx := elements.NewContext("reasm", 0, 1, packet.DefaultBatch, h.Context.Outputs, h.Stats, h.Pool, nil, &elements.SharedSlot{})
			ctx.SetReloading(true)
			ctx.SetPrevious(elements.Previous{Element: old, SameConfig: capacity == 64})
			el, err := tp.New(&ReassemblerConfig{Capacity: capacity, Timeout: 30e9, MaxFragments: 64}, ctx)
			if err != nil {
				t.Fatal(err)
			}
			e := el.(*Reassembler)
			if err := e.TakeState(old); err != nil {
				t.Fatal(err)
			}
			return e
		}
		e := renew(1)
		if e.t.live != 1 || old.t.live != 0 || h.Counter("reload: no room") != 1 {
			t.Fatalf("%s: a table of 1 took %d, left %d, counted %d", typ, e.t.live, old.t.live, h.Counter("reload: no room"))
		}
		if err := old.Close(); err != nil {
			t.Fatal(err)
		}
		// The oldest came over: the datagram fragments 0 and 2 began.
		h.Element = e
		h.Push(0, frags[1])
		got := frames(h, 0)
		if len(got) != 1 || h.Counter("reassembled") != 3 {
			t.Fatalf("%s: after the reload %d datagrams out (reassembled %d)", typ, len(got), h.Counter("reassembled"))
		}
		sameFrame(t, got[0], d)
		h.Reset()
		e.Close()
	}
}
