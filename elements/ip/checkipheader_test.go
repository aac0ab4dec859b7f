package ip

import (
	"bytes"
	"encoding/binary"
	"errors"
	"net/netip"
	"strings"
	"testing"

	"github.com/junction-dataplane/junction/drivers"
	"github.com/junction-dataplane/junction/packet"

	"github.com/junction-dataplane/junction/elements"
	"github.com/junction-dataplane/junction/elements/elementtest"
)

func TestCheckIPHeader(t *testing.T) {
	good := mkFrame(t, frameOpts{payload: 10})
	setSrc := func(a ...byte) func([]byte) []byte {
		return func(f []byte) []byte { copy(f[26:30], a); return fixIPChecksum(f) }
	}
	setDst := func(a ...byte) func([]byte) []byte {
		return func(f []byte) []byte { copy(f[30:34], a); return fixIPChecksum(f) }
	}
	// The devices of TestCheckIPHeaderDevices' world: lan 10.1.0.1/24 and
	// wan 10.2.0.1/16, 198.51.100.1/31 and 192.0.2.1/32.
	withDevs := &CheckIPHeaderConfig{Checksum: true, ForwardOnly: true, Devices: []string{"lan", "wan"}}
	noFwdOnly := &CheckIPHeaderConfig{Checksum: true, ForwardOnly: false, Devices: []string{"lan", "wan"}}
	tests := []struct {
		name   string
		cfg    *CheckIPHeaderConfig
		frame  []byte
		out    int    // expected output port
		reason string // counter expected to be 1 (for out 1)
		outLen int    // expected output length (0: unchanged)
	}{
		{name: "good", frame: good, out: 0},
		{name: "good with options", frame: mkFrame(t, frameOpts{options: true, payload: 4}), out: 0},
		{name: "padding trimmed", frame: mkFrame(t, frameOpts{payload: 2, pad: 14}), out: 0, outLen: 14 + 20 + 8 + 2},
		{name: "empty frame", frame: []byte{}, out: 1, reason: "too short"},
		{name: "ethernet only", frame: good[:14], out: 1, reason: "too short"},
		{name: "19 bytes of ip", frame: good[:14+19], out: 1, reason: "too short"},
		{name: "version 6", frame: edit(good, func(f []byte) []byte { f[14] = 0x65; return f }), out: 1, reason: "bad version"},
		{name: "version 0", frame: edit(good, func(f []byte) []byte { f[14] = 0x05; return f }), out: 1, reason: "bad version"},
		{name: "ihl 4", frame: edit(good, func(f []byte) []byte { f[14] = 0x44; return f }), out: 1, reason: "bad ihl"},
		{name: "ihl 0", frame: edit(good, func(f []byte) []byte { f[14] = 0x40; return f }), out: 1, reason: "bad ihl"},
		{name: "ihl beyond frame", frame: edit(good[:14+24], func(f []byte) []byte { f[14] = 0x47; return f }), out: 1, reason: "ihl beyond frame"},
		{name: "ihl 15 in short frame", frame: edit(good, func(f []byte) []byte { f[14] = 0x4f; return f }), out: 1, reason: "ihl beyond frame"},
		{name: "total length < ihl", frame: edit(good, func(f []byte) []byte {
			binary.BigEndian.PutUint16(f[16:], 19)
			return fixIPChecksum(f)
		}), out: 1, reason: "bad total length"},
		{name: "total length beyond frame", frame: edit(good, func(f []byte) []byte {
			binary.BigEndian.PutUint16(f[16:], uint16(len(f)-14+1))
			return fixIPChecksum(f)
		}), out: 1, reason: "total length beyond frame"},
		{name: "bad checksum", frame: edit(good, func(f []byte) []byte { f[24] ^= 0x01; return f }), out: 1, reason: "bad checksum"},
		{name: "bad checksum ignored", cfg: &CheckIPHeaderConfig{Checksum: false},
			frame: edit(good, func(f []byte) []byte { f[24] ^= 0x01; return f }), out: 0},
		{name: "src 0.0.0.0", frame: edit(good, setSrc(0, 0, 0, 0)), out: 1, reason: "martian source"},
		{name: "src 0.1.2.3", frame: edit(good, setSrc(0, 1, 2, 3)), out: 1, reason: "martian source"},
		{name: "src loopback", frame: edit(good, setSrc(127, 0, 0, 1)), out: 1, reason: "martian source"},
		{name: "src multicast", frame: edit(good, setSrc(224, 0, 0, 5)), out: 1, reason: "martian source"},
		{name: "src multicast top", frame: edit(good, setSrc(239, 255, 255, 255)), out: 1, reason: "martian source"},
		{name: "src reserved", frame: edit(good, setSrc(240, 0, 0, 1)), out: 1, reason: "martian source"},
		{name: "src broadcast", frame: edit(good, setSrc(255, 255, 255, 255)), out: 1, reason: "martian source"},
		{name: "src 126.255.255.255 ok", frame: edit(good, setSrc(126, 255, 255, 255)), out: 0},
		{name: "src 223.255.255.255 ok", frame: edit(good, setSrc(223, 255, 255, 255)), out: 0},
		{name: "badsrc match", cfg: &CheckIPHeaderConfig{Checksum: true, BadSrc: []string{"192.0.2.0/24", "10.0.0.0/8"}},
			frame: good, out: 1, reason: "martian source"},
		{name: "badsrc no match", cfg: &CheckIPHeaderConfig{Checksum: true, BadSrc: []string{"10.0.0.2/32", "11.0.0.0/8"}},
			frame: good, out: 0},
		// RFC 1812 5.3.7 and 4.2.2.11: destinations a router never forwards.
		{name: "dst limited broadcast", frame: edit(good, setDst(255, 255, 255, 255)), out: 1, reason: "limited broadcast"},
		{name: "dst multicast", frame: edit(good, setDst(239, 1, 1, 1)), out: 1, reason: "multicast destination"},
		{name: "dst multicast first", frame: edit(good, setDst(224, 0, 0, 0)), out: 1, reason: "multicast destination"},
		{name: "dst link-local multicast", frame: edit(good, setDst(224, 0, 0, 5)), out: 1, reason: "multicast destination"},
		{name: "dst multicast last", frame: edit(good, setDst(239, 255, 255, 255)), out: 1, reason: "multicast destination"},
		{name: "dst 0.0.0.0", frame: edit(good, setDst(0, 0, 0, 0)), out: 1, reason: "martian destination"},
		{name: "dst 0.255.255.255", frame: edit(good, setDst(0, 255, 255, 255)), out: 1, reason: "martian destination"},
		{name: "dst loopback", frame: edit(good, setDst(127, 0, 0, 1)), out: 1, reason: "martian destination"},
		{name: "dst loopback last", frame: edit(good, setDst(127, 255, 255, 255)), out: 1, reason: "martian destination"},
		{name: "dst class e", frame: edit(good, setDst(240, 0, 0, 1)), out: 1, reason: "martian destination"},
		{name: "dst class e last but one", frame: edit(good, setDst(255, 255, 255, 254)), out: 1, reason: "martian destination"},
		{name: "dst 1.0.0.0 ok", frame: edit(good, setDst(1, 0, 0, 0)), out: 0},
		{name: "dst 126.255.255.255 ok", frame: edit(good, setDst(126, 255, 255, 255)), out: 0},
		{name: "dst 128.0.0.0 ok", frame: edit(good, setDst(128, 0, 0, 0)), out: 0},
		{name: "dst 223.255.255.255 ok", frame: edit(good, setDst(223, 255, 255, 255)), out: 0},
		// A martian source is named before a bad destination.
		{name: "src and dst martian", frame: edit(good, func(f []byte) []byte {
			copy(f[26:34], []byte{127, 0, 0, 1, 255, 255, 255, 255})
			return fixIPChecksum(f)
		}), out: 1, reason: "martian source"},
		{name: "forward_only off: limited broadcast passes", cfg: noFwdOnly, frame: edit(good, setDst(255, 255, 255, 255)), out: 0},
		{name: "forward_only off: multicast passes", cfg: noFwdOnly, frame: edit(good, setDst(224, 0, 0, 9)), out: 0},
		{name: "forward_only off: loopback passes", cfg: noFwdOnly, frame: edit(good, setDst(127, 0, 0, 1)), out: 0},
		{name: "forward_only off: directed broadcast passes", cfg: noFwdOnly, frame: edit(good, setDst(10, 1, 0, 255)), out: 0},
		// Directed broadcasts of the devices' subnets (RFC 2644: not
		// forwarded by default).
		{name: "directed broadcast lan", cfg: withDevs, frame: edit(good, setDst(10, 1, 0, 255)), out: 1, reason: "directed broadcast"},
		{name: "directed broadcast wan /16", cfg: withDevs, frame: edit(good, setDst(10, 2, 255, 255)), out: 1, reason: "directed broadcast"},
		{name: "wan /16 host .255 ok", cfg: withDevs, frame: edit(good, setDst(10, 2, 0, 255)), out: 0},
		{name: "lan host ok", cfg: withDevs, frame: edit(good, setDst(10, 1, 0, 254)), out: 0},
		{name: "router's own address ok", cfg: withDevs, frame: edit(good, setDst(10, 1, 0, 1)), out: 0},
		{name: "other subnet's .255 ok", cfg: withDevs, frame: edit(good, setDst(10, 3, 0, 255)), out: 0},
		{name: "/31 has no broadcast", cfg: withDevs, frame: edit(good, setDst(198, 51, 100, 1)), out: 0},
		{name: "/32 has no broadcast", cfg: withDevs, frame: edit(good, setDst(192, 0, 2, 1)), out: 0},
		{name: "no devices: no directed broadcast check", frame: edit(good, setDst(10, 1, 0, 255)), out: 0},
		{name: "badsrc /0", cfg: &CheckIPHeaderConfig{Checksum: true, BadSrc: []string{"0.0.0.0/0"}},
			frame: good, out: 1, reason: "martian source"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var cfg any
			if tc.cfg != nil {
				cfg = tc.cfg
			}
			h := elementtest.New(t, "CheckIPHeader", cfg, &elementtest.Options{Devices: chkDevs})
			h.Push(0, tc.frame)
			other := 1 - tc.out
			if len(h.Outs[tc.out].Pkts) != 1 || len(h.Outs[other].Pkts) != 0 {
				t.Fatalf("outputs: %d on 0, %d on 1; want the packet on %d",
					len(h.Outs[0].Pkts), len(h.Outs[1].Pkts), tc.out)
			}
			got := h.Outs[tc.out].Frames()[0]
			want := tc.frame
			if tc.out == 0 {
				want = ipTrimmed(want) // good packets lose their link padding
			}
			if tc.outLen > 0 && len(got) != tc.outLen {
				t.Errorf("length %d, want %d", len(got), tc.outLen)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("frame changed:\n got %x\nwant %x", got, want)
			}
			for _, n := range checkNames {
				wantN := uint64(0)
				if n == tc.reason {
					wantN = 1
				}
				if c := h.Counter(n); c != wantN {
					t.Errorf("counter %q = %d, want %d", n, c, wantN)
				}
			}
			h.CheckNoLeak()
		})
	}
}

