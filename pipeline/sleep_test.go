package pipeline

import (
	"errors"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/junction-dataplane/junction/elements"
	"github.com/junction-dataplane/junction/packet"
)

// newEventfd returns a non-blocking eventfd, closed when the test ends.
func newEventfd(t testing.TB) int {
	t.Helper()
	fd, err := unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(fd) })
	return fd
}

// fdSource is a Source and Sleeper backed by an eventfd: a write to the
// eventfd is one packet, which Poll takes and timestamps.
type fdSource struct {
	fd       int
	buf      [8]byte
	seen     atomic.Int64 // elements.Nanotime when Poll took the last write
	got      atomic.Uint64
	prepared atomic.Uint64
	woke     atomic.Uint64
}

func (s *fdSource) Push(int, *packet.Batch) {}
func (s *fdSource) Drained() bool           { return false }

func (s *fdSource) Poll() int {
	if n, _ := unix.Read(s.fd, s.buf[:]); n != 8 {
		return 0
	}
	s.seen.Store(elements.Nanotime())
	s.got.Add(1)
	return 1
}

func (s *fdSource) PrepareSleep(fds []int) ([]int, elements.SleepMode) {
	s.prepared.Add(1)
	return append(fds, s.fd), elements.SleepOnFDs
}

func (s *fdSource) Woke() { s.woke.Add(1) }

func (s *fdSource) signal(t *testing.T) {
	t.Helper()
	b := [8]byte{1}
	if _, err := unix.Write(s.fd, b[:]); err != nil {
		t.Fatal(err)
	}
}

// startWithSource builds the one-worker test graph with src as its source
// (buildWithSource) and runs it.
func startWithSource(t *testing.T, src elements.Source) *Router {
	t.Helper()
	r := buildWithSource(t, src)
	r.run(Options{})
	return r
}

// buildWithSource builds the one-worker test graph and replaces its source
// by src (in the sources and among the instances, where the worker finds
// its Sleepers).
func buildWithSource(t *testing.T, src elements.Source) *Router {
	t.Helper()
	resetRtCounters()
	c := rtGraph{workers: 1, queues: 1, failOn: -1}
	r, err := build(c.graph(t), Options{})
	if err != nil {
		t.Fatal(err)
	}
	w := r.workers[0]
	for i, el := range w.inst {
		if el == elements.Element(w.sources[0]) {
			w.inst[i] = src
		}
	}
	w.sources[0] = src
	return r
}

