package pipeline

// Fake element types and a fake driver for the runtime tests. Every name
// starts with "TestRt" so that it can never collide with a real element or
// with the loader's test types ("TestLd...").

import (
	"errors"
	"sync/atomic"

	"github.com/junction-dataplane/junction/drivers"
	"github.com/junction-dataplane/junction/elements"
	"github.com/junction-dataplane/junction/packet"
)

// Global event counters of the fakes; tests reset them (they do not run in
// parallel).
var (
	rtTicks    atomic.Int64
	rtCloses   atomic.Int64
	rtBuilt    atomic.Int64
	rtDevOpen  atomic.Int64
	rtDevClose atomic.Int64
	rtDevFlush atomic.Int64
	rtLeaked   atomic.Int64 // device pool packets outstanding at Close
)

func resetRtCounters() {
	for _, c := range []*atomic.Int64{&rtTicks, &rtCloses, &rtBuilt, &rtDevOpen, &rtDevClose, &rtDevFlush, &rtLeaked} {
		c.Store(0)
	}
}

// ---- fake driver ----

type rtDevConfig struct {
	Count  int  `toml:"count"`  // packets per queue; 0 = endless
	Queues int  `toml:"queues"` // RX queues
	Fail   bool `toml:"fail"`   // Open fails
	// TxDropEvery makes Transmit drop (free and count) every n-th packet.
	TxDropEvery int `toml:"tx_drop_every"`
}

type rtQueue struct {
	pool    *packet.Pool
	left    int
	endless bool
	seq     uint64
	rx      atomic.Uint64
}

type rtDevice struct {
	name    string
	queues  []*rtQueue
	dropN   int
	tx      []atomic.Uint64 // per worker
	txDrops []atomic.Uint64
	txSeen  []uint64 // per worker, only that worker touches its slot
}

func (d *rtDevice) RxQueues() int { return len(d.queues) }

func (d *rtDevice) Receive(q int, b *packet.Batch) int {
	rq := d.queues[q]
	n := 0
	for !b.Full() && (rq.endless || rq.left > 0) {
		p := rq.pool.Get()
		if p == nil {
			break
		}
		p.SetLen(64)
		s := rq.seq
		rq.seq++
		for i := range p.Data {
			p.Data[i] = byte(s) + byte(i)
		}
		p.Data[1] = byte(s)
		p.InQueue = uint16(q)
		b.Add(p)
		n++
		if !rq.endless {
			rq.left--
		}
	}
	rq.rx.Add(uint64(n))
	return n
}

func (d *rtDevice) Drained(q int) bool { return !d.queues[q].endless && d.queues[q].left == 0 }

func (d *rtDevice) Transmit(w int, b *packet.Batch) {
	var sent, dropped uint64
	for _, p := range b.Pkts {
		d.txSeen[w]++
		if d.dropN > 0 && d.txSeen[w]%uint64(d.dropN) == 0 {
			dropped++
		} else {
			sent++
		}
		p.Free()
	}
	b.Reset()
	d.tx[w].Add(sent)
	d.txDrops[w].Add(dropped)
}

func (d *rtDevice) Flush() error { rtDevFlush.Add(1); return nil }

func (d *rtDevice) Close() error {
	rtDevClose.Add(1)
	for _, q := range d.queues {
		rtLeaked.Add(int64(q.pool.Outstanding()))
	}
	return nil
}

func (d *rtDevice) Info() drivers.Info { return drivers.Info{Name: d.name, Driver: "TestRtDrv"} }

func (d *rtDevice) Stats() []drivers.Counter {
	var rx, tx, drops uint64
	for _, q := range d.queues {
		rx += q.rx.Load()
	}
	for i := range d.tx {
		tx += d.tx[i].Load()
		drops += d.txDrops[i].Load()
	}
	return []drivers.Counter{{Name: "rx", Value: rx}, {Name: "tx", Value: tx}, {Name: "tx drops", Value: drops}}
}

// ---- fake elements ----

// rtFrom is a FromDevice: it polls the device queues its worker owns.
type rtFrom struct {
	dev    drivers.Device
	queues []int
	next   int
	b      *packet.Batch
	out    *elements.Output
}

type rtDevKey struct {
	Device string `toml:"device"`
}