var chkDevs = elementtest.Devices{
	"lan": elementtest.Device{DevInfo: drivers.Info{Addresses: []netip.Prefix{netip.MustParsePrefix("10.1.0.1/24"), netip.MustParsePrefix("fd00::1/64")}}},
	"wan": elementtest.Device{DevInfo: drivers.Info{Addresses: []netip.Prefix{netip.MustParsePrefix("10.2.0.1/16"),
		netip.MustParsePrefix("198.51.100.0/31"), netip.MustParsePrefix("192.0.2.1/32")}}},
}

// A device that is not in the graph is a located error on key devices.
func TestCheckIPHeaderUnknownDevice(t *testing.T) {
	typ, _ := elements.Lookup("CheckIPHeader")
	c := &CheckIPHeaderConfig{Checksum: true, ForwardOnly: true, Devices: []string{"lan", "dmz"}}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	st := &elements.Stats{}
	ctx := elements.NewContext("chk", 0, 1, 64, []*elements.Output{{}, {}}, st, packet.NewPool(4), chkDevs, nil)
	_, err := typ.New(c, ctx)
	var ke *elements.KeyError
	if err == nil || !errors.As(err, &ke) || ke.Key != "devices" || !strings.Contains(err.Error(), `"dmz"`) {
		t.Fatalf("err = %v, want a devices key error naming dmz", err)
	}
}

