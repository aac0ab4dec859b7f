package pipeline

import (
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/junction-dataplane/junction/drivers"
	"github.com/junction-dataplane/junction/elements"
	"github.com/junction-dataplane/junction/packet"
	"github.com/junction-dataplane/junction/pipeline/graphfile"
)

// ElementPoolSize is the size of each worker's pool for packets that
// elements create (ARP requests, Tee copies, ICMP errors): a few batches per
// element is plenty, since such packets leave the graph within the batch that
// made them (or are held in small, bounded queues).
const ElementPoolSize = 1024

// Options tune Start. The zero value runs the graph as written.
type Options struct {
	// Workers overrides the graph's worker count (0: the graph's; 0 there:
	// one per CPU).
	Workers int
	// NoPin leaves worker threads unpinned. By default each worker's
	// thread is pinned to one CPU.
	NoPin bool
	// CPUs lists the CPUs workers are pinned to: worker i on
	// CPUs[i%len(CPUs)] (VPP's corelist-workers). Empty: the CPUs the
	// process may run on, in order.
	CPUs []int
	// Log receives warnings (a failed pin); nil discards them.
	Log io.Writer
	// Duration stops the router after this long (0: until every source is
	// drained or Stop is called).
	Duration time.Duration
	// TimingEvery times the elements of one poll round in this many (0:
	// elements.DefaultTimingEvery; 1: every round). Batches, packets and
	// drops are always counted exactly; only the nanoseconds are sampled.
	TimingEvery int
	// CheckReload, when set, is called with every graph a reload loads,
	// after it is validated and before anything is opened or built: an
	// error refuses the reload (the forwarder refuses more pinned workers
	// than CPUs there as at start).
	CheckReload func(g *Graph) error
}

// Router is a started graph: the devices, one pipeline per worker and the
// accounting of both.
type Router struct {
	g       *Graph
	workers []*worker
	devices []drivers.Device // by graph device index
	log     io.Writer
	start   time.Time
	batch   int
	// state is what the graph's elements share (elements.GraphState):
	// one per Router, kept by a reload (the new graph's elements find
	// what the old one's left per worker: the flow tables), so two
	// Routers never share it.
	state *elements.GraphState

	stop   atomic.Bool
	done   chan struct{}
	once   sync.Once // closes the router once
	err    error     // what closing reported
	timer  *time.Timer
	closed []func() error // extra things to close (the stats server)
	mu     sync.Mutex     // guards closed and isClosed
	// isClosed: closeAll has run; what registers later is closed at once.
	isClosed bool
	// tracer arms traces and captures (inspect.go).
	tracer elements.Tracer

	// Reloads (reload.go). reloadMu admits one reload at a time, and the
	// final close waits for a reload in progress. genMu guards g, devices
	// and the workers' stats slices, which a reload replaces while
	// Snapshot reads them. shared holds the running graph's shared slots
	// by element index; timing the TimingEvery the workers were built with.
	reloadMu sync.Mutex
	genMu    sync.RWMutex
	gen      GraphGeneration
	shared   []*elements.SharedSlot
	timing   int
	// optWorkers is Options.Workers (a reload resolves its graph's
	// workers the same way).
	optWorkers int
	// roundWorkers is workers for Round (a router from Build): loaded
	// without a lock, replaced by a reload that changes the count.
	roundWorkers atomic.Pointer[[]*worker]
	// checkReload is Options.CheckReload.
	checkReload func(g *Graph) error

	// Worker goroutines (run, and those a reload starts): the CPUs they
	// are pinned to, how many are running (under runMu) and, closed when
	// the last one exits, allOut. A router from Build has none.
	cpus    []int
	noPin   bool
	runMu   sync.Mutex
	running int
	allOut  chan struct{}
	// housekept is set by Housekeep: a reload that changes the number
	// of workers confines the other threads again (rehousekeep).
	housekept atomic.Bool
}

// resolveWorkers is the number of workers for g: the override, else the
// graph's, else one per CPU.
func resolveWorkers(override int, g *Graph) int {
	n := override
	if n <= 0 {
		n = g.Workers
	}
	if n <= 0 {
		n = runtime.NumCPU()
	}
	return n
}

