package devices_test

import (
	"bytes"
	"testing"

	"github.com/junction-dataplane/junction/drivers"
	"github.com/junction-dataplane/junction/elements"
	"github.com/junction-dataplane/junction/elements/devices"
	"github.com/junction-dataplane/junction/elements/elementtest"
	"github.com/junction-dataplane/junction/packet"
)

// fakeDev is a drivers.Device whose RX queues hand out frames from a pool
// and whose TX side records (or frees) what it is given.
type fakeDev struct {
	pool    *packet.Pool // set once the harness exists
	nq      int
	remain  []int // packets left per queue; <0: endless
	frame   []byte
	tag     bool  // write the queue number into byte 0 of each frame
	rxCalls []int // Receive calls per queue
	keep    bool  // keep transmitted packets instead of freeing them
	sent    []*packet.Packet
	txCount int
	lazy    bool // leave packets in the batch on Transmit (a buggy driver)
	idle    int  // a queue that has nothing now but is not drained; -1: none
}

func newFake(remain ...int) *fakeDev {
	return &fakeDev{nq: len(remain), remain: remain, rxCalls: make([]int, len(remain)), idle: -1,
		frame: bytes.Repeat([]byte{0xab}, 60)}
}

func (d *fakeDev) RxQueues() int { return d.nq }
func (d *fakeDev) Receive(q int, b *packet.Batch) int {
	d.rxCalls[q]++
	if q == d.idle {
		return 0
	}
	n := 0
	for !b.Full() && d.remain[q] != 0 {
		p := d.pool.Get()
		if p == nil {
			break
		}
		p.SetFrame(d.frame)
		if d.tag {
			p.Data[0] = byte(q)
		}
		b.Add(p)
		n++
		if d.remain[q] > 0 {
			d.remain[q]--
		}
	}
	return n
}
func (d *fakeDev) Drained(q int) bool { return d.remain[q] == 0 }
func (d *fakeDev) Transmit(worker int, b *packet.Batch) {
	if d.lazy {
		return
	}
	d.txCount += len(b.Pkts)
	if d.keep {
		d.sent = append(d.sent, b.Pkts...)
		b.Reset()
		return
	}
	b.FreeAll()
}
func (d *fakeDev) Flush() error             { return nil }
func (d *fakeDev) Close() error             { return nil }
func (d *fakeDev) Info() drivers.Info       { return drivers.Info{Name: "lan", Driver: "fake"} }
func (d *fakeDev) Stats() []drivers.Counter { return nil }

// fakeSet serves one device named "lan" at index 3; queue q belongs to
// worker q mod workers, as the pipeline assigns them.
type fakeSet struct {
	dev     *fakeDev
	workers int
}

func (s fakeSet) Device(name string) (drivers.Device, int, bool) {
	if name != "lan" {
		return nil, 0, false
	}
	return s.dev, 3, true
}
func (s fakeSet) Queues(name string, worker int) []int {
	var qs []int
	for q := 0; q < s.dev.nq; q++ {
		if q%s.workers == worker {
			qs = append(qs, q)
		}
	}
	return qs
}

func fromDevice(t testing.TB, dev *fakeDev, worker, workers int, sink bool) (*elementtest.Harness, elements.Source) {
	h := elementtest.New(t, "FromDevice", &devices.FromConfig{Device: "lan", Spread: "off"}, &elementtest.Options{
		Worker: worker, Workers: workers, Devices: fakeSet{dev, workers}, Sink: sink})
	dev.pool = h.Pool
	return h, h.Element.(elements.Source)
}