// With output 1 unconnected, bad packets are dropped: counted by reason and
// as "unconnected output 1", and freed.
func TestCheckIPHeaderUnconnected(t *testing.T) {
	h := elementtest.New(t, "CheckIPHeader", nil, &elementtest.Options{Unconnected: []int{1}})
	good := mkFrame(t, frameOpts{})
	badSum := edit(good, func(f []byte) []byte { f[25] ^= 0xff; return f })
	h.Push(0, good, badSum, good[:20], good, badSum)
	if n := len(h.Outs[0].Pkts); n != 2 {
		t.Fatalf("output 0 got %d, want 2", n)
	}
	if c := h.Counter("bad checksum"); c != 2 {
		t.Errorf("bad checksum = %d, want 2", c)
	}
	if c := h.Counter("too short"); c != 1 {
		t.Errorf("too short = %d, want 1", c)
	}
	if c := h.Counter(elements.UnconnectedReason(1)); c != 3 {
		t.Errorf("unconnected output 1 = %d, want 3", c)
	}
	if d := h.Stats.Drops(); d != 3 {
		t.Errorf("Drops() = %d, want 3 (each drop counted once)", d)
	}
	h.CheckNoLeak()
}

// A batch mixing good and bad packets keeps the good ones in order.
func TestCheckIPHeaderMixedOrder(t *testing.T) {
	h := elementtest.New(t, "CheckIPHeader", nil, nil)
	var frames [][]byte
	for i := range 64 {
		f := mkFrame(t, frameOpts{payload: i})
		if i%3 == 1 {
			f[14] = 0x35 // version 3
		}
		frames = append(frames, f)
	}
	h.Push(0, frames...)
	got := h.Outs[0].Frames()
	j := 0
	for i, f := range frames {
		if i%3 == 1 {
			continue
		}
		if j >= len(got) || !bytes.Equal(got[j], ipTrimmed(f)) {
			t.Fatalf("output 0 packet %d is not input %d", j, i)
		}
		j++
	}
	if j != len(got) || len(h.Outs[1].Pkts) != 21 {
		t.Errorf("got %d good, %d bad; want %d, 21", len(got), len(h.Outs[1].Pkts), j)
	}
	h.CheckNoLeak()
}

