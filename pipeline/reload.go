package pipeline

import (
	"errors"
	"fmt"
	"io"
	"reflect"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/junction-dataplane/junction/drivers"
	"github.com/junction-dataplane/junction/elements"
	"github.com/junction-dataplane/junction/packet"
)

// Hot reload: a running router replaces its graph without stopping, like
// nft -f (atomic: all or nothing) and Click's hotswap (state of elements
// whose name and type are unchanged carries over; elements.StateTaker).
//
//  1. Prepare, on the caller's goroutine, while the old graph runs: load
//     and validate the file completely (everything check does), open the
//     devices it adds or changes, build every worker's new pipeline
//     (constructors may reuse shared state of the elements they replace:
//     elements.Context.Previous). Any error closes what was opened and
//     built and returns the located error: nothing has changed.
//  2. Swap: each worker is handed its new pipeline and adopts it between
//     two rounds: the round it is in finishes on the old graph, the next
//     starts on the new one, so no batch is seen by both. Before its
//     first round on the new graph it calls TakeState on every kept
//     element (old instance → new). Packets between workers (FromDevice's
//     handoff rings) stay in the rings: a kept FromDevice takes the rings
//     over, so nothing in flight is lost or reordered.
//  3. Publish the new graph to the stats readers, then close the old
//     instances and the devices the new graph no longer has.

// GraphGeneration says which graph is running: the generation (1 at start,
// one more at every reload), its file and when it was loaded.
type GraphGeneration struct {
	Generation uint64    `json:"generation"`
	File       string    `json:"file"`
	LoadedAt   time.Time `json:"loaded_at"`
}

// ReloadReport says what a reload changed (or, dry, would change) and how
// long it took.
type ReloadReport struct {
	File   string `json:"file"`
	DryRun bool   `json:"dry_run"`
	// Generation is the generation running after the reload (dry run:
	// the one the reload would start).
	Generation uint64 `json:"generation"`
	Workers    int    `json:"workers"`

	// Elements by name: added, removed, replaced (same name, another
	// type), kept with state (same name and type, the type takes state:
	// elements.Type.TakesState), kept (same name and type, no state).
	// Reconfigured lists the kept ones (with state or not) whose
	// configuration changed.
	Added         []string `json:"added,omitempty"`
	Removed       []string `json:"removed,omitempty"`
	Replaced      []string `json:"replaced,omitempty"`
	KeptWithState []string `json:"kept_with_state,omitempty"`
	Kept          []string `json:"kept,omitempty"`
	Reconfigured  []string `json:"reconfigured,omitempty"`

	DevicesOpened []string `json:"devices_opened,omitempty"`
	DevicesClosed []string `json:"devices_closed,omitempty"`
	DevicesKept   []string `json:"devices_kept,omitempty"`
	LinksAdded    []string `json:"links_added,omitempty"`
	LinksRemoved  []string `json:"links_removed,omitempty"`

	// DevicesReconfigured are kept open with new keys applied in place
	// (drivers.Reconfigurer: an afxdp device's queues).
	DevicesReconfigured []string `json:"devices_reconfigured,omitempty"`

	// Prepare is the time to load, validate, open and build; Swap from
	// the first worker told to the last one running the new graph (as
	// the workers' clocks say: a worker switches between two rounds, so
	// this is about one round, or the rest of an idle worker's sleep);
	// Total from the call to the old graph closed.
	Prepare time.Duration `json:"prepare_ns"`
	Swap    time.Duration `json:"swap_ns"`
	Total   time.Duration `json:"total_ns"`
	// Lost is the packets the switch dropped, each counted under a drop
	// reason of the element that held it: what retired instances held
	// (elements.Retirer: ARPQuerier's packets waiting for a neighbour)
	// and what was in flight between workers in the rings of a FromDevice
	// that was replaced rather than kept (elements.Stranded). A kept
	// FromDevice takes its rings over: nothing in flight is lost.
	Lost uint64 `json:"lost_packets"`
	// StateErrors are TakeState failures (the element then started
	// empty), by element and worker.
	StateErrors []string `json:"state_errors,omitempty"`
	// WorkerChange is set when the reload changes the number of workers
	// (resize.go): the devices told, the flows moved to new owners.
	WorkerChange *WorkerChange `json:"worker_change,omitempty"`
	// Notes are what the operator should know that is not an error (a
	// workers key overridden by the command line).
	Notes []string `json:"notes,omitempty"`
	// LiveState is what the reload keeps and drops of state that kept
	// elements hold beyond their configuration (elements.ReloadPlanner:
	// IPLookup's routes added live), one line per item, each naming its
	// element.
	LiveState []string `json:"live_state,omitempty"`
}