// resolveBatch is g's batch size (its default when unset).
func resolveBatch(g *Graph) int {
	if g.Batch <= 0 {
		return packet.DefaultBatch
	}
	return g.Batch
}

// Start opens the graph's devices, builds one pipeline per worker and starts
// the workers. On any error everything opened or built so far is closed and
// the error names the device or element (with its position in the file).
func Start(g *Graph, o Options) (*Router, error) {
	r, err := build(g, o)
	if err != nil {
		return nil, err
	}
	r.run(o)
	return r, nil
}

// build opens devices and instantiates the pipelines without starting any
// goroutine (tests drive workers by hand).
func build(g *Graph, o Options) (_ *Router, err error) {
	n := resolveWorkers(o.Workers, g)
	// What forwarder check checks, before anything is opened.
	if err := CheckEnv(g, n); err != nil {
		return nil, err
	}
	batch := resolveBatch(g)
	log := o.Log
	if log == nil {
		log = io.Discard
	}
	// A rate limit beyond the links it is fed by (forwarder check says
	// the same).
	for _, w := range graphfile.LinkRateWarnings(g) {
		fmt.Fprintf(log, "warning: %v\n", w)
	}
	r := &Router{g: g, log: log, batch: batch, done: make(chan struct{}), state: elements.NewGraphState(),
		gen: GraphGeneration{Generation: 1, File: g.File, LoadedAt: time.Now()}}
	defer func() {
		if err != nil {
			r.closeAll()
		}
	}()

	// Devices: opened once, shared by every worker.
	r.devices = make([]drivers.Device, len(g.Devices))
	for i := range g.Devices {
		if r.devices[i], err = openDevice(g, i, n, batch, r.log); err != nil {
			return r, err
		}
	}

	plan, err := planGraph(g)
	if err != nil {
		return r, err
	}
	shared := sharedSlots(len(g.Elements))
	devs := &deviceSet{g: g, devs: r.devices, workers: n}
	timing := o.TimingEvery
	if timing <= 0 {
		timing = elements.DefaultTimingEvery
	}
	r.shared, r.timing, r.optWorkers = shared, timing, o.Workers
	r.checkReload = o.CheckReload
	for w := 0; w < n; w++ {
		wk, err := newWorker(r, g, w, n, plan, shared, devs, timing, nil)
		if wk != nil {
			wk.pubInst = wk.inst
			r.workers = append(r.workers, wk)
		}
		if err != nil {
			return r, err
		}
	}
	return r, nil
}

// openDevice opens g's device i for n workers: the one path by which both
// the first start and a reload open a device.
func openDevice(g *Graph, i, n, batch int, log io.Writer) (drivers.Device, error) {
	d := g.Devices[i]
	if d.Driver == nil || d.Driver.Open == nil {
		return nil, fmt.Errorf("%s: device %q: no driver", d.Pos, d.Name)
	}
	base := "."
	if g.File != "" {
		base = filepath.Dir(g.File)
	}
	dev, err := d.Driver.Open(d.Config, drivers.OpenContext{
		Name: d.Name, Index: i, Workers: n, Batch: batch, BaseDir: base,
		Addresses: d.Addresses, MAC: d.MAC, Log: log,
	})
	if err != nil {
		return nil, fmt.Errorf("%s: device %q (driver %s): %w", d.Pos, d.Name, d.Driver.Name, err)
	}
	if dev == nil {
		return nil, fmt.Errorf("%s: device %q (driver %s): Open returned no device", d.Pos, d.Name, d.Driver.Name)
	}
	return dev, nil
}

// sharedSlots returns one SharedSlot per element of a graph.
func sharedSlots(n int) []*elements.SharedSlot {
	s := make([]*elements.SharedSlot, n)
	for i := range s {
		s[i] = &elements.SharedSlot{}
	}
	return s
}

// plan is the graph reduced to indices: construction order and, per element,
// where each output port goes.
type plan struct {
	order []int       // element indices, sinks first
	outs  [][]portRef // [element][out port] → target (el = -1: unconnected)
}

type portRef struct{ el, port int }

