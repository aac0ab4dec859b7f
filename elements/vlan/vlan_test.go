package vlan

import (
	"bytes"
	"encoding/binary"
	"strings"
	"testing"

	"github.com/junction-dataplane/junction/elements"
	"github.com/junction-dataplane/junction/elements/elementtest"
	"github.com/junction-dataplane/junction/packet"
)

var (
	dstMAC = []byte{0x52, 0x54, 0, 0x12, 0x34, 0x56}
	srcMAC = []byte{0x02, 0, 0, 0, 0, 0x01}
)

// frame returns an Ethernet frame with tags (each {TPID, TCI}, outermost
// first), then EtherType 0x0800 and payload bytes 0, 1, 2, ...
func frame(payload int, tags ...[2]uint16) []byte {
	f := append(append([]byte{}, dstMAC...), srcMAC...)
	for _, t := range tags {
		f = binary.BigEndian.AppendUint16(f, t[0])
		f = binary.BigEndian.AppendUint16(f, t[1])
	}
	f = binary.BigEndian.AppendUint16(f, 0x0800)
	for i := 0; i < payload; i++ {
		f = append(f, byte(i))
	}
	return f
}

func TestDecap(t *testing.T) {
	tests := []struct {
		name, drop string
		in, want   []byte
	}{
		{"802.1Q", "", frame(46, [2]uint16{0x8100, 10}), frame(46)},
		{"802.1Q with priority", "", frame(46, [2]uint16{0x8100, 6<<13 | 20}), frame(46)},
		{"priority tag (id 0)", "", frame(46, [2]uint16{0x8100, 0}), frame(46)},
		{"802.1ad over 802.1Q: the inner tag stays", "", frame(46, [2]uint16{0x88a8, 100}, [2]uint16{0x8100, 10}), frame(46, [2]uint16{0x8100, 10})},
		{"tag and EtherType only", "", frame(0, [2]uint16{0x8100, 10}), frame(0)},
		{"untagged", "untagged", frame(46), nil},
		{"untagged, 14 bytes", "untagged", frame(0), nil},
		{"13 bytes", "truncated", frame(0)[:13], nil},
		{"tag cut", "truncated", frame(0, [2]uint16{0x8100, 10})[:17], nil},
		{"second tag cut", "truncated", frame(0, [2]uint16{0x88a8, 10}, [2]uint16{0x8100, 10})[:21], nil},
		{"id 4095", "reserved vlan", frame(46, [2]uint16{0x8100, 4095}), nil},
		{"three tags", "too many tags", frame(46, [2]uint16{0x88a8, 1}, [2]uint16{0x8100, 2}, [2]uint16{0x8100, 3}), nil},
		{"three tags, the third 802.1ad", "too many tags", frame(46, [2]uint16{0x8100, 1}, [2]uint16{0x8100, 2}, [2]uint16{0x88a8, 3}), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := elementtest.New(t, "VLANDecap", nil, nil)
			if pushOne(t, h, tt.in, tt.want, tt.drop) {
				// 14, or 18 past the inner tag of an 802.1ad frame.
				want := uint16(14)
				if len(tt.want) >= 18 && binary.BigEndian.Uint16(tt.want[12:]) == 0x8100 {
					want = 18
				}
				if l3 := h.Outs[0].Pkts[0].L3; l3 != want {
					t.Errorf("L3 %d, want %d", l3, want)
				}
			}
		})
	}
}

// pushOne pushes frame in through h's element and checks that it came
// out as want, or was dropped under reason drop (drop != ""); it reports
// whether the frame came out right.
func pushOne(t *testing.T, h *elementtest.Harness, in, want []byte, drop string) bool {
	t.Helper()
	defer h.CheckNoLeak()
	h.Push(0, in)
	out := h.Outs[0].Frames()
	if drop != "" {
		if len(out) != 0 || h.Counter(drop) != 1 {
			t.Errorf("%d out, counters %v, want a %q drop", len(out), h.Stats.Counters(), drop)
		}
		return false
	}
	if len(out) != 1 || !bytes.Equal(out[0], want) {
		t.Errorf("out %x, want %x (counters %v)", out, want, h.Stats.Counters())
		return false
	}
	return true
}

