package devices

import (
	"encoding/binary"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/junction-dataplane/junction/drivers"
	"github.com/junction-dataplane/junction/elements"
	"github.com/junction-dataplane/junction/packet"
)

// udpFrame is an Ethernet/IPv4/UDP frame of 64 bytes (checksums are not
// needed: only the flow hash reads it).
func udpFrame(src, dst uint32, sport, dport uint16) []byte {
	f := make([]byte, 64)
	binary.BigEndian.PutUint16(f[12:], packet.EtherTypeIPv4)
	f[14] = 0x45
	binary.BigEndian.PutUint16(f[16:], 50)
	f[22], f[23] = 64, packet.ProtoUDP
	binary.BigEndian.PutUint32(f[26:], src)
	binary.BigEndian.PutUint32(f[30:], dst)
	binary.BigEndian.PutUint16(f[34:], sport)
	binary.BigEndian.PutUint16(f[36:], dport)
	return f
}

// seqDev is a one-queue device handing out frames in order (count of them,
// cycling), from its own pool. Only the worker owning queue 0 calls it.
type seqDev struct {
	frames [][]byte
	count  int
	sent   int
	pool   *packet.Pool
	limit  int // > 0: nothing more for now once sent reaches it (not drained)
}

func (d *seqDev) RxQueues() int { return 1 }
func (d *seqDev) Receive(q int, b *packet.Batch) int {
	n := 0
	for !b.Full() && d.sent < d.count && (d.limit == 0 || d.sent < d.limit) {
		p := d.pool.Get()
		if p == nil {
			break
		}
		p.SetFrame(d.frames[d.sent%len(d.frames)])
		p.L3 = packet.L3Offset(p.Data) // as the drivers do
		b.Add(p)
		d.sent++
		n++
	}
	return n
}
func (d *seqDev) Drained(int) bool            { return d.sent >= d.count }
func (d *seqDev) Transmit(int, *packet.Batch) {}
func (d *seqDev) Flush() error                { return nil }
func (d *seqDev) Close() error                { return nil }
func (d *seqDev) Info() drivers.Info          { return drivers.Info{Name: "lan"} }
func (d *seqDev) Stats() []drivers.Counter    { return nil }
func (d *seqDev) Set() elements.DeviceSet     { return oneDev{d} }

type oneDev struct{ d drivers.Device }

func (s oneDev) Device(string) (drivers.Device, int, bool) { return s.d, 0, true }
func (s oneDev) Queues(_ string, w int) []int {
	if w == 0 {
		return []int{0}
	}
	return nil
}

// flowSink records, per worker, the flow hash of every packet and frees it.
type flowSink struct {
	mu    *sync.Mutex
	seen  map[uint32]int // flow hash → worker (shared, under mu)
	w     int
	count atomic.Int64
	bad   atomic.Int64 // a flow seen on two workers
}

func (s *flowSink) Push(in int, b *packet.Batch) {
	s.mu.Lock()
	for _, p := range b.Pkts {
		h := packet.FlowHash(p)
		if p.FlowHash != h {
			s.bad.Add(1)
		}
		if w, ok := s.seen[h]; ok && w != s.w {
			s.bad.Add(1)
		}
		s.seen[h] = s.w
		p.Free()
	}
	s.mu.Unlock()
	s.count.Add(int64(len(b.Pkts)))
}

type spreadRig struct {
	dev   *seqDev
	srcs  []*FromDevice
	sinks []*flowSink
	stats []*elements.Stats
}

func newRig(t testing.TB, workers int, frames [][]byte, count int) *spreadRig {
	dev := &seqDev{frames: frames, count: count, pool: packet.NewPool(1024)}
	slot := &elements.SharedSlot{}
	r := &spreadRig{dev: dev}
	mu := &sync.Mutex{}
	seen := map[uint32]int{}
	typ, _ := elements.Lookup("FromDevice")
	for w := 0; w < workers; w++ {
		out := elements.NewOutput(&elements.Clock{})
		sink := &flowSink{mu: mu, seen: seen, w: w}
		out.Connect(sink, 0, &elements.Stats{})
		st := &elements.Stats{}
		ctx := elements.NewContext("in", w, workers, 64, []*elements.Output{out}, st, packet.NewPool(8), dev.Set(), slot)
		el, err := typ.New(&FromConfig{Device: "lan", Spread: "auto"}, ctx)
		if err != nil {
			t.Fatal(err)
		}
		f := el.(*FromDevice)
		if f.sp == nil {
			t.Fatalf("worker %d: spreading not on with 1 queue and %d workers", w, workers)
		}
		r.srcs, r.sinks, r.stats = append(r.srcs, f), append(r.sinks, sink), append(r.stats, st)
	}
	return r
}