func (e *rtFrom) Push(int, *packet.Batch) {}

func (e *rtFrom) Poll() int {
	for range e.queues {
		q := e.queues[e.next]
		e.next++
		if e.next == len(e.queues) {
			e.next = 0
		}
		if n := e.dev.Receive(q, e.b); n > 0 {
			e.out.Push(e.b)
			return n
		}
	}
	return 0
}

func (e *rtFrom) Drained() bool {
	for _, q := range e.queues {
		if !e.dev.Drained(q) {
			return false
		}
	}
	return true
}

// rtTo transmits on its device.
type rtTo struct {
	dev    drivers.Device
	worker int
}

func (e *rtTo) Push(_ int, b *packet.Batch) { e.dev.Transmit(e.worker, b) }

// rtWork does some per-packet work, sends packets whose byte 1 is a
// multiple of 4 to output 1 (optional), clones every CloneEvery-th packet
// (from the worker's element pool) to output 0, ticks and closes.
type rtWork struct {
	b0, b1     *packet.Batch
	out        []*elements.Output
	pool       *packet.Pool
	cloneEvery int
	seen       int
	clones     *atomic.Uint64
	sum        byte
	closed     bool
}

type rtWorkConfig struct {
	CloneEvery int `toml:"clone_every"`
	// FailOn makes the constructor fail on this worker (-1: never; the
	// default of NewConfig).
	FailOn int `toml:"fail_on"`
}

func (e *rtWork) Push(_ int, b *packet.Batch) {
	for _, p := range b.Pkts {
		// Work worth measuring: a pass over the frame.
		s := e.sum
		for _, c := range p.Data {
			s = s*31 + c
		}
		e.sum = s
		e.seen++
		if len(p.Data) > 1 && p.Data[1]&3 == 0 {
			e.b1.Add(p)
		} else {
			e.b0.Add(p)
		}
		if e.cloneEvery > 0 && e.seen%e.cloneEvery == 0 && !e.b0.Full() {
			if q := p.Clone(e.pool); q != nil {
				e.b0.Add(q)
				e.clones.Add(1)
			}
		}
	}
	e.out[0].Push(e.b0)
	e.out[1].Push(e.b1)
}

func (e *rtWork) Tick(int64) { rtTicks.Add(1) }

func (e *rtWork) Close() error {
	if e.closed {
		return errors.New("closed twice")
	}
	e.closed = true
	rtCloses.Add(1)
	return nil
}

// rtDrop drops everything with a named reason.
type rtDrop struct {
	st *elements.Stats
	r  elements.Reason
}

func (e *rtDrop) Push(_ int, b *packet.Batch) { e.st.DropBatch(b, e.r) }

