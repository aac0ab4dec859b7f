package ip

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"github.com/google/gopacket"
	"github.com/google/gopacket/layers"
	"github.com/junction-dataplane/junction/elements"
	"github.com/junction-dataplane/junction/elements/elementtest"
	"github.com/junction-dataplane/junction/packet"
)

func TestDecTTL(t *testing.T) {
	tests := []struct {
		name    string
		frame   []byte
		out     int    // -1: dropped
		reason  string // drop reason or counter
		wantTTL uint8
	}{
		{name: "ttl 64", frame: mkFrame(t, frameOpts{ttl: 64}), out: 0, wantTTL: 63},
		{name: "ttl 255", frame: mkFrame(t, frameOpts{ttl: 255}), out: 0, wantTTL: 254},
		{name: "ttl 2", frame: mkFrame(t, frameOpts{ttl: 2}), out: 0, wantTTL: 1},
		{name: "ttl 2 tcp options", frame: mkFrame(t, frameOpts{ttl: 2, proto: layers.IPProtocolTCP, options: true}), out: 0, wantTTL: 1},
		{name: "ttl 1", frame: mkFrame(t, frameOpts{ttl: 1}), out: 1, reason: "ttl expired", wantTTL: 1},
		{name: "ttl 0", frame: edit(mkFrame(t, frameOpts{}), func(f []byte) []byte { f[22] = 0; return fixIPChecksum(f) }),
			out: 1, reason: "ttl expired", wantTTL: 0},
		{name: "empty", frame: nil, out: -1, reason: "too short"},
		{name: "33 bytes", frame: mkFrame(t, frameOpts{})[:33], out: -1, reason: "too short"},
		{name: "ipv6", frame: edit(mkFrame(t, frameOpts{}), func(f []byte) []byte { f[14] = 0x60; return f }), out: -1, reason: "not ipv4"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := elementtest.New(t, "DecTTL", nil, nil)
			h.Push(0, tc.frame)
			for port := range 2 {
				want := 0
				if port == tc.out {
					want = 1
				}
				if got := len(h.Outs[port].Pkts); got != want {
					t.Fatalf("output %d: %d packets, want %d", port, got, want)
				}
			}
			if tc.reason != "" && h.Counter(tc.reason) != 1 {
				t.Errorf("counter %q = %d, want 1", tc.reason, h.Counter(tc.reason))
			}
			if tc.out < 0 {
				if h.Stats.Drops() != 1 {
					t.Errorf("drops = %d, want 1", h.Stats.Drops())
				}
				h.CheckNoLeak()
				return
			}
			got := h.Outs[tc.out].Frames()[0]
			// Decode with gopacket and check the checksum independently.
			pk := gopacket.NewPacket(got, layers.LayerTypeEthernet, gopacket.Default)
			ip, _ := pk.Layer(layers.LayerTypeIPv4).(*layers.IPv4)
			if ip == nil {
				t.Fatalf("gopacket: no IPv4 layer: %v", pk.ErrorLayer())
			}
			if ip.TTL != tc.wantTTL {
				t.Errorf("TTL %d, want %d", ip.TTL, tc.wantTTL)
			}
			if refChecksum(got[14:14+int(ip.IHL)*4]) != 0 {
				t.Errorf("header checksum %#04x does not verify", ip.Checksum)
			}
			// Only TTL and checksum may change.
			diff := 0
			for i := range got {
				if got[i] != tc.frame[i] && i != 22 && i != 24 && i != 25 {
					diff++
				}
			}
			if diff != 0 || len(got) != len(tc.frame) {
				t.Errorf("%d other bytes changed", diff)
			}
			h.CheckNoLeak()
		})
	}
}

func TestDecTTLUnconnected(t *testing.T) {
	h := elementtest.New(t, "DecTTL", nil, &elementtest.Options{Unconnected: []int{1}})
	f := mkFrame(t, frameOpts{ttl: 9})
	h.Push(0, mkFrame(t, frameOpts{ttl: 1}), f, f[:20], mkFrame(t, frameOpts{ttl: 1}), f)
	if n := len(h.Outs[0].Pkts); n != 2 {
		t.Errorf("output 0: %d, want 2", n)
	}
	for name, want := range map[string]uint64{"ttl expired": 2, elements.UnconnectedReason(1): 2, "too short": 1} {
		if c := h.Counter(name); c != want {
			t.Errorf("%q = %d, want %d", name, c, want)
		}
	}
	if d := h.Stats.Drops(); d != 3 {
		t.Errorf("Drops() = %d, want 3", d)
	}
	h.CheckNoLeak()
}