func counter(st *elements.Stats, name string) uint64 {
	for _, c := range st.Counters() {
		if c.Name == name {
			return c.Value
		}
	}
	return 0
}

// flowFrames makes n flows and, for each, its reverse direction too.
func flowFrames(n int) [][]byte {
	var fr [][]byte
	for i := 0; i < n; i++ {
		a, b := uint32(0x0a010000+i), uint32(0x0a020002)
		sp, dp := uint16(1024+i), uint16(80)
		fr = append(fr, udpFrame(a, b, sp, dp), udpFrame(b, a, dp, sp))
	}
	return fr
}

// Every flow (both directions) lands on one worker; both workers get a fair
// share; every buffer comes back.
func TestSpreadFlows(t *testing.T) {
	frames := flowFrames(128)
	const count = 10000
	r := newRig(t, 2, frames, count)
	for i := 0; i < 2000 && !(r.srcs[0].Drained() && r.srcs[1].Drained()); i++ {
		r.srcs[0].Poll()
		r.srcs[1].Poll()
	}
	if !r.srcs[0].Drained() || !r.srcs[1].Drained() {
		t.Fatalf("not drained")
	}
	c0, c1 := r.sinks[0].count.Load(), r.sinks[1].count.Load()
	if c0+c1 != count {
		t.Fatalf("delivered %d+%d, want %d (drops %d)", c0, c1, count, r.stats[0].Drops())
	}
	if r.sinks[0].bad.Load()+r.sinks[1].bad.Load() != 0 {
		t.Fatalf("a flow (or its reverse) reached two workers, or FlowHash unset")
	}
	if share := float64(c0) / count; share < 0.35 || share > 0.65 {
		t.Errorf("worker 0 got %.0f%% of the packets", 100*share)
	}
	if off, in := counter(r.stats[0], "handed off"), counter(r.stats[1], "handed in"); off != in || int64(in) != c1 {
		t.Errorf("handed off %d, handed in %d, worker 1 delivered %d", off, in, c1)
	}
	if r.dev.pool.Outstanding() != 0 {
		t.Errorf("device pool: %d outstanding", r.dev.pool.Outstanding())
	}
	for _, f := range r.srcs {
		f.Close()
	}
	if o := r.srcs[1].sp.pool.Outstanding(); o != 0 {
		t.Errorf("receiver's spread pool: %d outstanding after close", o)
	}
}

// Two workers polling concurrently (run with -race): all delivered (the
// sender waits for a congested receiver), nothing leaked, flows kept
// together.
func TestSpreadConcurrent(t *testing.T) {
	frames := flowFrames(64)
	const count = 200000
	r := newRig(t, 2, frames, count)
	var wg sync.WaitGroup
	for w := range r.srcs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !r.srcs[w].Drained() {
				r.srcs[w].Poll()
			}
		}()
	}
	wg.Wait()
	c0, c1 := r.sinks[0].count.Load(), r.sinks[1].count.Load()
	drops := counter(r.stats[0], "spread full")
	if uint64(c0+c1) != count || drops != 0 {
		t.Fatalf("delivered %d+%d, dropped %d: want all %d delivered (backpressure, no drop)", c0, c1, drops, count)
	}
	if c1 == 0 {
		t.Fatalf("nothing reached worker 1")
	}
	if r.sinks[0].bad.Load()+r.sinks[1].bad.Load() != 0 {
		t.Fatalf("a flow reached two workers")
	}
	for _, f := range r.srcs {
		f.Close()
	}
	if r.dev.pool.Outstanding() != 0 || r.srcs[1].sp.pool.Outstanding() != 0 {
		t.Fatalf("leak: device %d, spread %d", r.dev.pool.Outstanding(), r.srcs[1].sp.pool.Outstanding())
	}
	t.Logf("worker 0 %d, worker 1 %d, spread full %d", c0, c1, drops)
}