func TestEncap(t *testing.T) {
	tests := []struct {
		name, drop string
		cfg        EncapConfig
		in, want   []byte
	}{
		{"802.1Q 10", "", EncapConfig{VLAN: 10}, frame(46), frame(46, [2]uint16{0x8100, 10})},
		{"802.1Q 4094 priority 5", "", EncapConfig{VLAN: 4094, Priority: 5}, frame(46), frame(46, [2]uint16{0x8100, 5<<13 | 4094})},
		{"802.1ad over 802.1Q", "", EncapConfig{VLAN: 100, TPID: "802.1ad"}, frame(46, [2]uint16{0x8100, 10}), frame(46, [2]uint16{0x88a8, 100}, [2]uint16{0x8100, 10})},
		{"header only", "", EncapConfig{VLAN: 1}, frame(0), frame(0, [2]uint16{0x8100, 1})},
		{"a third tag", "too many tags", EncapConfig{VLAN: 1}, frame(46, [2]uint16{0x88a8, 100}, [2]uint16{0x8100, 10}), nil},
		{"13 bytes", "truncated", EncapConfig{VLAN: 1}, frame(0)[:13], nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := tt.cfg
			h := elementtest.New(t, "VLANEncap", &c, nil)
			if pushOne(t, h, tt.in, tt.want, tt.drop) {
				// The harness gives the frame L3 14; the network header
				// is 4 bytes further after the tag.
				if l3 := h.Outs[0].Pkts[0].L3; l3 != 18 {
					t.Errorf("L3 %d, want 18", l3)
				}
			}
		})
	}
}

// TestEncapNoHeadroom: a frame at the very start of its buffer is dropped
// and counted, not written before it.
func TestEncapNoHeadroom(t *testing.T) {
	h := elementtest.New(t, "VLANEncap", &EncapConfig{VLAN: 10}, nil)
	p := h.Pool.Get()
	f := frame(46)
	p.Data = p.Buffer()[:len(f)]
	copy(p.Data, f)
	h.PushBatch(0, p)
	if len(h.Outs[0].Frames()) != 0 || h.Counter("no headroom") != 1 {
		t.Errorf("counters %v, want a \"no headroom\" drop", h.Stats.Counters())
	}
	h.CheckNoLeak()
}

// TestRoundTrip: a mixed batch keeps its order through VLANEncap then
// VLANDecap, each frame back as it was.
func TestRoundTrip(t *testing.T) {
	enc := elementtest.New(t, "VLANEncap", &EncapConfig{VLAN: 20, Priority: 3}, nil)
	var in [][]byte
	for i := 0; i < 40; i++ {
		in = append(in, frame(i*37))
	}
	enc.Push(0, in...)
	dec := elementtest.New(t, "VLANDecap", nil, nil)
	var pkts []*packet.Packet
	for _, f := range enc.Outs[0].Frames() {
		pkts = append(pkts, dec.Packet(f))
	}
	dec.PushBatch(0, pkts...)
	out := dec.Outs[0].Frames()
	if len(out) != len(in) {
		t.Fatalf("%d frames back, want %d", len(out), len(in))
	}
	for i := range in {
		if !bytes.Equal(out[i], in[i]) {
			t.Fatalf("frame %d: %x, want %x", i, out[i], in[i])
		}
	}
}

func TestEncapConfigErrors(t *testing.T) {
	for _, tc := range []struct {
		cfg EncapConfig
		msg string
	}{
		{EncapConfig{}, `key "vlan": 0 out of range 1-4094 (0 is a priority tag without a VLAN, 4095 is reserved)`},
		{EncapConfig{VLAN: 4095}, `key "vlan": 4095 out of range 1-4094`},
		{EncapConfig{VLAN: -1}, `key "vlan": -1 out of range 1-4094`},
		{EncapConfig{VLAN: 10, Priority: 8}, `key "priority": 8 out of range 0-7`},
		{EncapConfig{VLAN: 10, TPID: "0x9100"}, `key "tpid": "0x9100": want "802.1q" or "802.1ad"`},
	} {
		err := tc.cfg.Validate()
		if err == nil || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("%+v: error %v, want %q", tc.cfg, err, tc.msg)
		}
	}
}

func TestManuals(t *testing.T) {
	for _, name := range []string{"VLANDecap", "VLANEncap"} {
		typ, ok := elements.Lookup(name)
		if !ok {
			t.Fatalf("%s not registered", name)
		}
		if err := elements.CheckDoc(typ); err != nil {
			t.Error(err)
		}
	}
}

func TestNoAllocs(t *testing.T) {
	frames := benchFrames()
	for _, tc := range []struct {
		name string
		cfg  any
		fs   [][]byte
	}{{"VLANDecap", nil, frames}, {"VLANEncap", &EncapConfig{VLAN: 10}, frames}} {
		h := elementtest.New(t, tc.name, tc.cfg, &elementtest.Options{Sink: true})
		if a := h.AllocsPerBatch(100, tc.fs...); a != 0 {
			t.Errorf("%s: %.1f allocations per batch", tc.name, a)
		}
	}
}
