package elementtest

import (
	"net/netip"
	"testing"

	"github.com/junction-dataplane/junction/drivers"
	"github.com/junction-dataplane/junction/elements"
	"github.com/junction-dataplane/junction/packet"
)

// Recorder is an Element that keeps everything pushed to it.
type Recorder struct {
	Pkts []*packet.Packet
}

// Push keeps the packets (the harness frees them in Reset or at cleanup).
func (r *Recorder) Push(in int, b *packet.Batch) {
	r.Pkts = append(r.Pkts, b.Pkts...)
}

// Frames returns copies of the recorded frames.
func (r *Recorder) Frames() [][]byte {
	out := make([][]byte, len(r.Pkts))
	for i, p := range r.Pkts {
		out[i] = append([]byte(nil), p.Data...)
	}
	return out
}

// Reset frees the recorded packets.
func (r *Recorder) Reset() {
	for _, p := range r.Pkts {
		p.Free()
	}
	r.Pkts = r.Pkts[:0]
}

// Sink is an Element that frees and counts everything pushed to it.
type Sink struct {
	Count int
}

// Push frees the batch's packets.
func (s *Sink) Push(in int, b *packet.Batch) {
	s.Count += len(b.Pkts)
	for _, p := range b.Pkts {
		p.Free()
	}
}

// Harness is one element instance wired to recorders.
type Harness struct {
	T       testing.TB
	Type    *elements.Type
	Element elements.Element
	Stats   *elements.Stats
	Outs    []*Recorder
	Sinks   []*Sink // with Options.Sink
	Outputs []*elements.Output
	Pool    *packet.Pool
	Clock   *elements.Clock
	// Context is what the element was built with; its State holds what
	// the element shares with the graph (flowsteer.Of(h.Context), ...).
	Context *elements.Context
	batch   *packet.Batch
}

// Options tune New.
type Options struct {
	Worker, Workers int
	Batch           int
	PoolSize        int
	Devices         elements.DeviceSet
	// Unconnected lists output ports left unconnected (they must be
	// optional for the type).
	Unconnected []int
	// Sink connects every output to a Sink (which frees and counts)
	// instead of a Recorder: for benchmarks and allocation tests.
	Sink bool
	// State is the graph state the element shares with others built on
	// the same one (nil: its own, a graph of one element).
	State *elements.GraphState
}

// New builds typeName with cfg (a pointer to the type's config struct, or
// nil for the defaults; Validate is called if the config has it).
func New(t testing.TB, typeName string, cfg any, o *Options) *Harness {
	t.Helper()
	if o == nil {
		o = &Options{}
	}
	if o.Workers == 0 {
		o.Workers = 1
	}
	if o.Batch == 0 {
		o.Batch = packet.DefaultBatch
	}
	if o.PoolSize == 0 {
		o.PoolSize = 4 * o.Batch
	}
	typ, ok := elements.Lookup(typeName)
	if !ok {
		t.Fatalf("element type %q not registered", typeName)
	}
	if cfg == nil && typ.NewConfig != nil {
		cfg = typ.NewConfig()
	}
	if v, ok := cfg.(elements.Validator); ok {
		if err := v.Validate(); err != nil {
			t.Fatalf("%s config: %v", typeName, err)
		}
	}
	_, nout := typ.Ports(cfg)
	h := &Harness{T: t, Type: typ, Stats: &elements.Stats{}, Pool: packet.NewPool(o.PoolSize),
		Clock: &elements.Clock{}, batch: packet.NewBatch(o.Batch)}
	for i := 0; i < nout; i++ {
		out := elements.NewOutput(h.Clock)
		rec := &Recorder{}
		h.Outputs = append(h.Outputs, out)
		h.Outs = append(h.Outs, rec)
		unconnected := false
		for _, u := range o.Unconnected {
			unconnected = unconnected || u == i
		}
		if unconnected {
			if !typ.IsOptional(i) {
				t.Fatalf("%s output %d is not optional", typeName, i)
			}
			out.SetUnconnected(h.Stats, h.Stats.Reason(elements.UnconnectedReason(i)))
		} else if o.Sink {
			s := &Sink{}
			h.Sinks = append(h.Sinks, s)
			out.Connect(s, 0, &elements.Stats{})
		} else {
			out.Connect(rec, 0, &elements.Stats{})
		}
	}
	devs := o.Devices
	if devs == nil {
		devs = noDevices{}
	}
	ctx := elements.NewContext(typeName, o.Worker, o.Workers, o.Batch, h.Outputs, h.Stats, h.Pool, devs, nil)
	ctx.State = o.State
	h.Context = ctx
	el, err := typ.New(cfg, ctx)
	if err != nil {
		t.Fatalf("%s: New: %v", typeName, err)
	}
	h.Element = el
	t.Cleanup(func() {
		if c, ok := el.(elements.Closer); ok {
			c.Close()
		}
		for _, r := range h.Outs {
			r.Reset()
		}
	})
	return h
}