func TestFromDeviceQueues(t *testing.T) {
	tests := []struct {
		name            string
		queues          int
		worker, workers int
		want            []int // queues served, in poll order
	}{
		{"one queue one worker", 1, 0, 1, []int{0}},
		{"two queues one worker", 2, 0, 1, []int{0, 1}},
		{"four queues worker 1 of 2", 4, 1, 2, []int{1, 3}},
		{"three queues worker 0 of 2", 3, 0, 2, []int{0, 2}},
		{"one queue worker 1 of 2: none", 1, 1, 2, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			remain := make([]int, tt.queues)
			for i := range remain {
				remain[i] = -1
			}
			dev := newFake(remain...)
			dev.tag = true
			h, src := fromDevice(t, dev, tt.worker, tt.workers, false)
			if got := src.Drained(); got != (len(tt.want) == 0) {
				t.Fatalf("Drained() = %v with %d queues served", got, len(tt.want))
			}
			// Two rounds of the round robin: each poll is one whole
			// batch from the next queue.
			for round := 0; round < 2; round++ {
				for _, q := range tt.want {
					n := src.Poll()
					if n != 64 {
						t.Fatalf("Poll = %d, want 64", n)
					}
					pk := h.Outs[0].Pkts
					if len(pk) != 64 {
						t.Fatalf("output got %d packets, want 64", len(pk))
					}
					for _, p := range pk {
						if int(p.Data[0]) != q || int(p.InQueue) != q || p.InDevice != 3 {
							t.Fatalf("packet from queue %d (InQueue %d, InDevice %d), want queue %d, device 3",
								p.Data[0], p.InQueue, p.InDevice, q)
						}
					}
					h.Reset()
				}
			}
			if len(tt.want) == 0 && src.Poll() != 0 {
				t.Fatalf("Poll on no queues returned packets")
			}
			for q := 0; q < tt.queues; q++ {
				served := false
				for _, w := range tt.want {
					served = served || w == q
				}
				if !served && dev.rxCalls[q] != 0 {
					t.Errorf("queue %d of another worker was polled %d times", q, dev.rxCalls[q])
				}
				if served && dev.rxCalls[q] != 2 {
					t.Errorf("queue %d polled %d times, want 2", q, dev.rxCalls[q])
				}
			}
			h.CheckNoLeak()
		})
	}
}

func TestFromDeviceDrained(t *testing.T) {
	tests := []struct {
		name   string
		remain []int
		polls  []int // expected Poll results until drained
	}{
		{"one queue, 100 packets", []int{100}, []int{64, 36}},
		{"empty queue skipped", []int{0, 10}, []int{10}},
		{"uneven queues", []int{70, 5}, []int{64, 5, 6}},
		{"all empty", []int{0, 0}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dev := newFake(append([]int(nil), tt.remain...)...)
			h, src := fromDevice(t, dev, 0, 1, true)
			for i, want := range tt.polls {
				if src.Drained() {
					t.Fatalf("drained before poll %d", i)
				}
				if got := src.Poll(); got != want {
					t.Fatalf("poll %d = %d, want %d", i, got, want)
				}
			}
			if got := src.Poll(); got != 0 {
				t.Fatalf("poll after the end = %d", got)
			}
			if !src.Drained() {
				t.Fatalf("not drained after every queue is exhausted")
			}
			total := 0
			for _, r := range tt.remain {
				total += r
			}
			if h.Sinks[0].Count != total {
				t.Fatalf("sink got %d packets, want %d", h.Sinks[0].Count, total)
			}
			// A drained queue is not asked again.
			calls := append([]int(nil), dev.rxCalls...)
			src.Poll()
			for q := range calls {
				if dev.rxCalls[q] != calls[q] {
					t.Errorf("drained queue %d polled again", q)
				}
			}
			h.CheckNoLeak()
		})
	}
}

// An idle queue must not cost a poll when the next one has packets.
func TestFromDeviceSkipsIdleQueue(t *testing.T) {
	dev := newFake(-1, -1)
	dev.tag = true
	h, src := fromDevice(t, dev, 0, 1, false)
	dev.idle = 0 // queue 0 has nothing now but is not drained
	for i := 0; i < 3; i++ {
		if n := src.Poll(); n != 64 || h.Outs[0].Pkts[0].Data[0] != 1 {
			t.Fatalf("Poll %d = %d; want a batch from queue 1", i, n)
		}
		h.Reset()
	}
	if src.Drained() {
		t.Fatalf("drained while queues are live")
	}
	if dev.rxCalls[0] == 0 {
		t.Fatalf("idle queue 0 never asked")
	}
}

