package standard_test

import (
	"bytes"
	"io"
	"net/netip"
	"strings"
	"testing"

	"github.com/junction-dataplane/junction/elements/elementtest"
	"github.com/junction-dataplane/junction/elements/standard"
	"github.com/junction-dataplane/junction/packet"
)

func frame(n int, seed byte) []byte {
	f := make([]byte, n)
	for i := range f {
		f[i] = seed + byte(i)
	}
	return f
}

func TestCounter(t *testing.T) {
	tests := []struct {
		name    string
		batches [][]int // frame sizes per batch
		packets uint64
		bytes   uint64
	}{
		{"one batch", [][]int{{60, 1514, 0}}, 3, 1574},
		{"two batches", [][]int{{64}, {100, 200}}, 3, 364},
		{"empty batch", [][]int{{}}, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := elementtest.New(t, "Counter", nil, nil)
			var want [][]byte
			for bi, sizes := range tt.batches {
				var fs [][]byte
				for i, n := range sizes {
					fs = append(fs, frame(n, byte(bi*10+i)))
				}
				want = append(want, fs...)
				h.Push(0, fs...)
			}
			if h.Counter("packets") != tt.packets || h.Counter("bytes") != tt.bytes {
				t.Fatalf("counters %v, want %d packets %d bytes", h.Stats.Counters(), tt.packets, tt.bytes)
			}
			got := h.Outs[0].Frames()
			if len(got) != len(want) {
				t.Fatalf("%d out, want %d", len(got), len(want))
			}
			for i := range got {
				if !bytes.Equal(got[i], want[i]) {
					t.Fatalf("packet %d changed or reordered", i)
				}
			}
			if h.Stats.Drops() != 0 {
				t.Fatalf("Counter dropped")
			}
			h.CheckNoLeak()
		})
	}
}

func TestDiscard(t *testing.T) {
	for _, n := range []int{0, 1, 64} {
		h := elementtest.New(t, "Discard", nil, nil)
		var fs [][]byte
		for i := 0; i < n; i++ {
			fs = append(fs, frame(60, byte(i)))
		}
		h.Push(0, fs...)
		h.Push(0, frame(1, 0))
		if got := h.Counter("discarded"); got != uint64(n+1) {
			t.Errorf("%d packets: discarded = %d", n, got)
		}
		// Consumed by design, not lost: no drop.
		if d, c := h.Stats.Drops(), h.Stats.Consumed(); d != 0 || c != uint64(n+1) {
			t.Errorf("%d packets: drops %d, consumed %d; want 0, %d", n, d, c, n+1)
		}
		if h.Pool.Outstanding() != 0 {
			t.Errorf("%d packets not freed", h.Pool.Outstanding())
		}
	}
}

// TestDiscardReason: Discard(REASON) counts its packets as consumed under
// REASON (and only there); a reason that is empty, too long or not
// printable is refused, naming the key.
func TestDiscardReason(t *testing.T) {
	h := elementtest.New(t, "Discard", &standard.DiscardConfig{Reason: "firewall"}, nil)
	h.Push(0, frame(60, 1), frame(60, 2), frame(60, 3))
	cs := h.Stats.Counters()
	if len(cs) != 1 || cs[0].Name != "firewall" || !cs[0].Consumed || cs[0].Drop || cs[0].Value != 3 {
		t.Errorf("counters %+v; want only \"firewall\" consumed 3", cs)
	}
	if h.Stats.Drops() != 0 || h.Stats.Consumed() != 3 {
		t.Errorf("drops %d consumed %d", h.Stats.Drops(), h.Stats.Consumed())
	}
	h.CheckNoLeak()
	for _, bad := range []string{"", strings.Repeat("x", 65), "a\tb", `say "no"`} {
		err := (&standard.DiscardConfig{Reason: bad}).Validate()
		if err == nil || !strings.Contains(err.Error(), `key "reason"`) {
			t.Errorf("reason %q: %v", bad, err)
		}
	}
	if err := (&standard.DiscardConfig{Reason: "not ip"}).Validate(); err != nil {
		t.Errorf("reason \"not ip\": %v", err)
	}
}