// TestDecTTLChecksum checks packet.IPv4.DecTTL's RFC 1624 update against a
// full recomputation on random headers, and on headers built so that the
// checksum before or after the decrement is 0x0000, or is stored as 0xffff
// (the other one's-complement zero, which receivers accept).
func TestDecTTLChecksum(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	hdr := func() packet.IPv4 {
		h := make(packet.IPv4, 20)
		for i := range h {
			h[i] = byte(rng.Uint32())
		}
		h[0] = 0x45
		h[8] = byte(2 + rng.IntN(254)) // TTL >= 2
		h.SetChecksum(0)
		h.SetChecksum(refChecksum(h))
		return h
	}
	// setSumTo adjusts the ID so that the header's computed checksum is c.
	setSumTo := func(h packet.IPv4, c uint16) {
		h.SetChecksum(0)
		h.SetID(0)
		rest := ^refChecksum(h) // one's-complement sum without the ID
		// want sum = ^c: id = ^c - rest in one's-complement arithmetic
		id := uint32(^c) + uint32(^rest)
		id = id>>16 + id&0xffff
		h.SetID(uint16(id))
		h.SetChecksum(refChecksum(h))
	}
	check := func(name string, h packet.IPv4) {
		t.Helper()
		g := append(packet.IPv4(nil), h...)
		g.DecTTL()
		w := append(packet.IPv4(nil), h...)
		w[8]--
		w.SetChecksum(0)
		w.SetChecksum(refChecksum(w))
		if !bytes.Equal(g, w) {
			t.Fatalf("%s: incremental %#04x, full recompute %#04x (header %x)", name, g.Checksum(), w.Checksum(), h)
		}
		if refChecksum(g) != 0 {
			t.Fatalf("%s: result does not verify", name)
		}
	}
	for range 200000 {
		check("random", hdr())
	}
	edges := 0
	for range 2000 {
		// Checksum 0x0000 before the decrement.
		h := hdr()
		setSumTo(h, 0x0000)
		if h.Checksum() != 0 {
			t.Fatalf("setup: checksum %#04x, want 0", h.Checksum())
		}
		check("0x0000 before", h)
		// Checksum 0x0000 after: the header before sums to 0x0100 less.
		h = hdr()
		h[8]--
		setSumTo(h, 0x0000)
		h[8]++
		h.SetChecksum(0)
		h.SetChecksum(refChecksum(h))
		g := append(packet.IPv4(nil), h...)
		g.DecTTL()
		if g.Checksum() != 0 {
			t.Fatalf("setup: checksum after %#04x, want 0", g.Checksum())
		}
		check("0x0000 after", h)
		// 0xffff stored in place of 0x0000: the update must still give
		// the full recomputation's value.
		h = hdr()
		setSumTo(h, 0x0000)
		h.SetChecksum(0xffff)
		if refChecksum(h) != 0 {
			t.Fatalf("setup: 0xffff header does not verify")
		}
		check("0xffff before", h)
		edges += 3
	}
	t.Logf("%d random and %d edge headers agree", 200000, edges)
}

func TestDecTTLAllocs(t *testing.T) {
	h := elementtest.New(t, "DecTTL", nil, &elementtest.Options{Sink: true})
	f := mkFrame(t, frameOpts{ttl: 64})
	if a := h.AllocsPerBatch(100, f, mkFrame(t, frameOpts{ttl: 1}), f[:10]); a != 0 {
		t.Errorf("allocs per batch = %v, want 0", a)
	}
}

func BenchmarkDecTTL(b *testing.B) {
	h := elementtest.New(b, "DecTTL", nil, &elementtest.Options{Sink: true})
	h.Bench(b, mkFrame(b, frameOpts{ttl: 64}))
}