// TestIdleSleepsOnFDs: an idle worker whose source gives a descriptor
// sleeps in ppoll: few rounds per second, ticks still about every
// millisecond, and a write to the descriptor gets its packet polled well
// within a millisecond (Go's timer sleep of a pinned worker takes about a
// millisecond here, whatever it is asked for).
func TestIdleSleepsOnFDs(t *testing.T) {
	fd := newEventfd(t)
	src := &fdSource{fd: fd}
	r := startWithSource(t, src)
	w := r.workers[0]
	defer func() {
		r.Stop()
		waitRouter(t, r, 5*time.Second)
	}()

	waitUntil(t, "the worker sleeps on the descriptor", 10*time.Second, func() bool { return w.wait.polled.Load() > 0 })
	// The cadence is measured over windows of 200 ms, up to ten: on a
	// loaded machine a window may find the worker's CPU taken. A sleeping
	// worker wakes at least for every tick, so a window with fewer than
	// 500 rounds/s is one in which it was not scheduled (under a load
	// average of 17 it woke 5-185 times a second, each time ticking: its
	// ppoll returned but it waited for a CPU). Such windows say nothing
	// about the cadence; if every window is like that, the test cannot
	// judge and says so. A worker that runs but does not tick fails.
	var s1 *Snapshot
	var rounds, ticks float64
	starved := true
	for try := 0; try < 10; try++ {
		s0, ticks0, t0 := r.Snapshot(), rtTicks.Load(), time.Now()
		time.Sleep(200 * time.Millisecond)
		var ticks1 int64
		var el time.Duration
		s1, ticks1, el = r.Snapshot(), rtTicks.Load(), time.Since(t0)
		rounds = float64(s1.Workers[0].Rounds-s0.Workers[0].Rounds) / el.Seconds()
		ticks = float64(ticks1-ticks0) / el.Seconds()
		t.Logf("idle: %.0f rounds/s, %.0f ticks/s", rounds, ticks)
		if rounds >= 500 {
			starved = false
		}
		if rounds <= 5000 && ticks >= 500 {
			break
		}
	}
	if w.wait.polled.Load() == 0 {
		t.Fatal("the worker never slept on the source's descriptor")
	}
	if src.prepared.Load() == 0 || src.woke.Load() == 0 {
		t.Fatalf("PrepareSleep %d, Woke %d calls", src.prepared.Load(), src.woke.Load())
	}
	// Spinning is millions of rounds per second; sleeping up to the next
	// tick is about a thousand.
	if rounds > 5000 {
		t.Errorf("idle worker made %.0f rounds/s: not sleeping", rounds)
	}
	if ticks < 500 && !starved {
		t.Errorf("%.0f ticks/s while sleeping: ticks lost their millisecond cadence", ticks)
	}
	if ws := s1.Workers[0]; ws.BusyNanos > ws.IdleNanos/10 {
		t.Errorf("idle worker: busy %v idle %v", time.Duration(ws.BusyNanos), time.Duration(ws.IdleNanos))
	}

	// Wake-up latency: a write while the worker sleeps (it has been idle
	// for a while) until Poll takes it; 40 samples, taken again (up to
	// three times) when a loaded machine delays the worker's wake-ups.
	var med time.Duration
	for try := 0; try < 3; try++ {
		med = wakeLatency(t, w, src)
		if med <= 500*time.Microsecond {
			break
		}
	}
	if med > 500*time.Microsecond {
		t.Errorf("median wake-up latency %v: the worker does not wake on its descriptor", med)
	}
	if starved {
		t.Skipf("the worker woke under 500 times a second in every window (last %.0f rounds/s): this machine gave it too little CPU to judge the tick cadence", rounds)
	}
}

// wakeLatency measures 40 wake-ups of the sleeping worker w by a write to
// src's descriptor and returns their median.
func wakeLatency(t *testing.T, w *worker, src *fdSource) time.Duration {
	t.Helper()
	var lat []time.Duration
	for i := 0; i < 40; i++ {
		time.Sleep(5 * time.Millisecond) // back to sleep after the last packet
		polled := w.wait.polled.Load()
		for w.wait.polled.Load() == polled { // wait for the next ppoll
			time.Sleep(50 * time.Microsecond)
		}
		got := src.got.Load()
		start := elements.Nanotime()
		src.signal(t)
		deadline := time.Now().Add(time.Second)
		for src.got.Load() == got {
			if time.Now().After(deadline) {
				t.Fatal("a write to the descriptor was not polled within 1s")
			}
			time.Sleep(10 * time.Microsecond)
		}
		lat = append(lat, time.Duration(src.seen.Load()-start))
	}
	slices.Sort(lat)
	med, p90 := lat[len(lat)/2], lat[len(lat)*9/10]
	t.Logf("wake latency: min %v median %v p90 %v max %v", lat[0], med, p90, lat[len(lat)-1])
	return med
}