func TestTee(t *testing.T) {
	tests := []struct {
		name     string
		n        int
		packets  int
		poolSize int
		got      []int // packets expected on each output
		noBuffer uint64
	}{
		{"n=1 passes through", 1, 5, 0, []int{5}, 0},
		{"n=2", 2, 64, 0, []int{64, 64}, 0},
		{"n=3", 3, 10, 0, []int{10, 10, 10}, 0},
		{"n=16", 16, 4, 0, []int{4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4}, 0},
		// 3 originals, 5 buffers in the pool: 2 copies can be made, and
		// the first copy output gets them; 4 copies are missing.
		{"pool runs dry", 3, 3, 5, []int{3, 2, 0}, 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := elementtest.New(t, "Tee", &standard.TeeConfig{N: tt.n}, &elementtest.Options{PoolSize: tt.poolSize})
			if len(h.Outs) != tt.n {
				t.Fatalf("%d outputs, want %d", len(h.Outs), tt.n)
			}
			var pkts []*packet.Packet
			for i := 0; i < tt.packets; i++ {
				p := h.Packet(frame(60+i, byte(i)))
				p.NextHop = packetAddr(byte(i))
				p.InDevice, p.FlowHash, p.Scratch[0] = 2, uint32(i), byte(i)
				pkts = append(pkts, p)
			}
			orig := append([]*packet.Packet(nil), pkts...)
			h.PushBatch(0, pkts...)
			for o, want := range tt.got {
				got := h.Outs[o].Pkts
				if len(got) != want {
					t.Fatalf("output %d: %d packets, want %d", o, len(got), want)
				}
				for i, p := range got {
					if o == 0 && p != orig[i] {
						t.Fatalf("output 0 packet %d is not the original", i)
					}
					if o > 0 && (p == orig[i] || &p.Data[0] == &orig[i].Data[0]) {
						t.Fatalf("output %d packet %d shares the original", o, i)
					}
					if !bytes.Equal(p.Data, frame(60+i, byte(i))) || p.NextHop != packetAddr(byte(i)) ||
						p.InDevice != 2 || p.FlowHash != uint32(i) || p.Scratch[0] != byte(i) {
						t.Fatalf("output %d packet %d: frame or annotations differ", o, i)
					}
				}
			}
			if h.Counter("no buffer") != tt.noBuffer || h.Stats.Drops() != tt.noBuffer {
				t.Fatalf("counters %v, drops %d; want %d no buffer", h.Stats.Counters(), h.Stats.Drops(), tt.noBuffer)
			}
			h.CheckNoLeak()
		})
	}
}

// A batch larger than the configured batch size is copied in pieces and
// nothing is lost.
func TestTeeLargeBatch(t *testing.T) {
	h := elementtest.New(t, "Tee", &standard.TeeConfig{N: 2}, &elementtest.Options{Batch: 64, PoolSize: 512})
	b := packet.NewBatch(200)
	for i := 0; i < 200; i++ {
		b.Add(h.Packet(frame(20, byte(i))))
	}
	h.Element.Push(0, b)
	if len(h.Outs[0].Pkts) != 200 || len(h.Outs[1].Pkts) != 200 {
		t.Fatalf("outputs got %d and %d, want 200 each", len(h.Outs[0].Pkts), len(h.Outs[1].Pkts))
	}
	for i, p := range h.Outs[1].Pkts {
		if p.Data[0] != byte(i) {
			t.Fatalf("copy %d out of order", i)
		}
	}
	h.CheckNoLeak()
}

func TestTeeConfig(t *testing.T) {
	for _, n := range []int{0, -1, 17} {
		if err := (&standard.TeeConfig{N: n}).Validate(); err == nil || !strings.Contains(err.Error(), `key "n"`) {
			t.Errorf("n=%d: Validate = %v", n, err)
		}
	}
	for _, n := range []int{1, 16} {
		c := &standard.TeeConfig{N: n}
		if err := c.Validate(); err != nil {
			t.Errorf("n=%d: %v", n, err)
		}
		if in, out := c.Ports(); in != 1 || out != n {
			t.Errorf("n=%d: ports %d, %d", n, in, out)
		}
	}
}