func planGraph(g *Graph) (*plan, error) {
	idx := make(map[string]int, len(g.Elements))
	for i, e := range g.Elements {
		idx[e.Name] = i
	}
	p := &plan{outs: make([][]portRef, len(g.Elements))}
	for i, e := range g.Elements {
		p.outs[i] = make([]portRef, e.Out)
		for j := range p.outs[i] {
			p.outs[i][j] = portRef{-1, 0}
		}
	}
	for _, l := range g.Links {
		from, ok1 := idx[l.From]
		to, ok2 := idx[l.To]
		if !ok1 || !ok2 {
			return nil, fmt.Errorf("%s: link %s -> %s: unknown element", l.Pos, l.From, l.To)
		}
		if l.FromPort < 0 || l.FromPort >= len(p.outs[from]) || l.ToPort < 0 || l.ToPort >= g.Elements[to].In {
			return nil, fmt.Errorf("%s: link %s[%d] -> [%d]%s: port out of range", l.Pos, l.From, l.FromPort, l.ToPort, l.To)
		}
		if p.outs[from][l.FromPort].el >= 0 {
			return nil, fmt.Errorf("%s: output %s[%d] is connected twice", l.Pos, l.From, l.FromPort)
		}
		p.outs[from][l.FromPort] = portRef{to, l.ToPort}
	}
	for i, e := range g.Elements {
		for j, t := range p.outs[i] {
			if t.el < 0 && (e.Type == nil || !e.Type.IsOptional(j)) {
				return nil, fmt.Errorf("%s: element %q: output %d is not connected", e.Pos, e.Name, j)
			}
		}
	}
	// Reverse topological order (Kahn on out-degrees): an element is built
	// after everything it pushes to, so its outputs are bound before its
	// constructor runs. Elements on a cycle (which only an element that
	// breaks cycles may close) come last and are bound afterwards.
	outdeg := make([]int, len(g.Elements))
	preds := make([][]int, len(g.Elements))
	for i := range p.outs {
		for _, t := range p.outs[i] {
			if t.el >= 0 {
				outdeg[i]++
				preds[t.el] = append(preds[t.el], i)
			}
		}
	}
	done := make([]bool, len(g.Elements))
	var queue []int
	for i := range outdeg {
		if outdeg[i] == 0 {
			queue = append(queue, i)
		}
	}
	for len(queue) > 0 {
		i := queue[0]
		queue = queue[1:]
		done[i] = true
		p.order = append(p.order, i)
		for _, q := range preds[i] {
			if outdeg[q]--; outdeg[q] == 0 {
				queue = append(queue, q)
			}
		}
	}
	for i := range done {
		if !done[i] {
			p.order = append(p.order, i)
		}
	}
	return p, nil
}

// deviceSet is the elements' view of the router's devices.
type deviceSet struct {
	g       *Graph
	devs    []drivers.Device
	workers int
}

func (s *deviceSet) Device(name string) (drivers.Device, int, bool) {
	d := s.g.Device(name)
	if d == nil || d.Index < 0 || d.Index >= len(s.devs) {
		return nil, 0, false
	}
	return s.devs[d.Index], d.Index, true
}

// DeviceNames lists the graph's devices in declaration order
// (elements.DeviceLister).
func (s *deviceSet) DeviceNames() []string {
	names := make([]string, len(s.g.Devices))
	for i, d := range s.g.Devices {
		names[i] = d.Name
	}
	return names
}

// Queues returns the RX queues of the device that worker serves: queue q
// belongs to worker q mod workers.
func (s *deviceSet) Queues(name string, worker int) []int {
	dev, _, ok := s.Device(name)
	if !ok {
		return nil
	}
	var qs []int
	for q := 0; q < dev.RxQueues(); q++ {
		if q%s.workers == worker {
			qs = append(qs, q)
		}
	}
	return qs
}

var _ elements.DeviceSet = (*deviceSet)(nil)