// TestIdleWaitAllocs: preparing, sleeping on descriptors and waking
// allocates nothing.
func TestIdleWaitAllocs(t *testing.T) {
	fd := newEventfd(t)
	resetRtCounters()
	c := rtGraph{workers: 1, queues: 1, failOn: -1}
	r, err := build(c.graph(t), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	w := r.workers[0]
	src := &fdSource{fd: fd}
	w.sources[0] = src
	w.inst = append(w.inst, src)
	w.initWait()
	sleep := idleSleep
	w.lastTick = elements.Nanotime()
	published := 0
	publish := func(bool) { published++ }
	w.idleWait(w.lastTick, false, &sleep, publish) // grows the slices once
	allocs := testing.AllocsPerRun(100, func() {
		w.wait.timeout = time.Microsecond
		w.idleWait(elements.Nanotime(), false, &sleep, publish)
	})
	if allocs != 0 {
		t.Errorf("%.1f allocations per idle wait", allocs)
	}
	// A sleep past the tick: every Ticker a scheduler with nothing due.
	w.tickers = []elements.Ticker{&schedTicker{}}
	w.initWait()
	allocs = testing.AllocsPerRun(20, func() {
		w.wait.timeout = maxPollSleep
		w.lastTick = elements.Nanotime()
		w.idleWait(w.lastTick, false, &sleep, publish)
	})
	if allocs != 0 {
		t.Errorf("%.1f allocations per sleep past the tick", allocs)
	}
	if w.wait.long.Load() == 0 || published == 0 {
		t.Errorf("%d sleeps past the tick, %d publishes: the long sleep was not taken", w.wait.long.Load(), published)
	}
	if w.wait.polled.Load() == 0 {
		t.Error("never slept on the descriptor")
	}
}

// schedTicker is a TickScheduler whose next tick is set by the test
// (0: nothing due).
type schedTicker struct {
	next  atomic.Int64
	ticks atomic.Int64
}

func (s *schedTicker) Tick(int64) { s.ticks.Add(1) }

func (s *schedTicker) NextTick(now int64) int64 {
	if n := s.next.Load(); n != 0 {
		return n
	}
	return elements.NoWake
}

// idleRates measures, over windows of 200 ms (up to ten, until one in
// which the worker was scheduled: see TestIdleSleepsOnFDs), the worker's
// rounds and ticker's ticks per second.
func idleRates(t *testing.T, r *Router, st *schedTicker, ok func(rounds, ticks float64) bool) (rounds, ticks float64) {
	t.Helper()
	return idleRatesOf(t, r, &st.ticks, ok)
}

// idleRatesOf is idleRates for any Ticker that counts its ticks in n.
func idleRatesOf(t *testing.T, r *Router, n *atomic.Int64, ok func(rounds, ticks float64) bool) (rounds, ticks float64) {
	t.Helper()
	for try := 0; try < 10; try++ {
		s0, ticks0, t0 := r.Snapshot(), n.Load(), time.Now()
		time.Sleep(200 * time.Millisecond)
		s1, ticks1, el := r.Snapshot(), n.Load(), time.Since(t0)
		rounds = float64(s1.Workers[0].Rounds-s0.Workers[0].Rounds) / el.Seconds()
		ticks = float64(ticks1-ticks0) / el.Seconds()
		t.Logf("idle: %.0f rounds/s, %.0f ticks/s", rounds, ticks)
		if ok(rounds, ticks) {
			break
		}
	}
	return rounds, ticks
}

// TestIdleSleepsPastTick: a worker idle for a few milliseconds whose every
// Ticker is a TickScheduler with nothing due sleeps up to MaxIdleTick (about
// a hundred rounds and ticks a second, not a thousand), still wakes at
// once for a packet, and a snapshot does not wait for it; when a Ticker
// asks for the millisecond cadence, it gets it.
func TestIdleSleepsPastTick(t *testing.T) {
	fd := newEventfd(t)
	src := &fdSource{fd: fd}
	r := buildWithSource(t, src)
	w := r.workers[0]
	st := &schedTicker{}
	w.tickers = []elements.Ticker{st}
	r.run(Options{})
	defer func() {
		r.Stop()
		waitRouter(t, r, 5*time.Second)
	}()

	waitUntil(t, "the worker sleeps past its tick", 10*time.Second, func() bool { return w.wait.long.Load() > 0 })
	waitUntil(t, "the worker sleeps on the runtime's poller", 10*time.Second, func() bool { return w.wait.poller.parked.Load() > 0 })
	// Nothing due: ticks about every MaxIdleTick (100/s), rounds about as
	// many. A window with more than 500 ticks a second is the millisecond
	// cadence: the long sleep is not taken.
	rounds, ticks := idleRates(t, r, st, func(rounds, ticks float64) bool { return ticks >= 50 })
	if ticks > 300 || rounds > 600 {
		t.Errorf("nothing due: %.0f ticks/s, %.0f rounds/s; want about %d", ticks, rounds, time.Second/elements.MaxIdleTick)
	}
	if ticks < 50 {
		t.Errorf("nothing due: %.0f ticks/s; want at least one every MaxIdleTick (%v)", ticks, elements.MaxIdleTick)
	}

	// A snapshot while the worker sleeps past its tick returns without
	// waiting for it to wake.
	// (Waiting, the median would be about half of MaxIdleTick.)
	var took []time.Duration
	for i := 0; i < 21; i++ {
		time.Sleep(3 * time.Millisecond)
		t0 := time.Now()
		r.Snapshot()
		took = append(took, time.Since(t0))
	}
	slices.Sort(took)
	t.Logf("snapshot while asleep: median %v, longest %v", took[10], took[20])
	if took[10] >= elements.MaxIdleTick/4 {
		t.Errorf("snapshots took %v (median): they wait for the sleeping worker", took[10])
	}

	// A packet wakes it at once, long sleep or not.
	var med time.Duration
	for try := 0; try < 3; try++ {
		if med = wakeLatency(t, w, src); med <= 500*time.Microsecond {
			break
		}
	}
	if med > 500*time.Microsecond {
		t.Errorf("median wake-up latency %v from a sleep past the tick", med)
	}

	// A Ticker with work due every millisecond gets the millisecond cadence.
	stop := make(chan struct{})
	go func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			st.next.Store(elements.Nanotime())
			time.Sleep(200 * time.Microsecond)
		}
	}()
	defer close(stop)
	_, ticks = idleRates(t, r, st, func(_, ticks float64) bool { return ticks >= 500 })
	if ticks < 500 {
		t.Errorf("a Ticker due every millisecond got %.0f ticks/s", ticks)
	}
}