func TestPrint(t *testing.T) {
	f60 := frame(60, 0)
	tests := []struct {
		name   string
		cfg    standard.PrintConfig
		frames [][]byte
		want   string
	}{
		{"default 24 bytes", standard.PrintConfig{Label: "in", MaxLength: 24, Contents: true}, [][]byte{f60},
			"in:   60 | 00010203 04050607 08090a0b 0c0d0e0f 10111213 14151617 ...\n"},
		{"short frame, no label", standard.PrintConfig{MaxLength: 24, Contents: true}, [][]byte{{0xde, 0xad, 0xbe, 0xef, 0x01}},
			"   5 | deadbeef 01\n"},
		{"length only", standard.PrintConfig{Label: "x", MaxLength: 24}, [][]byte{f60, frame(1514, 0)},
			"x:   60\nx: 1514\n"},
		{"maxlength 0", standard.PrintConfig{Label: "x", Contents: true}, [][]byte{f60},
			"x:   60\n"},
		{"whole frame", standard.PrintConfig{Label: "w", MaxLength: -1, Contents: true}, [][]byte{frame(9, 0xf0)},
			"w:    9 | f0f1f2f3 f4f5f6f7 f8\n"},
		{"empty frame", standard.PrintConfig{Label: "e", MaxLength: 24, Contents: true}, [][]byte{{}},
			"e:    0 |\n"},
		{"four digits", standard.PrintConfig{Label: "j", MaxLength: 2, Contents: true}, [][]byte{frame(1900, 0)},
			"j: 1900 | 0001 ...\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := tt.cfg
			h := elementtest.New(t, "Print", &c, nil)
			var w bytes.Buffer
			h.Element.(*standard.Print).W = &w
			h.Push(0, tt.frames...)
			if w.String() != tt.want {
				t.Fatalf("printed\n%q\nwant\n%q", w.String(), tt.want)
			}
			if got := h.Outs[0].Frames(); len(got) != len(tt.frames) {
				t.Fatalf("%d passed on, want %d", len(got), len(tt.frames))
			}
			h.CheckNoLeak()
		})
	}
}

// One write per batch, not per packet.
type countWriter struct{ writes, bytes int }

func (c *countWriter) Write(b []byte) (int, error) { c.writes++; c.bytes += len(b); return len(b), nil }

func TestPrintOneWritePerBatch(t *testing.T) {
	h := elementtest.New(t, "Print", nil, nil)
	var w countWriter
	h.Element.(*standard.Print).W = &w
	fs := make([][]byte, 64)
	for i := range fs {
		fs[i] = frame(60, byte(i))
	}
	h.Push(0, fs...)
	if w.writes != 1 || w.bytes == 0 {
		t.Fatalf("%d writes for one batch", w.writes)
	}
	h.Push(0) // an empty batch writes nothing
	if w.writes != 1 {
		t.Fatalf("empty batch written")
	}
}

func TestPrintConfig(t *testing.T) {
	if err := (&standard.PrintConfig{MaxLength: -2}).Validate(); err == nil || !strings.Contains(err.Error(), `key "maxlength"`) {
		t.Errorf("maxlength -2: %v", err)
	}
}

func TestAllocs(t *testing.T) {
	frames := [][]byte{frame(60, 0), frame(1514, 1)}
	for _, tt := range []struct {
		typ string
		cfg any
	}{
		{"Counter", nil},
		{"Discard", nil},
		{"Tee", &standard.TeeConfig{N: 3}},
		{"Print", nil},
	} {
		h := elementtest.New(t, tt.typ, tt.cfg, &elementtest.Options{Sink: true})
		if pr, ok := h.Element.(*standard.Print); ok {
			pr.W = io.Discard
			h.AllocsPerBatch(1, frames...) // warm-up: the line buffer grows once
		}
		if a := h.AllocsPerBatch(100, frames...); a != 0 {
			t.Errorf("%s: %v allocs per batch", tt.typ, a)
		}
	}
}

func BenchmarkCounter(b *testing.B) {
	elementtest.New(b, "Counter", nil, &elementtest.Options{Sink: true}).Bench(b, frame(60, 0))
}

func BenchmarkDiscard(b *testing.B) {
	elementtest.New(b, "Discard", nil, &elementtest.Options{Sink: true}).Bench(b, frame(60, 0))
}

func BenchmarkTee2(b *testing.B) {
	h := elementtest.New(b, "Tee", &standard.TeeConfig{N: 2}, &elementtest.Options{Sink: true})
	h.Bench(b, frame(60, 0))
}

func BenchmarkPrint(b *testing.B) {
	h := elementtest.New(b, "Print", nil, &elementtest.Options{Sink: true})
	h.Element.(*standard.Print).W = io.Discard
	h.Bench(b, frame(60, 0))
}

func packetAddr(i byte) netip.Addr { return netip.AddrFrom4([4]byte{10, 0, 0, i}) }