// newWorker instantiates graph g for worker w. On error it returns the
// partly built worker so that the caller closes what was built. cy is nil
// at start; in a reload it gives the running worker's pool, the Stats of
// kept elements and what each element replaces (reload.go).
func newWorker(r *Router, g *Graph, w, n int, p *plan, shared []*elements.SharedSlot, devs elements.DeviceSet, timingEvery int, cy *carry) (*worker, error) {
	pool := cy.poolOf(w)
	if pool == nil {
		pool = packet.NewPool(ElementPoolSize)
	}
	wk := &worker{
		r:     r,
		id:    w,
		clock: elements.NewClock(timingEvery),
		pool:  pool,
		inst:  make([]elements.Element, len(g.Elements)),
		stats: make([]*elements.Stats, len(g.Elements)),
		outs:  make([][]*elements.Output, len(g.Elements)),
	}
	wk.cpu.Store(-1)
	flowState := false
	for _, e := range g.Elements {
		flowState = flowState || e.Type != nil && e.Type.FlowState
	}
	wk.clock.SetTracer(&r.tracer, w)
	for i, e := range g.Elements {
		wk.stats[i] = cy.statsOf(w, i)
		if wk.stats[i] == nil {
			wk.stats[i] = &elements.Stats{Element: i}
		}
		// Outputs track their targets' stats; sources and elements fed
		// by nothing would otherwise never be published.
		wk.clock.Track(wk.stats[i])
		wk.outs[i] = make([]*elements.Output, e.Out)
		for j := range wk.outs[i] {
			wk.outs[i][j] = elements.NewOutput(wk.clock)
			wk.outs[i][j].SetFrom(wk.stats[i], j, e.Type != nil && e.Type.Source)
			if p.outs[i][j].el < 0 {
				st := wk.stats[i]
				wk.outs[i][j].SetUnconnected(st, st.Reason(elements.UnconnectedReason(j)))
			}
		}
	}
	bind := func(i int) {
		for j, t := range p.outs[i] {
			if t.el >= 0 && wk.inst[t.el] != nil && !wk.outs[i][j].Connected() {
				wk.outs[i][j].Connect(wk.inst[t.el], t.port, wk.stats[t.el])
			}
		}
	}
	for _, i := range p.order {
		e := g.Elements[i]
		if e.Type == nil || e.Type.New == nil {
			return wk, fmt.Errorf("%s: element %q: no type", e.Pos, e.Name)
		}
		bind(i)
		ctx := elements.NewContext(e.Name, w, n, r.batch, wk.outs[i], wk.stats[i], wk.pool, devs, shared[i])
		ctx.Log = r.log
		ctx.FlowState = flowState
		// Every graph the Router runs, reloads included, shares its
		// state: a reload keeps the workers, and a kept element's
		// per-worker state (the flow table) carries over by worker.
		ctx.State = r.state
		if cy != nil {
			ctx.SetReloading(true)
			ctx.SetPrevious(cy.prevOf(w, i))
		}
		el, err := e.Type.New(e.Config, ctx)
		if err != nil {
			return wk, fmt.Errorf("%s: element %q (%s): %w", e.Pos, e.Name, e.Type.Name, err)
		}
		if el == nil {
			return wk, fmt.Errorf("%s: element %q (%s): constructor returned no element", e.Pos, e.Name, e.Type.Name)
		}
		wk.inst[i] = el
	}
	for i := range g.Elements {
		bind(i)
	}
	for i, e := range g.Elements {
		el := wk.inst[i]
		if e.Type.Source {
			src, ok := el.(elements.Source)
			if !ok {
				return wk, fmt.Errorf("%s: element %q (%s): type is a source but does not implement Poll and Drained", e.Pos, e.Name, e.Type.Name)
			}
			wk.sources = append(wk.sources, src)
			wk.srcStats = append(wk.srcStats, wk.stats[i])
		}
		if t, ok := el.(elements.Ticker); ok {
			wk.tickers = append(wk.tickers, t)
		}
		if k, ok := el.(elements.Waker); ok {
			wk.wakers = append(wk.wakers, k)
		}
		if h, ok := el.(elements.PacketHolder); ok {
			var mask uint64
			for port := 0; port < e.In && port < 64; port++ {
				if h.HoldsPackets(port) {
					mask |= 1 << port
				}
			}
			wk.stats[i].SetHoldPorts(mask)
		}
	}
	return wk, nil
}