// A receiver that does not poll: the sender stops reading its queue once
// the receiver cannot take a whole batch (backpressure), drops nothing,
// never blocks, and resumes when the receiver catches up; every buffer is
// accounted for.
func TestSpreadBackpressure(t *testing.T) {
	const count = 20000
	r := newRig(t, 2, flowFrames(64), count)
	for i := 0; i < 400; i++ {
		r.srcs[0].Poll()
	}
	if d := counter(r.stats[0], "spread full"); d != 0 {
		t.Fatalf("%d packets dropped as spread full with a stalled receiver: want backpressure", d)
	}
	if counter(r.stats[0], "handoff waits") == 0 {
		t.Fatalf("no handoff wait counted with a stalled receiver")
	}
	held := r.dev.sent
	if held >= count {
		t.Fatalf("the sender read all %d packets with a stalled receiver", held)
	}
	// The receiver catches up: everything arrives, nothing dropped.
	for i := 0; i < 5000 && !(r.srcs[0].Drained() && r.srcs[1].Drained()); i++ {
		r.srcs[0].Poll()
		r.srcs[1].Poll()
	}
	if c := r.sinks[0].count.Load() + r.sinks[1].count.Load(); c != count {
		t.Fatalf("delivered %d of %d after the receiver resumed (held at %d)", c, count, held)
	}
	for _, f := range r.srcs {
		f.Close()
	}
	if r.dev.pool.Outstanding() != 0 || r.srcs[1].sp.pool.Outstanding() != 0 {
		t.Fatalf("leak: device %d, spread %d", r.dev.pool.Outstanding(), r.srcs[1].sp.pool.Outstanding())
	}
}

func TestSpreadConfig(t *testing.T) {
	for _, s := range []string{"auto", "on", "off"} {
		if err := (&FromConfig{Device: "lan", Spread: s}).Validate(); err != nil {
			t.Errorf("%s: %v", s, err)
		}
	}
	if err := (&FromConfig{Device: "lan", Spread: "yes"}).Validate(); err == nil {
		t.Errorf("spread = yes accepted")
	}
	// off: worker 1 serves nothing and is drained at once.
	dev := &seqDev{frames: flowFrames(1), count: 1, pool: packet.NewPool(8)}
	typ, _ := elements.Lookup("FromDevice")
	out := elements.NewOutput(&elements.Clock{})
	out.Connect(&flowSink{mu: &sync.Mutex{}, seen: map[uint32]int{}}, 0, &elements.Stats{})
	ctx := elements.NewContext("in", 1, 2, 64, []*elements.Output{out}, &elements.Stats{}, packet.NewPool(8), dev.Set(), nil)
	el, err := typ.New(&FromConfig{Device: "lan", Spread: "off"}, ctx)
	if err != nil {
		t.Fatal(err)
	}
	if el.(*FromDevice).sp != nil || !el.(elements.Source).Drained() {
		t.Fatalf("spread off still spreads")
	}
}

func TestSpreadAllocs(t *testing.T) {
	r := newRig(t, 2, flowFrames(64), 1<<30)
	if a := testing.AllocsPerRun(200, func() {
		r.srcs[0].Poll()
		r.srcs[1].Poll()
	}); a != 0 {
		t.Fatalf("%v allocs per round", a)
	}
}

// BenchmarkSpread: one worker receives and hands half its packets to the
// other, which is polled on the same goroutine (the cost of the handoff:
// hash, copy, ring, free, on both sides).
func BenchmarkSpread(b *testing.B) {
	r := newRig(b, 2, flowFrames(256), 1<<62)
	for _, f := range r.srcs {
		f.out.Connect(freeSink{}, 0, &elements.Stats{})
	}
	b.ReportAllocs()
	pkts := 0
	for b.Loop() {
		pkts += r.srcs[0].Poll()
		pkts += r.srcs[1].Poll()
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(pkts), "ns/pkt")
}

type freeSink struct{}

func (freeSink) Push(in int, b *packet.Batch) { b.FreeAll() }

// orderSink checks that each flow's packets arrive in the order the device
// numbered them (the IPv4 identification field holds the number).
type orderSink struct {
	mu    *sync.Mutex
	last  map[uint32]uint16
	count atomic.Int64
	bad   atomic.Int64
}

