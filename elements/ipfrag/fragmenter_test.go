package ipfrag

import (
	"encoding/binary"
	"testing"

	"github.com/junction-dataplane/junction/elements/elementtest"
	"github.com/junction-dataplane/junction/packet"
)

func fragmenter(t testing.TB, mtu int, frag bool, o *elementtest.Options) *elementtest.Harness {
	t.Helper()
	if o == nil {
		o = &elementtest.Options{PoolSize: 1024}
	}
	return elementtest.New(t, "IPFragmenter", &FragmenterConfig{MTU: mtu, Fragment: frag}, o)
}

// pushBig pushes frame f (any length) held in a datagram-sized packet, as
// IPReassembler's output is.
func pushBig(h *elementtest.Harness, frames ...[]byte) {
	pool := packet.NewPoolSize(len(frames), bufSize)
	var ps []*packet.Packet
	for _, f := range frames {
		p := pool.Get()
		p.SetFrame(f)
		ps = append(ps, p)
	}
	h.PushBatch(0, ps...)
}

// RFC 791 (and RFC 1812 5.2.6): fragments carry multiples of 8 bytes but
// the last, at most mtu bytes of IP each, MF on all but the last, offsets
// in 8-byte units; the first keeps every option, the others only those
// with the copied flag, padded to 4 bytes; reassembled, they are the
// packet again.
func TestRFC791Fragmentation(t *testing.T) {
	// Options: loose source route (0x83, copied) of one address, then
	// record route (0x07, not copied) with room for one, then end.
	opts := []byte{0x83, 7, 4, 10, 0, 0, 1, 0x07, 7, 4, 0, 0, 0, 0, 0, 0}
	want := udpFrame(inside, outside, 1, 2, 77, 2972, opts)
	h := fragmenter(t, 1500, true, nil)
	pushBig(h, want)
	got := frames(h, 0)
	if len(got) != 3 || h.Counter("fragmented") != 1 || h.Counter("fragments") != 3 {
		t.Fatalf("%d fragments (counters %d, %d)", len(got), h.Counter("fragmented"), h.Counter("fragments"))
	}
	r, _ := reassembler(t, nil, nil)
	next := 0
	for i, f := range got {
		ip := packet.IPv4(f[14:])
		if ip.TotalLen() > 1500 || len(f)-14 != ip.TotalLen() || !ip.ChecksumValid() || ip.ID() != 77 {
			t.Fatalf("fragment %d: length %d, checksum ok %v, id %d", i, ip.TotalLen(), ip.ChecksumValid(), ip.ID())
		}
		if ip.FragOffset() != next {
			t.Fatalf("fragment %d at %d, want %d", i, ip.FragOffset(), next)
		}
		plen := ip.TotalLen() - ip.IHL()
		last := i == len(got)-1
		if ip.MoreFragments() == last || !last && plen%8 != 0 {
			t.Fatalf("fragment %d: MF %v, %d bytes", i, ip.MoreFragments(), plen)
		}
		wantIHL := 20 + len(opts)
		if i > 0 {
			wantIHL = 28 // the source route (7) padded to 8
			if f[14+20] != 0x83 || f[14+27] != 0 {
				t.Fatalf("fragment %d options % x", i, f[14+20:14+28])
			}
		}
		if ip.IHL() != wantIHL {
			t.Fatalf("fragment %d: header %d bytes, want %d", i, ip.IHL(), wantIHL)
		}
		next += plen
	}
	r.Push(0, got...)
	out := frames(r, 0)
	if len(out) != 1 {
		t.Fatalf("reassembled into %d", len(out))
	}
	sameFrame(t, out[0], want)
	if h.Pool.Outstanding() != 0 {
		t.Error("input frames not freed")
	}
}

