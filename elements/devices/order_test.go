package devices

import (
	"encoding/binary"
	"sync"
	"testing"
	"time"

	"github.com/junction-dataplane/junction/drivers"
	"github.com/junction-dataplane/junction/elements"
	"github.com/junction-dataplane/junction/packet"
)

// twoQueueDev is a device with two RX queues whose contents the test
// sets, and which reports their positions (drivers.RxPositioner).
type twoQueueDev struct {
	affineDev
	q       [2][][]byte // frames waiting on each queue
	arrived [2]uint32
	taken   [2]uint32
}

func (d *twoQueueDev) RxQueues() int { return 2 }

func (d *twoQueueDev) Receive(q int, b *packet.Batch) int {
	n := 0
	for len(d.q[q]) > 0 && !b.Full() {
		p := d.pool.Get()
		p.SetFrame(d.q[q][0])
		d.q[q] = d.q[q][1:]
		d.taken[q]++
		b.Add(p)
		n++
	}
	return n
}

func (d *twoQueueDev) Drained(int) bool { return false }

func (d *twoQueueDev) RxPosition(q int) (arrived, taken uint32) { return d.arrived[q], d.taken[q] }

// put queues frames numbered from..to-1 of flow f on queue q.
func (d *twoQueueDev) put(q int, f []byte, from, to int) {
	for i := from; i < to; i++ {
		fr := append([]byte(nil), f...)
		binary.BigEndian.PutUint16(fr[18:], uint16(i))
		d.q[q] = append(d.q[q], fr)
		d.arrived[q]++
	}
}

// ownedBy returns a UDP flow that the spreading of two workers gives to
// worker w.
func ownedBy(t *testing.T, w int) []byte {
	for sport := uint16(1000); sport < 2000; sport++ {
		f := udpFrame(0x0a010002, 0x0a020002, sport, 80)
		if int(uint64(packet.FlowHashFrame(f, packet.EthernetLen))*2>>32) == w {
			return f
		}
	}
	t.Fatal("no flow for worker", w)
	return nil
}

type moveRig struct {
	dev  *twoQueueDev
	srcs [2]*FromDevice
	st   [2]*elements.Stats
	got  []uint16 // numbers in the order the sink saw them
}

type recordSink struct {
	r  *moveRig
	mu *sync.Mutex
}

func (s recordSink) Push(in int, b *packet.Batch) {
	s.mu.Lock()
	for _, p := range b.Pkts {
		s.r.got = append(s.r.got, binary.BigEndian.Uint16(p.Data[18:]))
		p.Free()
	}
	s.mu.Unlock()
}

func newMoveRig(t *testing.T) *moveRig {
	r := &moveRig{dev: &twoQueueDev{}}
	r.dev.pool = packet.NewPool(256)
	var dev drivers.Device = r.dev
	slot := &elements.SharedSlot{}
	mu := &sync.Mutex{}
	typ, _ := elements.Lookup("FromDevice")
	for w := range 2 {
		out := elements.NewOutput(&elements.Clock{})
		out.Connect(recordSink{r, mu}, 0, &elements.Stats{})
		r.st[w] = &elements.Stats{}
		ctx := elements.NewContext("in", w, 2, 64, []*elements.Output{out}, r.st[w], packet.NewPool(8), perWorker{dev}, slot)
		el, err := typ.New(&FromConfig{Device: "lan", Spread: "on"}, ctx)
		if err != nil {
			t.Fatal(err)
		}
		r.srcs[w] = el.(*FromDevice)
		if r.srcs[w].sp.ord == nil {
			t.Fatalf("worker %d: no queue-move ordering with a device that reports its positions", w)
		}
	}
	t.Cleanup(func() {
		for _, f := range r.srcs {
			f.Close()
		}
	})
	return r
}

func (r *moveRig) check(t *testing.T, n int) {
	t.Helper()
	if len(r.got) != n {
		t.Fatalf("pushed %d packets, want %d: %v", len(r.got), n, r.got)
	}
	for i, v := range r.got {
		if int(v) != i {
			t.Fatalf("out of order: %v", r.got)
		}
	}
}

// A flow owned by worker 0 moves from its own queue 0 to queue 1 (read by
// worker 1, which hands it over) while queue 0 still holds three of its
// packets: the handed packets wait until worker 0 has read those.
func TestQueueMoveToOtherWorker(t *testing.T) {
	r := newMoveRig(t)
	f := ownedBy(t, 0)
	r.dev.put(0, f, 0, 1)
	r.srcs[0].Poll() // the flow is on queue 0
	r.dev.put(0, f, 1, 4)
	r.dev.put(1, f, 4, 7)
	r.srcs[1].Poll() // 4..6 handed to worker 0
	for range 3 {
		r.srcs[0].Poll()
	}
	r.check(t, 7)
	if c := counter(r.st[0], "queue moves"); c != 1 {
		t.Errorf("queue moves = %d, want 1", c)
	}
	if c := counter(r.st[0], "queue move timeouts"); c != 0 {
		t.Errorf("queue move timeouts = %d, want 0", c)
	}
}