func (s *orderSink) Push(in int, b *packet.Batch) {
	s.mu.Lock()
	for _, p := range b.Pkts {
		h := packet.FlowHash(p)
		id := binary.BigEndian.Uint16(p.Data[18:])
		if last, ok := s.last[h]; ok && int16(id-last) <= 0 {
			s.bad.Add(1)
		}
		s.last[h] = id
		p.Free()
	}
	s.mu.Unlock()
	s.count.Add(int64(len(b.Pkts)))
}

// numberedDev is seqDev whose frames carry their sequence number.
type numberedDev struct{ seqDev }

func (d *numberedDev) Receive(q int, b *packet.Batch) int {
	first := len(b.Pkts)
	n := d.seqDev.Receive(q, b)
	for i, p := range b.Pkts[first:] {
		binary.BigEndian.PutUint16(p.Data[18:], uint16(d.sent-n+i))
	}
	return n
}

// Two workers polling concurrently, half the packets handed over: every
// flow's packets leave in the order they were received, none lost.
func TestSpreadKeepsOrder(t *testing.T) {
	const count = 100000
	dev := &numberedDev{seqDev{frames: flowFrames(8), count: count, pool: packet.NewPool(1024)}}
	slot := &elements.SharedSlot{}
	sink := &orderSink{mu: &sync.Mutex{}, last: map[uint32]uint16{}}
	typ, _ := elements.Lookup("FromDevice")
	var srcs []*FromDevice
	for w := 0; w < 2; w++ {
		out := elements.NewOutput(&elements.Clock{})
		out.Connect(sink, 0, &elements.Stats{})
		ctx := elements.NewContext("in", w, 2, 64, []*elements.Output{out}, &elements.Stats{}, packet.NewPool(8), oneDev{dev}, slot)
		el, err := typ.New(&FromConfig{Device: "lan", Spread: "auto"}, ctx)
		if err != nil {
			t.Fatal(err)
		}
		srcs = append(srcs, el.(*FromDevice))
	}
	var wg sync.WaitGroup
	for _, f := range srcs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !f.Drained() {
				f.Poll()
			}
		}()
	}
	wg.Wait()
	if c := sink.count.Load(); c != count {
		t.Fatalf("delivered %d of %d", c, count)
	}
	if b := sink.bad.Load(); b != 0 {
		t.Fatalf("%d packets left out of order within their flow", b)
	}
	for _, f := range srcs {
		f.Close()
	}
}

// affineDev is a device with one queue per worker that may promise flow
// affinity.
type affineDev struct {
	seqDev
	queues int
	affine bool
}

func (d *affineDev) RxQueues() int      { return d.queues }
func (d *affineDev) Info() drivers.Info { return drivers.Info{Name: "lan", FlowAffine: d.affine} }

type perWorker struct{ d drivers.Device }

func (s perWorker) Device(string) (drivers.Device, int, bool) { return s.d, 0, true }
func (s perWorker) Queues(_ string, w int) []int              { return []int{w} }

// auto spreads when a worker would have no queue, and when the graph keeps
// per-flow state unless the driver promises its queues keep flows apart;
// as many queues as workers is not enough for a stateful graph.
func TestSpreadAuto(t *testing.T) {
	typ, _ := elements.Lookup("FromDevice")
	for _, c := range []struct {
		queues, workers int
		affine, state   bool
		spread          string
		want            bool
	}{
		{2, 2, false, true, "auto", true},
		{2, 2, true, true, "auto", false},
		{2, 2, false, false, "auto", false},
		{1, 2, true, false, "auto", true},
		{1, 2, true, true, "auto", true},
		{2, 1, false, true, "auto", false},
		{2, 2, true, false, "on", true},
		{2, 2, false, true, "off", false},
	} {
		dev := &affineDev{seqDev: seqDev{pool: packet.NewPool(8)}, queues: c.queues, affine: c.affine}
		out := elements.NewOutput(&elements.Clock{})
		ctx := elements.NewContext("in", 0, c.workers, 64, []*elements.Output{out}, &elements.Stats{}, packet.NewPool(8), perWorker{dev}, nil)
		ctx.FlowState = c.state
		el, err := typ.New(&FromConfig{Device: "lan", Spread: c.spread}, ctx)
		if err != nil {
			t.Fatal(err)
		}
		if got := el.(*FromDevice).sp != nil; got != c.want {
			t.Errorf("%d queues, %d workers, affine %v, flow state %v, spread %s: spreading %v, want %v",
				c.queues, c.workers, c.affine, c.state, c.spread, got, c.want)
		}
	}
}