func init() {
	drivers.Register(drivers.Driver{
		Name:      "TestRtDrv",
		NewConfig: func() any { return &rtDevConfig{Queues: 1} },
		Open: func(cfg any, ctx drivers.OpenContext) (drivers.Device, error) {
			c := cfg.(*rtDevConfig)
			if c.Fail {
				return nil, errors.New("cannot open (test)")
			}
			rtDevOpen.Add(1)
			d := &rtDevice{name: ctx.Name, dropN: c.TxDropEvery,
				tx: make([]atomic.Uint64, ctx.Workers), txDrops: make([]atomic.Uint64, ctx.Workers),
				txSeen: make([]uint64, ctx.Workers)}
			for q := 0; q < c.Queues; q++ {
				d.queues = append(d.queues, &rtQueue{pool: packet.NewPool(4 * ctx.Batch), left: c.Count, endless: c.Count == 0})
			}
			return d, nil
		},
	})
	deviceKey := []elements.Key{{Name: "device", Type: "device", Required: true}}
	elements.Register(elements.Type{
		Name: "TestRtFrom", In: 0, Out: 1, Source: true,
		NewConfig: func() any { return &rtDevKey{} },
		New: func(cfg any, ctx *elements.Context) (elements.Element, error) {
			name := cfg.(*rtDevKey).Device
			dev, _, ok := ctx.Devices.Device(name)
			if !ok {
				return nil, errors.New("no device " + name)
			}
			return &rtFrom{dev: dev, queues: ctx.Devices.Queues(name, ctx.Worker), b: packet.NewBatch(ctx.Batch), out: ctx.Outputs[0]}, nil
		},
		Doc: elements.Doc{Synopsis: "TestRtFrom(device)", Summary: "test source", Keys: deviceKey},
	})
	elements.Register(elements.Type{
		Name: "TestRtTo", In: 1, Out: 0,
		NewConfig: func() any { return &rtDevKey{} },
		New: func(cfg any, ctx *elements.Context) (elements.Element, error) {
			name := cfg.(*rtDevKey).Device
			dev, _, ok := ctx.Devices.Device(name)
			if !ok {
				return nil, errors.New("no device " + name)
			}
			return &rtTo{dev: dev, worker: ctx.Worker}, nil
		},
		Doc: elements.Doc{Synopsis: "TestRtTo(device)", Summary: "test sink", Keys: deviceKey},
	})
	elements.Register(elements.Type{
		Name: "TestRtWork", In: 1, Out: 2, Optional: []int{1},
		NewConfig: func() any { return &rtWorkConfig{FailOn: -1} },
		New: func(cfg any, ctx *elements.Context) (elements.Element, error) {
			c := cfg.(*rtWorkConfig)
			if c.FailOn == ctx.Worker {
				return nil, errors.New("constructor fails (test)")
			}
			rtBuilt.Add(1)
			return &rtWork{b0: packet.NewBatch(2 * ctx.Batch), b1: packet.NewBatch(ctx.Batch), out: ctx.Outputs,
				pool: ctx.Pool, cloneEvery: c.CloneEvery, clones: ctx.Stats.Counter("clones")}, nil
		},
		Doc: elements.Doc{Synopsis: "TestRtWork", Summary: "test worker"},
	})
	elements.Register(elements.Type{
		Name: "TestRtDrop", In: 1, Out: 0,
		New: func(cfg any, ctx *elements.Context) (elements.Element, error) {
			return &rtDrop{st: ctx.Stats, r: ctx.Stats.Reason("testrt discard")}, nil
		},
		Doc: elements.Doc{Synopsis: "TestRtDrop", Summary: "test discard"},
	})
	elements.Register(elements.Type{
		Name: "TestRtConsume", In: 1, Out: 0,
		New: func(cfg any, ctx *elements.Context) (elements.Element, error) {
			return &rtDrop{st: ctx.Stats, r: ctx.Stats.Consumption("testrt consumed")}, nil
		},
		Doc: elements.Doc{Synopsis: "TestRtConsume", Summary: "test discard, consumed by design"},
	})
}

// rtHold passes packets on, but holds every other batch back (up to
// holdBatches) until its next Tick: a good share of the packets reach the
// elements after it from a tick, as ARPQuerier's released packets do.
type rtHold struct {
	held []*packet.Batch
	n    int // batches held
	out  *elements.Output
	odd  bool
}

const holdBatches = 32

func (e *rtHold) Push(_ int, b *packet.Batch) {
	if e.odd = !e.odd; e.odd || e.n == len(e.held) {
		e.out.Push(b)
		return
	}
	h := e.held[e.n]
	for _, p := range b.Pkts {
		h.Add(p)
	}
	b.Reset()
	e.n++
}

func (e *rtHold) Tick(int64) {
	for _, h := range e.held[:e.n] {
		e.out.Push(h)
	}
	e.n = 0
}

func (e *rtHold) Close() error {
	for _, h := range e.held {
		h.FreeAll()
	}
	return nil
}

func init() {
	elements.Register(elements.Type{
		Name: "TestRtHold", In: 1, Out: 1,
		New: func(cfg any, ctx *elements.Context) (elements.Element, error) {
			h := &rtHold{out: ctx.Outputs[0]}
			for range holdBatches {
				h.held = append(h.held, packet.NewBatch(ctx.Batch))
			}
			return h, nil
		},
		Doc: elements.Doc{Synopsis: "TestRtHold", Summary: "test: releases held batches in Tick"},
	})
}

var (
	_ elements.Ticker = (*rtHold)(nil)
	_ elements.Source = (*rtFrom)(nil)
	_ elements.Ticker = (*rtWork)(nil)
	_ elements.Closer = (*rtWork)(nil)
	_ drivers.Device  = (*rtDevice)(nil)
)