// A flow owned by worker 0 moves from queue 1 (read by worker 1) to
// worker 0's own queue 0 while queue 1 still holds three of its packets:
// worker 0 holds what queue 0 brings until worker 1 has read queue 1 past
// them and they have come through the ring.
func TestQueueMoveToOwnQueue(t *testing.T) {
	r := newMoveRig(t)
	f := ownedBy(t, 0)
	r.dev.put(1, f, 0, 1)
	r.srcs[1].Poll()
	r.srcs[0].Poll() // the flow is on queue 1
	r.dev.put(1, f, 1, 4)
	r.dev.put(0, f, 4, 7)
	r.srcs[0].Poll() // reads 4..6: held
	r.srcs[0].Poll()
	if len(r.got) != 1 {
		t.Fatalf("pushed %v before the old queue was read", r.got)
	}
	var fds []int
	if _, mode := r.srcs[0].PrepareSleep(fds); mode != elements.SleepNot {
		t.Errorf("a worker holding packets may sleep (mode %v)", mode)
	}
	r.srcs[1].Poll() // reads 1..3 and hands them over
	r.srcs[0].Poll()
	r.check(t, 7)
	if c := counter(r.st[0], "queue moves"); c != 1 {
		t.Errorf("queue moves = %d, want 1", c)
	}
}

// When the old queue's reader never gets there, the held packets go after
// a millisecond, counted.
func TestQueueMoveTimeout(t *testing.T) {
	r := newMoveRig(t)
	f := ownedBy(t, 0)
	r.dev.put(1, f, 0, 1)
	r.srcs[1].Poll()
	r.srcs[0].Poll()
	r.dev.put(1, f, 1, 4)
	r.dev.put(0, f, 4, 7)
	r.srcs[0].Poll()
	time.Sleep(2 * orderTimeout)
	r.srcs[0].Poll()
	if len(r.got) != 4 {
		t.Fatalf("pushed %v, want the first and the three held", r.got)
	}
	if c := counter(r.st[0], "queue move timeouts"); c != 1 {
		t.Errorf("queue move timeouts = %d, want 1", c)
	}
	if r.srcs[0].sp.holding() {
		t.Error("still holding after the timeout")
	}
}

// A flow that stays on its queue is never held, and the check allocates
// nothing.
func TestQueueMoveSteadyAllocs(t *testing.T) {
	r := newMoveRig(t)
	f := ownedBy(t, 0)
	r.got = make([]uint16, 0, 1<<16)
	r.dev.q[0] = make([][]byte, 0, 1<<14)
	r.dev.put(0, f, 0, 32*200)
	a := testing.AllocsPerRun(100, func() { r.srcs[0].Poll() })
	if a != 0 {
		t.Errorf("Poll with the order check allocates %.1f times", a)
	}
	if c := counter(r.st[0], "queue moves"); c != 0 {
		t.Errorf("queue moves = %d, want 0", c)
	}
}

// loopDev is twoQueueDev whose queue 0 never runs dry: it hands out
// frames of 64 flows, all owned by worker 0, round robin.
type loopDev struct {
	twoQueueDev
	frames [][]byte
	next   int
}

func (d *loopDev) Receive(q int, b *packet.Batch) int {
	if q != 0 {
		return 0
	}
	n := 0
	for !b.Full() {
		p := d.pool.Get()
		if p == nil {
			break
		}
		p.SetFrame(d.frames[d.next%len(d.frames)])
		d.next++
		d.arrived[0]++
		d.taken[0]++
		b.Add(p)
		n++
	}
	return n
}

// BenchmarkQueueMoveCheck: worker 0 polling its own queue, every flow its
// own and staying on its queue (the common case), with the queue-move
// check (on) and without it (off, the spreader's ord removed).
func BenchmarkQueueMoveCheck(b *testing.B) {
	for _, on := range []bool{false, true} {
		name := "off"
		if on {
			name = "on"
		}
		b.Run(name, func(b *testing.B) {
			d := &loopDev{}
			d.pool = packet.NewPool(256)
			for sport := uint16(1000); len(d.frames) < 64; sport++ {
				f := udpFrame(0x0a010002, 0x0a020002, sport, 80)
				if uint64(packet.FlowHashFrame(f, packet.EthernetLen))*2>>32 == 0 {
					d.frames = append(d.frames, f)
				}
			}
			typ, _ := elements.Lookup("FromDevice")
			slot := &elements.SharedSlot{}
			var st *elements.Stats
			var f *FromDevice
			// Both workers are built (worker 1 lends worker 0 the
			// buffers it would hand over with); only worker 0 polls.
			for w := 1; w >= 0; w-- {
				out := elements.NewOutput(&elements.Clock{})
				out.Connect(freeSink{}, 0, &elements.Stats{})
				st = &elements.Stats{}
				ctx := elements.NewContext("in", w, 2, 64, []*elements.Output{out}, st, packet.NewPool(8), perWorker{d}, slot)
				el, err := typ.New(&FromConfig{Device: "lan", Spread: "on"}, ctx)
				if err != nil {
					b.Fatal(err)
				}
				f = el.(*FromDevice)
			}
			if !on {
				f.sp.ord = nil
			}
			b.ReportAllocs()
			pkts := 0
			for b.Loop() {
				pkts += f.Poll()
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(pkts), "ns/pkt")
			if c := counter(st, "queue moves"); c != 0 {
				b.Fatalf("queue moves = %d", c)
			}
		})
	}
}

// Packets held for a queue move are reported as stranded (a reload that
// replaces the FromDevice counts them lost) and freed by Close.
func TestQueueMoveStranded(t *testing.T) {
	r := newMoveRig(t)
	f := ownedBy(t, 0)
	r.dev.put(1, f, 0, 1)
	r.srcs[1].Poll()
	r.srcs[0].Poll()
	r.dev.put(1, f, 1, 4)
	r.dev.put(0, f, 4, 7)
	r.srcs[0].Poll() // 4..6 held
	if n := r.srcs[0].Stranded(); n != 3 {
		t.Errorf("Stranded() = %d, want the 3 held packets", n)
	}
	free := r.dev.pool.Available()
	r.srcs[0].Close()
	if got := r.dev.pool.Available() - free; got != 3 {
		t.Errorf("Close returned %d held packets to their pool, want 3", got)
	}
}