// closeAll closes every element instance that needs it, then flushes and
// closes every device, once; the errors are kept for Wait.
func (r *Router) closeAll() {
	r.once.Do(func() {
		var errs []error
		for _, wk := range r.workers {
			for i, el := range wk.inst {
				if c, ok := el.(elements.Closer); ok {
					if err := c.Close(); err != nil {
						errs = append(errs, fmt.Errorf("element %q worker %d: close: %w", r.g.Elements[i].Name, wk.id, err))
					}
				}
			}
		}
		for i, d := range r.devices {
			if d == nil {
				continue
			}
			name := r.g.Devices[i].Name
			if err := d.Flush(); err != nil {
				errs = append(errs, fmt.Errorf("device %q: flush: %w", name, err))
			}
			if err := d.Close(); err != nil {
				errs = append(errs, fmt.Errorf("device %q: close: %w", name, err))
			}
		}
		r.mu.Lock()
		extra := r.closed
		r.closed, r.isClosed = nil, true
		r.mu.Unlock()
		for _, f := range extra {
			if err := f(); err != nil {
				errs = append(errs, err)
			}
		}
		r.err = errors.Join(errs...)
	})
}

// Stop asks every worker to stop after its current round. It returns at
// once; Wait waits for the end.
func (r *Router) Stop() { r.stop.Store(true) }

// Stopped reports whether Stop was called (or the duration elapsed), as
// opposed to a run that ended because every source was drained.
func (r *Router) Stopped() bool { return r.stop.Load() }

// Done is closed when the workers have exited and everything is closed.
func (r *Router) Done() <-chan struct{} { return r.done }

// Wait waits until the router has finished (all sources drained, Stop, or
// the duration elapsed) and everything is closed; it returns what closing
// reported.
func (r *Router) Wait() error {
	<-r.done
	return r.err
}

// Workers is the number of workers.
func (r *Router) Workers() int {
	r.genMu.RLock()
	defer r.genMu.RUnlock()
	return len(r.workers)
}

// Graph is the graph the router runs.
func (r *Router) Graph() *Graph {
	r.genMu.RLock()
	defer r.genMu.RUnlock()
	return r.g
}

// OnClose registers f to run when the router closes (after the devices):
// how an observer (the stats endpoint) stops with it.
func (r *Router) OnClose(f func() error) {
	r.mu.Lock()
	if !r.isClosed {
		r.closed = append(r.closed, f)
		r.mu.Unlock()
		return
	}
	r.mu.Unlock()
	f()
}

// Build opens the devices and instantiates the pipelines like Start, but
// starts no goroutine: the caller drives the workers with Round and ends
// with Close. It is for benchmarks and allocation tests of whole graphs.
func Build(g *Graph, o Options) (*Router, error) {
	r, err := build(g, o)
	if err != nil {
		return nil, err
	}
	ws := r.workers
	r.roundWorkers.Store(&ws)
	r.start = time.Now()
	return r, nil
}

// Round runs one poll round of worker w on the calling goroutine (a router
// from Build only): every source polled once, the elements' clock advanced,
// wakers whose time has come woken, tickers called when a millisecond has
// passed. It returns the packets received.
func (r *Router) Round(w int) int {
	var ws []*worker
	if p := r.roundWorkers.Load(); p != nil {
		ws = *p
	} else {
		r.genMu.RLock()
		ws = r.workers
		r.genMu.RUnlock()
	}
	if w >= len(ws) {
		return 0 // a reload has just removed it
	}
	wk := ws[w]
	if wk.retired {
		return 0
	}
	if ng := wk.next.Load(); ng != nil && ng.resize != nil {
		// A reload that changes the number of workers: no round on
		// either graph until this worker has adopted the new one.
		if wk.stepResize(ng) != resizeAdopted {
			return 0
		}
	}
	wk.checkNext()
	now := elements.Nanotime()
	wk.clock.Round(now)
	n := wk.poll()
	if len(wk.wakers) > 0 {
		wk.wake(elements.Nanotime())
	}
	if now-wk.lastTick >= tickEvery {
		wk.lastTick = now
		wk.tick(now)
	}
	return n
}

// Close publishes the counters and closes the elements and devices of a
// router from Build; it returns what closing reported.
func (r *Router) Close() error {
	for _, wk := range r.workers {
		wk.clock.Publish()
	}
	r.closeAll()
	return r.err
}

// ProcessCPUs lists the CPUs the process may run on, as it started (its
// affinity mask, which a container or taskset may restrict), in order:
// the CPUs workers are pinned to when Options.CPUs is empty. Empty where
// pinning is not supported.
func ProcessCPUs() []int { return slices.Clone(processCPUs) }