func TestCheckIPHeaderConfig(t *testing.T) {
	for _, tc := range []struct {
		badsrc []string
		ok     bool
	}{
		{[]string{"192.0.2.0/24"}, true},
		{[]string{"192.0.2.1"}, true},
		{[]string{"192.0.2.0/33"}, false},
		{[]string{"192.0.2.1/24"}, false},
		{[]string{"2001:db8::/32"}, false},
		{[]string{"banana"}, false},
	} {
		c := &CheckIPHeaderConfig{Checksum: true, BadSrc: tc.badsrc}
		err := c.Validate()
		if (err == nil) != tc.ok {
			t.Errorf("badsrc %q: err = %v, want ok=%v", tc.badsrc, err, tc.ok)
		}
		var ke *elements.KeyError
		if err != nil && (!errors.As(err, &ke) || ke.Key != "badsrc") {
			t.Errorf("badsrc %q: error %v does not name key badsrc", tc.badsrc, err)
		}
	}
}

func TestCheckIPHeaderAllocs(t *testing.T) {
	c := &CheckIPHeaderConfig{Checksum: true, ForwardOnly: true, Devices: []string{"lan", "wan"}}
	h := elementtest.New(t, "CheckIPHeader", c, &elementtest.Options{Sink: true, Devices: chkDevs})
	good := mkFrame(t, frameOpts{})
	bad := edit(good, func(f []byte) []byte { f[24]++; return f })
	bcast := mkFrame(t, frameOpts{dst: "255.255.255.255"})
	dbcast := mkFrame(t, frameOpts{dst: "10.1.0.255"})
	if a := h.AllocsPerBatch(100, good, bad, good[:30], bcast, dbcast); a != 0 {
		t.Errorf("allocs per batch = %v, want 0", a)
	}
}

