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
}

func (d *seqDev) RxQueues() int { return 1 }
func (d *seqDev) Receive(q int, b *packet.Batch) int {
	n := 0
	for !b.Full() && d.sent < d.count {
		p := d.pool.Get()
		if p == nil {
			break
		}
		p.SetFrame(d.frames[d.sent%len(d.frames)])
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

// Two workers polling concurrently (run with -race): all delivered or
// counted, nothing leaked, flows kept together.
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
	if uint64(c0+c1)+drops != count {
		t.Fatalf("delivered %d+%d, dropped %d: want %d in all", c0, c1, drops, count)
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

// A receiver that does not poll: the sender drops and counts, never blocks,
// and every buffer is accounted for.
func TestSpreadFull(t *testing.T) {
	r := newRig(t, 2, flowFrames(64), 5000)
	for i := 0; i < 200; i++ {
		r.srcs[0].Poll()
	}
	if counter(r.stats[0], "spread full") == 0 {
		t.Fatalf("no drop counted with a stalled receiver")
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