// Packet makes a packet from the harness pool holding frame (L3 at 14).
func (h *Harness) Packet(frame []byte) *packet.Packet {
	p := h.Pool.Get()
	if p == nil {
		h.T.Fatalf("harness pool empty")
	}
	if !p.SetFrame(frame) {
		h.T.Fatalf("frame of %d bytes does not fit", len(frame))
	}
	return p
}

// Push sends the frames as one batch to input port in.
func (h *Harness) Push(in int, frames ...[]byte) {
	b := h.batch
	b.Reset()
	for _, f := range frames {
		b.Add(h.Packet(f))
	}
	h.Element.Push(in, b)
	b.Reset()
}

// PushBatch pushes prepared packets as one batch.
func (h *Harness) PushBatch(in int, pkts ...*packet.Packet) {
	b := h.batch
	b.Reset()
	for _, p := range pkts {
		b.Add(p)
	}
	h.Element.Push(in, b)
	b.Reset()
}

// Counter returns the value of a named counter (drop reason or other).
func (h *Harness) Counter(name string) uint64 {
	for _, c := range h.Stats.Counters() {
		if c.Name == name {
			return c.Value
		}
	}
	return 0
}

// Reset frees everything the recorders hold.
func (h *Harness) Reset() {
	for _, r := range h.Outs {
		r.Reset()
	}
}

// CheckNoLeak fails the test if any pool packet is neither recorded nor
// free (i.e. an element lost one).
func (h *Harness) CheckNoLeak() {
	h.T.Helper()
	held := 0
	for _, r := range h.Outs {
		held += len(r.Pkts)
	}
	if out := h.Pool.Outstanding(); out != held {
		h.T.Errorf("leak: %d packets outstanding, %d recorded", out, held)
	}
}

type noDevices struct{}

func (noDevices) Device(string) (drivers.Device, int, bool) { return nil, 0, false }
func (noDevices) Queues(string, int) []int                  { return nil }

// Bench runs the element in a benchmark loop: each iteration fills one batch
// of b.Batch packets from the pool with the given frames (cycled), pushes it,
// and lets the sinks free the output. It reports ns/packet and
// allocs/packet. The per-iteration refill (a copy of each frame into its
// buffer, as a driver's receive would do) is included in the time;
// benchmark a pass-through element (e.g. Counter) for that baseline. The
// harness must be built with
// Options.Sink.
func (h *Harness) Bench(b *testing.B, frames ...[]byte) {
	b.Helper()
	batch := h.batch
	n := batch.Cap()
	b.ReportAllocs()
	b.ResetTimer()
	pkts := 0
	for b.Loop() {
		batch.Reset()
		for i := 0; i < n; i++ {
			p := h.Pool.Get()
			if p == nil {
				break // an element holding packets: count what we could send
			}
			p.SetFrame(frames[i%len(frames)])
			batch.Add(p)
		}
		pkts += batch.Len()
		h.Element.Push(0, batch)
	}
	b.StopTimer()
	if pkts > 0 {
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(pkts), "ns/pkt")
	}
	batch.Reset()
}

// AllocsPerBatch returns the average allocations of one Push of a full
// batch of frames (for testing.AllocsPerRun == 0 checks). Build the
// harness with Options.Sink.
func (h *Harness) AllocsPerBatch(runs int, frames ...[]byte) float64 {
	batch := h.batch
	return testing.AllocsPerRun(runs, func() {
		batch.Reset()
		for i := 0; i < batch.Cap(); i++ {
			p := h.Pool.Get()
			if p == nil {
				break
			}
			p.SetFrame(frames[i%len(frames)])
			batch.Add(p)
		}
		h.Element.Push(0, batch)
		batch.Reset()
	})
}

// Device is just enough of a drivers.Device to give an Info.
type Device struct {
	drivers.Device
	DevInfo drivers.Info
}

// Info returns DevInfo.
func (d Device) Info() drivers.Info { return d.DevInfo }

// Devices is an elements.DeviceSet of the devices by name, none with RX
// queues.
type Devices map[string]drivers.Device

// Device returns the device called name.
func (s Devices) Device(name string) (drivers.Device, int, bool) { d, ok := s[name]; return d, 0, ok }

// Queues returns none.
func (s Devices) Queues(string, int) []int { return nil }

// PushVia pushes frames as one batch on input in, each with the next-hop
// annotation nh (none when nh is "").
func (h *Harness) PushVia(in int, nh string, frames ...[]byte) {
	h.T.Helper()
	var pk []*packet.Packet
	for _, f := range frames {
		p := h.Packet(f)
		if nh != "" {
			p.NextHop = netip.MustParseAddr(nh)
		}
		pk = append(pk, p)
	}
	h.PushBatch(in, pk...)
}