// Changed reports whether the new graph differs from the running one.
func (rep *ReloadReport) Changed() bool {
	return rep.WorkerChange != nil || len(rep.Added)+len(rep.Removed)+len(rep.Replaced)+len(rep.Reconfigured)+
		len(rep.DevicesOpened)+len(rep.DevicesClosed)+len(rep.DevicesReconfigured)+len(rep.LinksAdded)+len(rep.LinksRemoved) > 0
}

// WriteText prints the report for an operator, one change per line.
func (rep *ReloadReport) WriteText(w io.Writer) error {
	var b strings.Builder
	verb := "reloaded"
	if rep.DryRun {
		verb = "would reload"
	}
	fmt.Fprintf(&b, "%s %s: generation %d, %d workers\n", verb, rep.File, rep.Generation, rep.Workers)
	list := func(what string, names []string) {
		for _, n := range names {
			fmt.Fprintf(&b, "  %-22s %s\n", what, n)
		}
	}
	if wc := rep.WorkerChange; wc != nil {
		fmt.Fprintf(&b, "  %-22s %d → %d (flows move to their new owners; workers pinned as at start)\n", "workers", wc.From, wc.To)
		list("device told workers", wc.Devices)
		if !rep.DryRun {
			fmt.Fprintf(&b, "  %-22s %d moved to a new owner, %d stayed (in %s)\n", "per-worker state", wc.Moved, wc.Kept, wc.Rebalance.Round(time.Microsecond))
			fmt.Fprintf(&b, "  %-22s all parked after %s, for %s; all running again %s later\n", "barrier", wc.Barrier.Round(time.Microsecond), wc.Parked.Round(time.Microsecond), wc.Restart.Round(time.Microsecond))
			if hk := wc.Housekeeping; hk != nil {
				where := "share the workers' CPUs (every CPU has a worker)"
				if len(hk.CPUs) > 0 {
					where = fmt.Sprintf("confined to CPUs %v (%d threads), off the workers' %v", hk.CPUs, hk.Threads, hk.WorkerCPUs)
				}
				fmt.Fprintf(&b, "  %-22s other threads %s\n", "housekeeping", where)
			}
			if wc.HousekeepingErr != "" {
				fmt.Fprintf(&b, "  %-22s not confined: %s\n", "housekeeping", wc.HousekeepingErr)
			}
			if wc.Pinned > 0 {
				fmt.Fprintf(&b, "  %-22s %d flows whose reply hashes to another worker now, steered to their owner by exception\n", "pinned", wc.Pinned)
			}
			keys := make([]string, 0, len(wc.Dropped))
			for k := range wc.Dropped {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				fmt.Fprintf(&b, "  %-22s %d %s\n", "dropped", wc.Dropped[k], k)
			}
		}
	}
	list("element added", rep.Added)
	list("element removed", rep.Removed)
	list("element replaced", rep.Replaced)
	list("element reconfigured", rep.Reconfigured)
	list("kept with state", rep.KeptWithState)
	list("live state", rep.LiveState)
	if len(rep.Kept) > 0 {
		fmt.Fprintf(&b, "  %-22s %d elements without state\n", "kept", len(rep.Kept))
	}
	list("device opened", rep.DevicesOpened)
	list("device closed", rep.DevicesClosed)
	list("device kept open", rep.DevicesKept)
	list("device reconfigured", rep.DevicesReconfigured)
	list("link added", rep.LinksAdded)
	list("link removed", rep.LinksRemoved)
	list("state not carried", rep.StateErrors)
	list("note", rep.Notes)
	if !rep.Changed() {
		b.WriteString("  no change\n")
	}
	if !rep.DryRun {
		fmt.Fprintf(&b, "  prepared in %s, swapped on every worker in %s, %s in all; %d packets lost in the switch\n",
			rep.Prepare.Round(time.Microsecond), rep.Swap.Round(time.Microsecond), rep.Total.Round(time.Microsecond), rep.Lost)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// ErrReloadBusy is returned by TryReload while another reload runs.
var ErrReloadBusy = errors.New("another reload is in progress")

// Generation is the running graph's generation, file and load time.
func (r *Router) Generation() (gen uint64, file string, loadedAt time.Time) {
	r.genMu.RLock()
	defer r.genMu.RUnlock()
	return r.gen.Generation, r.gen.File, r.gen.LoadedAt
}

// Reload loads the graph file at path, validates it completely and, unless
// dryRun, swaps it in for the running graph (see the comment at the top of
// reload.go). A second reload waits for the first. On any error the
// running graph is untouched and the error names the file and line.
func (r *Router) Reload(path string, dryRun bool) (*ReloadReport, error) {
	r.reloadMu.Lock()
	defer r.reloadMu.Unlock()
	return r.reload(path, nil, dryRun)
}

// TryReload is Reload, except that it returns ErrReloadBusy at once when
// another reload is in progress instead of waiting for it.
func (r *Router) TryReload(path string, dryRun bool) (*ReloadReport, error) {
	if !r.reloadMu.TryLock() {
		return nil, ErrReloadBusy
	}
	defer r.reloadMu.Unlock()
	return r.reload(path, nil, dryRun)
}

// ReloadGraph is Reload with a graph already loaded (tests, benchmarks).
// On a router from Build (whose workers the caller drives), the caller
// must keep calling Round for every worker until it returns: each worker
// switches in its Round.
func (r *Router) ReloadGraph(g *Graph, dryRun bool) (*ReloadReport, error) {
	r.reloadMu.Lock()
	defer r.reloadMu.Unlock()
	return r.reload("", g, dryRun)
}

// reloadTxn is one reload between its steps: what it has opened, changed
// and built so far, so that one rollback undoes exactly that.
type reloadTxn struct {
	r       *Router
	g1, g2  *Graph
	dryRun  bool
	t0      time.Time
	n, want int // workers now, after
	gen     uint64
	rep     *ReloadReport
	devs    []drivers.Device       // the new graph's devices, by index
	keptNew []bool                 // devs[i] is a running device, kept (or reconfigured in place)
	reconf  []drivers.WorkerChange // devices reconfigured in place (queues)
	resized []drivers.WorkerChange // reconf, and the devices told of a new worker count
	opened  []int                  // devices opened for the new graph
	built   []*worker
	shared  []*elements.SharedSlot
	cy      *carry
}

// rollback undoes what the reload did before its swap: built pipelines
// closed, devices opened closed, in-place device changes aborted.
func (t *reloadTxn) rollback() {
	for _, b := range t.built {
		var running []elements.Element
		if b.id < t.n {
			running = t.r.workers[b.id].inst
		}
		closeInstances(b.inst, running)
	}
	for _, c := range t.resized {
		c.Abort()
	}
	for _, i := range t.opened {
		t.devs[i].Close()
	}
}

// reload runs a reload's steps: validate and plan (nothing changes), open
// and build (undone by one rollback on error), swap, publish, close the
// old graph.
func (r *Router) reload(path string, g2 *Graph, dryRun bool) (*ReloadReport, error) {
	t, err := r.prepareReload(path, g2, dryRun)
	if err != nil {
		return nil, err
	}
	if err := t.planDevices(); err != nil {
		t.rollback()
		return nil, err
	}
	if dryRun {
		t.rep.Total = time.Since(t.t0)
		return t.rep, nil
	}
	if err := t.openDevices(); err != nil {
		t.rollback()
		return nil, err
	}
	if err := t.buildWorkers(); err != nil {
		t.rollback()
		return nil, err
	}
	t.rep.Prepare = time.Since(t.t0)
	ng, old, workers := t.swap()
	oldDevs := r.devices
	t.publish(workers)
	t.account(ng, old)
	t.closeOld(old, oldDevs)
	t.rep.Total = time.Since(t.t0)
	return t.rep, nil
}

// prepareReload loads and validates the new graph and says what would
// change. Nothing is opened.
func (r *Router) prepareReload(path string, g2 *Graph, dryRun bool) (*reloadTxn, error) {
	t0 := time.Now()
	if r.closing() {
		return nil, errors.New("reload: the router has stopped")
	}
	if g2 == nil {
		var err error
		if g2, err = LoadFor(path, r.state); err != nil {
			return nil, err
		}
	}
	if r.checkReload != nil {
		if err := r.checkReload(g2); err != nil {
			return nil, err
		}
	}
	t := &reloadTxn{r: r, g1: r.g, g2: g2, dryRun: dryRun, t0: t0, n: len(r.workers)}
	t.want = resolveWorkers(r.optWorkers, g2)
	if b := resolveBatch(g2); b != r.batch {
		return nil, fmt.Errorf("%s: batch = %d: the running router's batch is %d; a reload cannot change it (restart the forwarder)", g2.File, b, r.batch)
	}
	if t.want != t.n {
		// What check does with the new count (the environment checks
		// are per worker count: queues, CPUs).
		if err := CheckEnv(g2, t.want); err != nil {
			return nil, err
		}
	}
	rep := diffGraphs(t.g1, g2)
	rep.File, rep.DryRun, rep.Workers = g2.File, dryRun, t.want
	t.gen, _, _ = r.Generation()
	rep.Generation = t.gen + 1
	if t.want != t.n {
		rep.WorkerChange = &WorkerChange{From: t.n, To: t.want}
	}
	rep.LiveState = r.reloadPlans(t.g1, g2) // reloadplan.go
	if r.optWorkers > 0 && g2.Workers > 0 && g2.Workers != r.optWorkers {
		rep.Notes = append(rep.Notes, fmt.Sprintf("the file's workers = %d is overridden by the %d workers the router was started with (-workers): the count stays %d", g2.Workers, r.optWorkers, t.want))
	}
	t.rep = rep
	return t, nil
}

// planDevices finds the running devices the new graph keeps and changes
// those it changes in place (queues, worker count): prepared, not done,
// until the swap (a dry run only reports them).
func (t *reloadTxn) planDevices() error {
	t.keptNew = make([]bool, len(t.g2.Devices))
	t.devs = make([]drivers.Device, len(t.g2.Devices))
	for i, d := range t.g2.Devices {
		if od := t.g1.Device(d.Name); od != nil && sameDevice(od, d) {
			t.devs[i] = t.r.devices[od.Index]
			t.keptNew[i] = true
		}
	}
	reconf, err := reconfigureDevices(t.g1, t.g2, t.r.devices, t.devs, t.keptNew, t.rep, t.dryRun)
	if err != nil {
		return err
	}
	t.reconf = reconf
	t.resized = append(t.resized, reconf...)
	if t.want == t.n && len(reconf) > 0 {
		// What check does with the new queue counts (as above).
		if err := CheckEnv(t.g2, t.want); err != nil {
			return err
		}
	}
	if t.want != t.n {
		resized, lines, err := resizeDevices(t.g1, t.g2, t.devs, t.keptNew, t.n, t.want, t.dryRun)
		if err != nil {
			return err
		}
		t.rep.WorkerChange.Devices = lines
		t.resized = append(t.resized, resized...)
	}
	return nil
}

// openDevices opens the devices the new graph adds or changes, by the
// path the first start uses (openDevice).
func (t *reloadTxn) openDevices() error {
	for i := range t.g2.Devices {
		if t.keptNew[i] {
			continue // unchanged, or reconfigured in place (reconfig.go)
		}
		dev, err := openDevice(t.g2, i, t.want, t.r.batch, t.r.log)
		if err != nil {
			return err
		}
		t.devs[i] = dev
		t.opened = append(t.opened, i)
	}
	return nil
}

// buildWorkers builds every worker's new pipeline with the running
// workers' pools, the Stats of kept elements and what each element
// replaces.
func (t *reloadTxn) buildWorkers() error {
	plan, err := planGraph(t.g2)
	if err != nil {
		return err
	}
	t.cy = t.r.carryFor(t.g1, t.g2)
	t.shared = sharedSlots(len(t.g2.Elements))
	ds := &deviceSet{g: t.g2, devs: t.devs, workers: t.want}
	for w := 0; w < t.want; w++ {
		wk, err := newWorker(t.r, t.g2, w, t.want, plan, t.shared, ds, t.r.timing, t.cy)
		if wk != nil {
			t.built = append(t.built, wk)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// swap hands every worker its new pipeline and waits until all have
// adopted it. It returns the hand-over, the old instances per worker and
// the workers running now.
func (t *reloadTxn) swap() (*nextGen, [][]elements.Element, []*worker) {
	r, n, want, g2, cy := t.r, t.n, t.want, t.g2, t.cy
	nmax := max(n, want)
	ng := &nextGen{ack: make(chan int, nmax), errs: make([][]string, nmax), adoptedAt: make([]int64, nmax), lost: make([]uint64, nmax)}
	if want != n || len(t.reconf) > 0 {
		// A queue count that changes needs every worker parked too:
		// the device's queues change under all of them at once.
		ng.resize = newResizeBarrier(n, want)
		// The counters of kept elements on removed workers go to
		// worker 0's (a kept element's Stats carry over).
		for w := want; w < n; w++ {
			for i := range g2.Elements {
				if dst := cy.statsOf(0, i); dst != nil {
					ng.resize.absorb = append(ng.resize.absorb, [2]*elements.Stats{dst, cy.statsOf(w, i)})
				}
			}
		}
	}
	for w := range t.built {
		ng.workers = append(ng.workers, t.built[w])
		var takes []take
		for i, e := range g2.Elements {
			st, ok := t.built[w].inst[i].(elements.StateTaker)
			if !ok {
				continue
			}
			// Old is nil for an element new in the reload: it
			// learns, between rounds, that it now runs.
			takes = append(takes, take{st, cy.prevOf(w, i).Element, e.Name})
		}
		ng.takes = append(ng.takes, takes)
	}
	old := make([][]elements.Element, n)
	for w, wk := range r.workers {
		old[w] = wk.inst
	}
	handed := elements.Nanotime()
	workers := r.workers
	if ng.resize != nil {
		flowState := false
		for _, e := range g2.Elements {
			flowState = flowState || e.Type != nil && e.Type.FlowState
		}
		wc := t.rep.WorkerChange
		if wc == nil {
			wc = &WorkerChange{From: n, To: want} // timings only
		}
		workers = r.resizeSwap(ng, t.built, t.resized, wc, flowState)
	} else {
		for _, wk := range r.workers {
			wk.next.Store(ng)
		}
		r.awaitSwap(ng)
	}
	t.rep.Swap = time.Duration(slices.Max(ng.adoptedAt) - handed)
	return ng, old, workers
}

// publish makes the new graph the one the stats readers see, and moves
// the other threads to the CPUs no worker has after a change of workers.
func (t *reloadTxn) publish(workers []*worker) {
	r := t.r
	r.genMu.Lock()
	r.g, r.devices, r.shared = t.g2, t.devs, t.shared
	r.workers = workers
	if r.roundWorkers.Load() != nil {
		r.roundWorkers.Store(&workers)
	}
	for w, wk := range r.workers {
		wk.stats, wk.pubInst = t.built[w].stats, t.built[w].inst
	}
	r.gen = GraphGeneration{Generation: t.gen + 1, File: t.g2.File, LoadedAt: time.Now()}
	r.genMu.Unlock()
	if wc := t.rep.WorkerChange; wc != nil && t.n != t.want {
		// The added workers have pinned themselves (they ack after),
		// the removed ones have exited: the other threads move to the
		// CPUs no worker has now.
		hk, err := r.rehousekeep(workers)
		wc.Housekeeping = hk
		if err != nil {
			wc.HousekeepingErr = err.Error()
		}
	}
}

// account adds to the report what the switch lost and the state the kept
// elements could not carry.
func (t *reloadTxn) account(ng *nextGen, old [][]elements.Element) {
	for w := range ng.lost {
		t.rep.Lost += ng.lost[w]
		if w >= t.n {
			continue // a new worker: no old instances
		}
		for _, el := range old[w] {
			if st, ok := el.(elements.Stranded); ok && !reusedIn(el, t.runningOn(w)) {
				t.rep.Lost += st.Stranded()
			}
		}
	}
	for w, es := range ng.errs {
		for _, e := range es {
			t.rep.StateErrors = append(t.rep.StateErrors, fmt.Sprintf("worker %d: %s", w, e))
		}
	}
}

// runningOn is worker w's new instances (nil: the worker was removed).
func (t *reloadTxn) runningOn(w int) []elements.Element {
	if w < t.want {
		return t.built[w].inst
	}
	return nil
}

// closeOld closes the old graph: every old instance the new graph does
// not run (a kept one's TakeState left it nothing to release), the
// in-place device changes, then the devices no longer used. What closing
// reports is told, not fatal: the new graph runs.
func (t *reloadTxn) closeOld(old [][]elements.Element, oldDevs []drivers.Device) {
	var errs []error
	for w := range old {
		running := t.runningOn(w)
		for i, el := range old[w] {
			if reusedIn(el, running) {
				continue // the new graph runs this very instance
			}
			if c, ok := el.(elements.Closer); ok {
				if err := c.Close(); err != nil {
					errs = append(errs, fmt.Errorf("element %q worker %d: close: %w", t.g1.Elements[i].Name, w, err))
				}
			}
		}
	}
	for _, c := range t.resized {
		if err := c.Finish(); err != nil {
			errs = append(errs, fmt.Errorf("devices: after the change of workers: %w", err))
		}
	}
	kept := make([]bool, len(t.g1.Devices))
	for i, d := range t.g2.Devices {
		if t.keptNew[i] {
			kept[t.g1.Device(d.Name).Index] = true
		}
	}
	for i, d := range oldDevs {
		if d == nil || kept[i] {
			continue
		}
		name := t.g1.Devices[i].Name
		if err := d.Flush(); err != nil {
			errs = append(errs, fmt.Errorf("device %q: flush: %w", name, err))
		}
		if err := d.Close(); err != nil {
			errs = append(errs, fmt.Errorf("device %q: close: %w", name, err))
		}
	}
	if len(errs) > 0 {
		fmt.Fprintf(t.r.log, "reload: closing the previous graph: %v\n", errors.Join(errs...))
	}
}

// closing reports whether the workers have been told to stop or have
// all exited (a reload would then have no one to swap).
func (r *Router) closing() bool {
	if r.stop.Load() {
		return true
	}
	select {
	case <-r.done:
		return true
	default:
	}
	return false
}

// closeInstances closes the elements of a pipeline that was built and
// never run (a reload that failed), except those that are running ones
// (a constructor may return the running instance to keep it).
func closeInstances(inst, running []elements.Element) {
	for _, el := range inst {
		if reusedIn(el, running) {
			continue
		}
		if c, ok := el.(elements.Closer); ok {
			c.Close()
		}
	}
}

// reusedIn reports whether instance el is one of insts (the same pointer).
func reusedIn(el elements.Element, insts []elements.Element) bool {
	if el == nil || reflect.TypeOf(el).Kind() != reflect.Pointer {
		return false
	}
	for _, x := range insts {
		if x != nil && reflect.TypeOf(x) == reflect.TypeOf(el) && x == el {
			return true
		}
	}
	return false
}

// nextGen is a prepared generation handed to the workers: each adopts
// workers[id] and runs takes[id] between two rounds, then sends its id on
// ack.
type nextGen struct {
	workers []*worker
	takes   [][]take
	errs    [][]string // by worker, written by that worker before its ack
	ack     chan int
	// adoptedAt is when each worker started running the new pipeline
	// (elements.Nanotime), written before its ack; lost what its retired
	// instances dropped (elements.Retirer).
	adoptedAt []int64
	lost      []uint64
	// resize is set when the reload changes the number of workers: the
	// swap then has a barrier (resize.go). workers and takes are then by
	// new worker, the other slices by old or new worker, whichever
	// count is larger.
	resize *resizeBarrier
}

type take struct {
	to   elements.StateTaker
	from elements.Element
	name string
}

// adopt switches worker w to its pipeline of ng: called by the worker
// between rounds (or, for a worker that has exited, by the reload).
func (w *worker) adopt(ng *nextGen) {
	w.clock.Publish() // the old instances' last counts
	for _, t := range ng.takes[w.id] {
		if err := t.to.TakeState(t.from); err != nil {
			ng.errs[w.id] = append(ng.errs[w.id], fmt.Sprintf("element %q: %v", t.name, err))
		}
	}
	nw := ng.workers[w.id]
	// Old instances the new graph does not run let go, here, of what
	// they hold of this worker's pools.
	for _, el := range w.inst {
		if rt, ok := el.(elements.Retirer); ok && !reusedIn(el, nw.inst) {
			ng.lost[w.id] += rt.Retire()
		}
	}
	w.inst, w.outs = nw.inst, nw.outs
	w.sources, w.srcStats, w.tickers, w.wakers = nw.sources, nw.srcStats, nw.tickers, nw.wakers
	w.clock = nw.clock
	w.clock.Adopt(nw.stats)
	w.initWait()
	now := elements.Nanotime()
	w.clock.Round(now)
	ng.adoptedAt[w.id] = now
	ng.ack <- w.id
}

// checkNext adopts a generation handed to the worker, if any. It is the
// whole cost of reloads in the poll loop: one atomic load per round.
func (w *worker) checkNext() bool {
	ng := w.next.Load()
	if ng == nil || ng.resize != nil || !w.next.CompareAndSwap(ng, nil) {
		return false
	}
	w.adopt(ng)
	return true
}

// awaitSwap waits until every worker runs the new generation. A worker
// that has exited (its sources drained, or stopped) adopts nothing by
// itself: the reload adopts for it, so that the router's final close
// closes the new pipeline (the final close waits for reloadMu).
func (r *Router) awaitSwap(ng *nextGen) {
	left := len(r.workers)
	tick := time.NewTicker(200 * time.Microsecond)
	defer tick.Stop()
	for left > 0 {
		select {
		case <-ng.ack:
			left--
		case <-tick.C:
			for _, wk := range r.workers {
				if wk.exited.Load() {
					wk.checkNext() // sends its ack
				}
			}
		}
	}
}

// carry is what a reload's pipelines take from the running ones, per
// worker and new element index.
type carry struct {
	pools []*packet.Pool
	stats [][]*elements.Stats
	prev  [][]elements.Previous
}

func (c *carry) poolOf(w int) *packet.Pool {
	if c == nil || w >= len(c.pools) {
		return nil
	}
	return c.pools[w]
}

func (c *carry) statsOf(w, i int) *elements.Stats {
	if c == nil || w >= len(c.pools) {
		return nil
	}
	return c.stats[w][i]
}

func (c *carry) prevOf(w, i int) elements.Previous {
	if c == nil || w >= len(c.pools) {
		return elements.Previous{}
	}
	return c.prev[w][i]
}

// carryFor matches g2's elements to g1's by name and type. An element
// whose configuration names a device that the reload reopens (same name,
// another configuration) is not SameConfig: what it shares may hold the
// old device (a fast-path mirror).
func (r *Router) carryFor(g1, g2 *Graph) *carry {
	c := &carry{}
	reopened := reopenedDevices(g1, g2) // reloadplan.go
	oldIdx := make(map[string]int, len(g1.Elements))
	for i, e := range g1.Elements {
		oldIdx[e.Name] = i
	}
	for _, wk := range r.workers {
		c.pools = append(c.pools, wk.pool)
		st := make([]*elements.Stats, len(g2.Elements))
		pv := make([]elements.Previous, len(g2.Elements))
		for i, e := range g2.Elements {
			j, ok := oldIdx[e.Name]
			if !ok || !sameType(g1.Elements[j], e) {
				continue
			}
			st[i] = wk.stats[j]
			pv[i] = elements.Previous{
				Element:    wk.inst[j],
				Shared:     r.shared[j].SharedValue(),
				SameConfig: sameConfig(g1.Elements[j], e, reopened),
			}
		}
		c.stats = append(c.stats, st)
		c.prev = append(c.prev, pv)
	}
	return c
}

// mentions reports whether a config holds one of names as a string (a key
// naming a device), looking through pointers, structs, slices and arrays.
func mentions(v reflect.Value, names map[string]bool, depth int) bool {
	if len(names) == 0 || depth > 8 {
		return false
	}
	switch v.Kind() {
	case reflect.String:
		return names[v.String()]
	case reflect.Pointer, reflect.Interface:
		return !v.IsNil() && mentions(v.Elem(), names, depth+1)
	case reflect.Struct:
		for i := 0; i < v.NumField(); i++ {
			if mentions(v.Field(i), names, depth+1) {
				return true
			}
		}
	case reflect.Slice, reflect.Array:
		if v.Type().Elem().Kind() != reflect.String && v.Type().Elem().Kind() != reflect.Struct {
			return false // route tables and the like: no device names
		}
		for i := 0; i < v.Len() && i < 1024; i++ {
			if mentions(v.Index(i), names, depth+1) {
				return true
			}
		}
	}
	return false
}

func sameType(a, b *Element) bool {
	return a.Type != nil && b.Type != nil && a.Type.Name == b.Type.Name
}

// sameDevice reports whether a device of the new graph is the running one
// unchanged: same driver, keys, addresses and MAC. Its position among the
// [devices] tables may change (a device before it removed): the InDevice
// annotation of its packets is the graph's index, which FromDevice of the
// new graph sets (whatever index the driver was opened with).
func sameDevice(a, b *Device) bool {
	return a.Driver != nil && b.Driver != nil && a.Driver.Name == b.Driver.Name &&
		a.MAC == b.MAC && slices.Equal(a.Addresses, b.Addresses) &&
		reflect.DeepEqual(a.Config, b.Config)
}

// diffGraphs lists what changes from g1 to g2.
func diffGraphs(g1, g2 *Graph) *ReloadReport {
	rep := &ReloadReport{}
	for _, e := range g2.Elements {
		o := g1.Element(e.Name)
		switch {
		case o == nil:
			rep.Added = append(rep.Added, e.Name+" ("+typeName(e)+")")
		case !sameType(o, e):
			rep.Replaced = append(rep.Replaced, e.Name+" ("+typeName(o)+" → "+typeName(e)+")")
		default:
			if e.Type.TakesState {
				rep.KeptWithState = append(rep.KeptWithState, e.Name+" ("+typeName(e)+")")
			} else {
				rep.Kept = append(rep.Kept, e.Name+" ("+typeName(e)+")")
			}
			if !reflect.DeepEqual(o.Config, e.Config) {
				rep.Reconfigured = append(rep.Reconfigured, e.Name+" ("+typeName(e)+")")
			}
		}
	}
	for _, e := range g1.Elements {
		if g2.Element(e.Name) == nil {
			rep.Removed = append(rep.Removed, e.Name+" ("+typeName(e)+")")
		}
	}
	for _, d := range g2.Devices {
		o := g1.Device(d.Name)
		switch {
		case o == nil:
			rep.DevicesOpened = append(rep.DevicesOpened, d.Name+" ("+driverName(d)+")")
		case !sameDevice(o, d):
			rep.DevicesClosed = append(rep.DevicesClosed, o.Name+" ("+driverName(o)+", changed)")
			rep.DevicesOpened = append(rep.DevicesOpened, d.Name+" ("+driverName(d)+", changed)")
		default:
			rep.DevicesKept = append(rep.DevicesKept, d.Name+" ("+driverName(d)+")")
		}
	}
	for _, d := range g1.Devices {
		if g2.Device(d.Name) == nil {
			rep.DevicesClosed = append(rep.DevicesClosed, d.Name+" ("+driverName(d)+")")
		}
	}
	l1, l2 := linkSet(g1), linkSet(g2)
	for l := range l2 {
		if !l1[l] {
			rep.LinksAdded = append(rep.LinksAdded, l)
		}
	}
	for l := range l1 {
		if !l2[l] {
			rep.LinksRemoved = append(rep.LinksRemoved, l)
		}
	}
	sort.Strings(rep.LinksAdded)
	sort.Strings(rep.LinksRemoved)
	return rep
}

// DiffGraphs says what reloading a router running g1 with g2 would change
// (a dry run without a running router: forwarder reload -dry-run offline).
func DiffGraphs(g1, g2 *Graph) *ReloadReport {
	rep := diffGraphs(g1, g2)
	rep.File, rep.DryRun = g2.File, true
	if a, b := resolveWorkers(0, g1), resolveWorkers(0, g2); a != b {
		rep.WorkerChange = &WorkerChange{From: a, To: b}
		for _, d := range g2.Devices {
			if od := g1.Device(d.Name); od != nil && sameDevice(od, d) {
				rep.WorkerChange.Devices = append(rep.WorkerChange.Devices,
					fmt.Sprintf("%s (%s): kept open, TX for %d workers", d.Name, driverName(d), b))
			}
		}
	}
	rep.Workers = resolveWorkers(0, g2)
	return rep
}

func linkSet(g *Graph) map[string]bool {
	m := make(map[string]bool, len(g.Links))
	for _, l := range g.Links {
		m[fmt.Sprintf("%s[%d] -> [%d]%s", l.From, l.FromPort, l.ToPort, l.To)] = true
	}
	return m
}

func typeName(e *Element) string {
	if e.Type == nil {
		return "?"
	}
	return e.Type.Name
}

func driverName(d *Device) string {
	if d.Driver == nil {
		return "?"
	}
	return d.Driver.Name
}