// plainTicker is a Ticker that does not say when it needs its next tick.
type plainTicker struct{ ticks atomic.Int64 }

func (p *plainTicker) Tick(int64) { p.ticks.Add(1) }

// TestIdleTicksWithoutScheduler: a worker with a Ticker that is not a
// TickScheduler keeps the millisecond tick while idle: it sleeps on its
// descriptors, but never past the tick.
func TestIdleTicksWithoutScheduler(t *testing.T) {
	fd := newEventfd(t)
	r := buildWithSource(t, &fdSource{fd: fd})
	w := r.workers[0]
	pt := &plainTicker{}
	w.tickers = []elements.Ticker{&schedTicker{}, pt}
	r.run(Options{})
	defer func() {
		r.Stop()
		waitRouter(t, r, 5*time.Second)
	}()
	waitUntil(t, "the worker sleeps on its descriptor", 10*time.Second, func() bool { return w.wait.polled.Load() > 0 })
	_, ticks := idleRatesOf(t, r, &pt.ticks, func(_, ticks float64) bool { return ticks >= 500 })
	if ticks < 500 {
		t.Errorf("a Ticker without NextTick got %.0f ticks/s idle; want the millisecond cadence", ticks)
	}
	if n := w.wait.long.Load(); n != 0 {
		t.Errorf("%d sleeps past the tick with a Ticker that cannot say when it is due", n)
	}
}

// TestIdleWithoutPoller: a worker whose runtime poller cannot be used (its
// absence emulated: the poller refused before the worker starts, as it is
// when epoll cannot watch a queue's descriptor) still sleeps past its tick,
// in ppoll, never parks, wakes at once for a packet, and its stats say why
// it sleeps in ppoll.
func TestIdleWithoutPoller(t *testing.T) {
	fd := newEventfd(t)
	src := &fdSource{fd: fd}
	r := buildWithSource(t, src)
	w := r.workers[0]
	w.tickers = []elements.Ticker{&schedTicker{}}
	w.wait.poller.fail(errors.New("emulated: no poller"))
	r.run(Options{})
	defer func() {
		r.Stop()
		waitRouter(t, r, 5*time.Second)
	}()

	waitUntil(t, "several sleeps past the tick", 10*time.Second, func() bool { return w.wait.long.Load() > 3*parkAfter })
	if n := w.wait.poller.parked.Load(); n != 0 {
		t.Errorf("parked %d times on a poller that refused", n)
	}
	if why := r.Snapshot().Workers[0].SleepFallback; !strings.Contains(why, "emulated: no poller") {
		t.Errorf("SleepFallback %q does not say why", why)
	}
	var med time.Duration
	for try := 0; try < 3; try++ {
		if med = wakeLatency(t, w, src); med <= 500*time.Microsecond {
			break
		}
	}
	if med > 500*time.Microsecond {
		t.Errorf("median wake-up latency %v from a sleep in ppoll past the tick", med)
	}
}
