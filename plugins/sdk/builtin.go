package sdk

import (
	"errors"
	"fmt"
	"unsafe"

	"github.com/junction-dataplane/junction/drivers"
	"github.com/junction-dataplane/junction/elements"
	"github.com/junction-dataplane/junction/packet"
	"github.com/junction-dataplane/junction/plugins/internal/wire"
)

// Builtin serves a Junction element type registered in the plugin process
// (import its package, e.g. elements/ip) as a plugin element of the same
// name, with the same keys and outputs. The packets it processes are the
// shared slots themselves (a packet pool is laid over the region), so
// nothing is copied on the plugin side.
//
// It is how an existing element is moved out of process for isolation, and
// how the SDK is tested against the built-ins (same bytes out). It supports
// elements that send or drop the packets they are given; an element that
// creates packets (Tee, ICMPError) or holds them (ARPQuerier) cannot hand
// those back: created packets are freed and counted as "created" drops,
// held ones are reported as dropped.
func Builtin(typeName string) Element {
	t, ok := elements.Lookup(typeName)
	if !ok {
		panic("sdk: Builtin: no element type " + typeName + " registered in this plugin")
	}
	e := Element{
		Name:    t.Name,
		Doc:     t.Doc,
		Outputs: max(t.Out, 1),
		Reasons: []string{"dropped inside the plugin"},
		New: func(cfg any) (Processor, error) {
			return &builtin{t: t, cfg: cfg}, nil
		},
	}
	if t.NewConfig != nil {
		e.NewConfig = t.NewConfig
	}
	e.Ports = func(cfg any) int {
		_, out := t.Ports(cfg)
		return out
	}
	return e
}

type builtin struct {
	t    *elements.Type
	cfg  any
	el   elements.Element
	pool *packet.Pool
	base uintptr
	pkts [wire.MaxBatch]*packet.Packet // by slot
	b    *packet.Batch
	port [wire.MaxBatch]int // port each slot went to; -1 dropped
	recs []portRecorder
}

type portRecorder struct {
	a    *builtin
	port int
}

func (r *portRecorder) Push(_ int, b *packet.Batch) {
	for _, p := range b.Pkts {
		i := r.a.slotOf(p)
		if i < 0 {
			p.Free() // a packet the element created: it cannot leave the plugin
			continue
		}
		r.a.port[i] = r.port
	}
}

func (a *builtin) slotOf(p *packet.Packet) int {
	buf := p.Buffer()
	if p.Pool() != a.pool || len(buf) == 0 {
		return -1
	}
	return int((uintptr(unsafe.Pointer(&buf[0])) - a.base) / wire.SlotSize)
}

type noDevices struct{}

func (noDevices) Device(string) (drivers.Device, int, bool) { return nil, 0, false }
func (noDevices) Queues(string, int) []int                  { return nil }

func (a *builtin) bindSlots(mem []byte) error {
	if len(mem) < wire.MaxBatch*wire.SlotSize {
		return errors.New("sdk: slot memory too small")
	}
	a.pool = packet.NewPoolFrom(mem, wire.MaxBatch)
	a.base = uintptr(unsafe.Pointer(&mem[0]))
	for a.pool.Available() > 0 {
		p := a.pool.Get()
		a.pkts[a.slotOf(p)] = p
	}
	_, nout := a.t.Ports(a.cfg)
	clock := elements.NewClock(1 << 30)
	st := &elements.Stats{}
	outs := make([]*elements.Output, nout)
	a.recs = make([]portRecorder, nout)
	for i := range outs {
		a.recs[i] = portRecorder{a: a, port: i}
		outs[i] = elements.NewOutput(clock)
		outs[i].Connect(&a.recs[i], 0, &elements.Stats{})
	}
	ctx := elements.NewContext(a.t.Name, 0, 1, wire.MaxBatch, outs, st, packet.NewPool(wire.MaxBatch), noDevices{}, nil)
	el, err := a.t.New(a.cfg, ctx)
	if err != nil {
		return fmt.Errorf("%s: %w", a.t.Name, err)
	}
	a.el = el
	a.b = packet.NewBatch(wire.MaxBatch)
	return nil
}

// Process runs the built-in element over the slots in place.
func (a *builtin) Process(b *Batch) {
	a.b.Reset()
	for i := range b.Pkts {
		sp := &b.Pkts[i]
		p := a.pkts[i]
		buf := p.Buffer()
		off := int(uintptr(unsafe.Pointer(sp.home)) - uintptr(unsafe.Pointer(&buf[0])))
		p.Data = buf[off : off+len(sp.Data)]
		p.InDevice, p.InQueue, p.L3, p.FlowHash = sp.InDevice, sp.InQueue, sp.L3, sp.FlowHash
		a.port[i] = -1
		a.b.Add(p)
	}
	a.el.Push(b.In, a.b)
	a.b.Reset()
	for i := range b.Pkts {
		sp := &b.Pkts[i]
		if a.port[i] < 0 {
			// Dropped (freed back into the pool) or held: take every
			// free slot packet back so that the next batch has it.
			sp.DropReason(0)
			continue
		}
		sp.Send(a.port[i])
		p := a.pkts[i]
		sp.Data = sp.Data[:0]
		if len(p.Data) > 0 {
			sp.Data = unsafe.Slice(unsafe.SliceData(p.Data), len(p.Data))
		}
	}
	for a.pool.Available() > 0 {
		p := a.pool.Get()
		a.pkts[a.slotOf(p)] = p
	}
}