func TestToDevice(t *testing.T) {
	frames := [][]byte{{1, 2, 3}, bytes.Repeat([]byte{7}, 60), bytes.Repeat([]byte{9}, 1514)}
	tests := []struct {
		name string
		lazy bool
	}{
		{"driver takes all", false},
		{"driver leaves packets", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dev := newFake(0)
			dev.keep, dev.lazy = true, tt.lazy
			h := elementtest.New(t, "ToDevice", &devices.Config{Device: "lan"},
				&elementtest.Options{Devices: fakeSet{dev, 1}})
			h.Push(0, frames...)
			if tt.lazy {
				if got := h.Counter("not transmitted"); got != 3 {
					t.Fatalf("not transmitted = %d, want 3", got)
				}
				if h.Pool.Outstanding() != 0 {
					t.Fatalf("%d packets leaked", h.Pool.Outstanding())
				}
				return
			}
			if len(dev.sent) != len(frames) {
				t.Fatalf("driver got %d packets, want %d", len(dev.sent), len(frames))
			}
			for i, p := range dev.sent {
				if !bytes.Equal(p.Data, frames[i]) {
					t.Errorf("packet %d changed", i)
				}
			}
			// The driver owns them now: nothing else freed them.
			if h.Pool.Outstanding() != len(frames) {
				t.Fatalf("outstanding %d, want %d held by the driver", h.Pool.Outstanding(), len(frames))
			}
			for _, p := range dev.sent {
				p.Free()
			}
			if h.Counter("not transmitted") != 0 {
				t.Fatalf("not transmitted counted for a good driver")
			}
		})
	}
}

func TestBadDevice(t *testing.T) {
	for _, typ := range []string{"FromDevice", "ToDevice"} {
		tt, _ := elements.Lookup(typ)
		cfg := tt.NewConfig()
		if err := cfg.(elements.Validator).Validate(); err == nil {
			t.Errorf("%s: empty device accepted", typ)
		}
		switch c := cfg.(type) {
		case *devices.Config:
			c.Device = "wan"
		case *devices.FromConfig:
			c.Device = "wan"
		}
		ctx := elements.NewContext("x", 0, 1, 64, []*elements.Output{elements.NewOutput(&elements.Clock{})},
			&elements.Stats{}, packet.NewPool(8), fakeSet{newFake(1), 1}, nil)
		if _, err := tt.New(cfg, ctx); err == nil {
			t.Errorf("%s: unknown device accepted", typ)
		}
	}
}

func TestAllocs(t *testing.T) {
	dev := newFake(-1, -1)
	_, src := fromDevice(t, dev, 0, 1, true)
	if a := testing.AllocsPerRun(100, func() { src.Poll() }); a != 0 {
		t.Errorf("FromDevice.Poll: %v allocs per batch", a)
	}
	tx := elementtest.New(t, "ToDevice", &devices.Config{Device: "lan"},
		&elementtest.Options{Devices: fakeSet{newFake(0), 1}, Sink: true})
	if a := tx.AllocsPerBatch(100, make([]byte, 60)); a != 0 {
		t.Errorf("ToDevice.Push: %v allocs per batch", a)
	}
}

func BenchmarkFromDevice(b *testing.B) {
	dev := newFake(-1, -1)
	h, src := fromDevice(b, dev, 0, 1, true)
	b.ReportAllocs()
	pkts := 0
	for b.Loop() {
		pkts += src.Poll()
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(pkts), "ns/pkt")
	_ = h
}

func BenchmarkToDevice(b *testing.B) {
	h := elementtest.New(b, "ToDevice", &devices.Config{Device: "lan"},
		&elementtest.Options{Devices: fakeSet{newFake(0), 1}, Sink: true})
	h.Bench(b, make([]byte, 60))
}
