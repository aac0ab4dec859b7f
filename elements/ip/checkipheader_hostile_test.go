package ip

import (
	"encoding/binary"
	"testing"

	"github.com/junction-dataplane/junction/elements/elementtest"
)

// withOptions returns f (an Ethernet/IPv4 frame with a 20-byte header)
// with opts inserted as IP options, padded with EOL to a multiple of 4,
// IHL, total length and checksum fixed.
func withOptions(f []byte, opts ...byte) []byte {
	for len(opts)%4 != 0 {
		opts = append(opts, 0)
	}
	out := append([]byte(nil), f[:14+20]...)
	out = append(out, opts...)
	out = append(out, f[14+20:]...)
	out[14] = 0x40 | byte((20+len(opts))/4)
	binary.BigEndian.PutUint16(out[16:], uint16(len(out)-14))
	return fixIPChecksum(out)
}

// fragment sets f's fragment offset (in 8-byte units) and MF.
func fragment(f []byte, off uint16, mf bool) []byte {
	f = append([]byte(nil), f...)
	v := off & 0x1fff
	if mf {
		v |= 0x2000
	}
	binary.BigEndian.PutUint16(f[20:], v)
	return fixIPChecksum(f)
}

// TestCheckIPHeaderHostile: source-routed packets (LSRR 131, SSRR 137,
// RFC 7126 4.3 and 4.4: drop by default) and fragments that would
// reassemble beyond 65,535 bytes (offset*8 + payload; the "ping of death")
// fail by default; source_route = true lets source routes through;
// other options (record route, NOP, EOL) pass.
func TestCheckIPHeaderHostile(t *testing.T) {
	good := mkFrame(t, frameOpts{payload: 10}) // UDP: 8 + 10 bytes of payload
	lsrr := []byte{131, 7, 4, 192, 0, 2, 9}
	ssrr := []byte{137, 7, 4, 192, 0, 2, 9}
	rr := []byte{7, 7, 4, 0, 0, 0, 0}
	// offset 8190*8 = 65520; 20 + 18 bytes of IP after it: 65,538.
	big := fragment(good, 8190, false)
	// offset 8188*8 = 65504; 18 bytes of payload: 65,522, fine.
	fits := fragment(good, 8188, true)
	allow := &CheckIPHeaderConfig{Checksum: true, ForwardOnly: true, SourceRoute: true}
	for _, tc := range []struct {
		name   string
		cfg    *CheckIPHeaderConfig
		frame  []byte
		reason string // "" passes
	}{
		{"lsrr", nil, withOptions(good, lsrr...), "source route"},
		{"ssrr", nil, withOptions(good, ssrr...), "source route"},
		{"lsrr after nop", nil, withOptions(good, append([]byte{1, 1}, lsrr...)...), "source route"},
		{"lsrr after record route", nil, withOptions(good, append(rr, lsrr...)...), "source route"},
		{"ssrr, checksum unchecked", &CheckIPHeaderConfig{}, withOptions(good, ssrr...), "source route"},
		{"lsrr allowed", allow, withOptions(good, lsrr...), ""},
		{"ssrr allowed", allow, withOptions(good, ssrr...), ""},
		{"record route", nil, withOptions(good, rr...), ""},
		{"lsrr after eol", nil, withOptions(good, append([]byte{0, 0, 0, 0}, lsrr...)...), ""},
		{"option length 1", nil, withOptions(good, 131, 1, 4, 0), "bad options"},
		{"option length beyond header", nil, withOptions(good, 7, 40, 4, 0), "bad options"},
		{"option without length", nil, withOptions(good, 1, 1, 1, 131), "bad options"},
		{"oversized fragment", nil, big, "oversized fragment"},
		{"oversized fragment, forward_only false", &CheckIPHeaderConfig{Checksum: true}, big, "oversized fragment"},
		{"last fragment that fits", nil, fits, ""},
		{"first fragment", nil, fragment(good, 0, true), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := tc.cfg
			if cfg == nil {
				cfg = &CheckIPHeaderConfig{Checksum: true, ForwardOnly: true}
			}
			h := elementtest.New(t, "CheckIPHeader", cfg, nil)
			h.Push(0, tc.frame)
			want0, want1 := 1, 0
			if tc.reason != "" {
				want0, want1 = 0, 1
			}
			if len(h.Outs[0].Pkts) != want0 || len(h.Outs[1].Pkts) != want1 {
				t.Fatalf("out0 %d out1 %d, want %d %d (counters %v)", len(h.Outs[0].Pkts), len(h.Outs[1].Pkts), want0, want1, h.Stats.Counters())
			}
			if tc.reason != "" && h.Counter(tc.reason) != 1 {
				t.Errorf("%q = %d, want 1 (counters %v)", tc.reason, h.Counter(tc.reason), h.Stats.Counters())
			}
			h.Reset()
		})
	}
}

// Unconnected output 1 (as the shipped graphs have it): the hostile
// packets are dropped and counted, and the good one goes through.
func TestCheckIPHeaderHostileDropped(t *testing.T) {
	good := mkFrame(t, frameOpts{payload: 10})
	h := elementtest.New(t, "CheckIPHeader", nil, &elementtest.Options{Unconnected: []int{1}})
	h.Push(0, withOptions(good, 131, 7, 4, 192, 0, 2, 9), fragment(good, 8190, false), good)
	if len(h.Outs[0].Pkts) != 1 || h.Counter("source route") != 1 || h.Counter("oversized fragment") != 1 ||
		h.Stats.Drops() != 2 {
		t.Fatalf("out %d, counters %v", len(h.Outs[0].Pkts), h.Stats.Counters())
	}
	h.Reset()
	h.CheckNoLeak()
}

func TestCheckIPHeaderHostileAllocs(t *testing.T) {
	good := mkFrame(t, frameOpts{payload: 10})
	h := elementtest.New(t, "CheckIPHeader", nil, &elementtest.Options{Sink: true})
	if a := h.AllocsPerBatch(100, withOptions(good, 1, 131, 7, 4, 192, 0, 2, 9), withOptions(good, 7, 7, 4, 0, 0, 0, 0),
		fragment(good, 8190, false), good); a != 0 {
		t.Errorf("allocs per batch = %v", a)
	}
}