func BenchmarkCheckIPHeader(b *testing.B) {
	h := elementtest.New(b, "CheckIPHeader", nil, &elementtest.Options{Sink: true})
	h.Bench(b, mkFrame(b, frameOpts{payload: 18}))
}

// The destination checks' cost with devices named: good packets, a quarter
// of them to a .255 host of another subnet (past the quick filter).
func BenchmarkCheckIPHeaderDevices(b *testing.B) {
	c := &CheckIPHeaderConfig{Checksum: true, ForwardOnly: true, Devices: []string{"lan", "wan"}}
	h := elementtest.New(b, "CheckIPHeader", c, &elementtest.Options{Sink: true, Devices: chkDevs})
	h.Bench(b, mkFrame(b, frameOpts{payload: 18}), mkFrame(b, frameOpts{payload: 18, dst: "10.3.0.255"}),
		mkFrame(b, frameOpts{payload: 18, dst: "10.1.0.7"}), mkFrame(b, frameOpts{payload: 18, dst: "8.8.8.8"}))
}

// ipTrimmed cuts f after the IP total length (gopacket pads frames to 60).
func ipTrimmed(f []byte) []byte {
	return f[:14+int(binary.BigEndian.Uint16(f[16:]))]
}

// TestCheckIPHeaderRecordRouteTimestamp: packets with a record route or a
// timestamp option pass unchanged (the router does not enter itself:
// a deliberate choice, documented), each counted; allocation-free.
func TestCheckIPHeaderRecordRouteTimestamp(t *testing.T) {
	withOpt := func(opt ...byte) []byte {
		return edit(mkFrame(t, frameOpts{options: true, payload: 8}), func(f []byte) []byte {
			copy(f[34:38], opt)
			return fixIPChecksum(f)
		})
	}
	rr := withOpt(7, 3, 4, 0)     // record route, no room: pointer past the end
	ts := withOpt(68, 4, 5, 0x00) // timestamp, no room
	h := elementtest.New(t, "CheckIPHeader", nil, nil)
	h.Push(0, rr, ts, rr)
	if n := len(h.Outs[0].Pkts); n != 3 {
		t.Fatalf("%d of 3 packets passed: %v", n, h.Stats.Counters())
	}
	for i, want := range [][]byte{rr, ts, rr} {
		// Unchanged up to the IP packet's end (the Ethernet padding
		// after it is trimmed).
		if got := h.Outs[0].Pkts[i].Data; len(got) != 14+40 || string(got) != string(want[:len(got)]) {
			t.Errorf("packet %d changed:\n got %x\nwant %x", i, got, want)
		}
	}
	if h.Counter("record route option") != 2 || h.Counter("timestamp option") != 1 {
		t.Errorf("counted %d record route and %d timestamp, want 2 and 1", h.Counter("record route option"), h.Counter("timestamp option"))
	}
	h.Reset()
	ha := elementtest.New(t, "CheckIPHeader", nil, &elementtest.Options{Sink: true})
	if a := ha.AllocsPerBatch(100, rr, ts); a != 0 {
		t.Errorf("allocs per batch = %v, want 0", a)
	}
}