// DF packets and long IPv6 go to output 1, as CheckMTU sends them (for
// fragmentation needed, packet too big); fragment = false passes long
// packets without DF unchanged; packets that fit are untouched and in
// order around the fragments.
func TestFragmenterPorts(t *testing.T) {
	long := udpFrame(inside, outside, 1, 2, 1, 1600, nil)
	df := append([]byte(nil), long...)
	binary.BigEndian.PutUint16(df[14+6:], packet.IPv4FlagDF)
	binary.BigEndian.PutUint16(df[14+10:], 0)
	binary.BigEndian.PutUint16(df[14+10:], packet.Checksum(df[14:34]))
	v6 := make([]byte, 14+1600)
	v6[12], v6[13], v6[14] = 0x86, 0xdd, 0x60
	short := udpFrame(inside, outside, 1, 2, 2, 100, nil)

	h := fragmenter(t, 1500, true, nil)
	h.Push(0, short, df, long, v6, short)
	o0, o1 := frames(h, 0), frames(h, 1)
	if len(o0) != 4 || len(o1) != 2 || h.Counter("too big") != 2 {
		t.Fatalf("outputs %d / %d", len(o0), len(o1))
	}
	sameFrame(t, o0[0], short)
	sameFrame(t, o0[3], short)
	sameFrame(t, o1[0], df)
	sameFrame(t, o1[1], v6)

	h = fragmenter(t, 1500, false, nil)
	h.Push(0, long, df)
	if o0, o1 := frames(h, 0), frames(h, 1); len(o0) != 1 || len(o1) != 1 {
		t.Fatalf("fragment=false: %d / %d", len(o0), len(o1))
	}
	sameFrame(t, frames(h, 0)[0], long)
}

// A 64 KiB datagram leaves in fragments that fit the packet buffers, and
// a pool too small for them drops it whole, counted.
func TestFragmenterLargeDatagram(t *testing.T) {
	want := udpFrame(inside, outside, 1, 2, 3, 65000, nil)
	h := fragmenter(t, 9000, true, &elementtest.Options{PoolSize: 16})
	pushBig(h, want)
	got := frames(h, 0)
	for _, f := range got {
		if len(f) > packet.BufSize-packet.Headroom {
			t.Fatalf("a fragment of %d bytes", len(f))
		}
	}
	r, _ := reassembler(t, &ReassemblerConfig{Capacity: 4, Timeout: 30e9, MaxFragments: 64}, &elementtest.Options{PoolSize: 128})
	r.Push(0, got...)
	if out := frames(r, 0); len(out) != 1 {
		t.Fatalf("%d fragments reassembled into %d", len(got), len(out))
	} else {
		sameFrame(t, out[0], want)
	}
	h.Reset()
	pushBig(h, want, want, want, want, want, want, want, want) // 8 x 34 fragments > 256
	if h.Counter("no buffer") == 0 {
		t.Error("no drop counted with the pool exhausted")
	}
}

func TestFragmenterZeroAllocs(t *testing.T) {
	h := fragmenter(t, 1500, true, &elementtest.Options{Sink: true, PoolSize: 256})
	if a := h.AllocsPerBatch(100, udpFrame(inside, outside, 1, 2, 1, 1400, nil)); a != 0 {
		t.Errorf("fitting packets: %v allocs", a)
	}
	h = fragmenter(t, 576, true, &elementtest.Options{Sink: true, PoolSize: 256})
	if a := h.AllocsPerBatch(100, udpFrame(inside, outside, 1, 2, 1, 1400, nil)); a != 0 {
		t.Errorf("fragmenting: %v allocs", a)
	}
}

// A fragment whose offset and length reach past 65,535 bytes is not split
// into fragments with a wrapped offset: it is dropped, counted.
func TestFragmenterOversizedFragment(t *testing.T) {
	f := udpFrame(inside, outside, 1, 2, 1, 1600, nil)
	binary.BigEndian.PutUint16(f[14+6:], 8100) // offset 64,800
	h := fragmenter(t, 1500, true, nil)
	h.Push(0, f)
	if len(frames(h, 0)) != 0 || h.Counter("malformed") != 1 {
		t.Fatalf("%d out, malformed %d", len(frames(h, 0)), h.Counter("malformed"))
	}
}
