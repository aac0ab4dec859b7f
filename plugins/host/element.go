package host

import (
	"context"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/junction-dataplane/junction/elements"
	"github.com/junction-dataplane/junction/packet"
	"github.com/junction-dataplane/junction/plugins/internal/wire"
)

// Instance states.
const (
	stateDown int32 = iota // the worker does not touch the region; the supervisor owns it
	stateUp                // the worker owns the region
	stateClosed
)

// Failure kinds.
const (
	failNone int32 = iota
	failCrash
	failTimeout
	failGarbage
)

// Restart backoff.
var (
	MinBackoff = 10 * time.Millisecond
	MaxBackoff = 2 * time.Second
	// healthy is how long a plugin must have run for its next failure to
	// restart the backoff from MinBackoff.
	healthy = 10 * time.Second
)

// spinNanos is how long the host spins on the response word before it
// blocks in ppoll: a batch of 256 takes the plugin a few microseconds, so
// most batches are answered while spinning and cost no system call.
const spinNanos = 50_000

// Instance is one worker's Plugin element.
type Instance struct {
	name     string
	cfg      *Config
	label    string
	nout     int
	bypass   bool
	readOnly bool
	timeout  int64

	outs       []*elements.Output
	st         *elements.Stats
	portB      []*packet.Batch
	chunk      *packet.Batch
	reasons    [wire.MaxReasons]elements.Reason
	nreasons   int
	pluginDrop elements.Reason
	failDrop   elements.Reason
	bypassed   *atomic.Uint64
	crashes    *atomic.Uint64
	timeouts   *atomic.Uint64
	garbage    *atomic.Uint64
	restarts   *atomic.Uint64
	startFails *atomic.Uint64

	region   *wire.Region
	reqBell  *wire.Bell
	respBell *wire.Bell
	// files own the region's memfd and the doorbells' eventfds (closing
	// them closes the fds); they are what each plugin process inherits.
	files []*os.File

	// Worker-owned while up.
	seq   uint32
	pidfd int
	ports [wire.MaxBatch]uint16
	lens  [wire.MaxBatch]uint16
	pfd   [2]unix.PollFd
	ts    unix.Timespec
	// what the last garbage was, for the supervisor's log line
	badIdx, badPort, badLen, badCap int

	state     atomic.Int32
	pid       atomic.Int64 // the current plugin process
	exited    atomic.Bool  // the supervisor saw the process exit
	lastFail  atomic.Int32
	kick      chan struct{}
	closing   chan struct{}
	closeOnce sync.Once
	// ctx ends when the instance closes: it abandons a start under way.
	ctx     context.Context
	cancel  context.CancelFunc
	supDone chan struct{}
	proc    *proc // owned by the supervisor (and New/Close)
	started time.Time

	// nextOuts are the outputs of the graph a reload is switching to
	// (reload.go): written by the reload, taken by TakeState on the
	// worker.
	nextOuts []*elements.Output
}

func newInstance(cfgAny any, ctx *elements.Context) (elements.Element, error) {
	cfg := cfgAny.(*Config)
	if cfg.notStarted {
		// Its ports came from the links, not from the plugin.
		return nil, fmt.Errorf("plugin %s: the graph was loaded without starting it (StartOnLoad off): not runnable", cfg.Path)
	}
	if cfg.outputs == 0 {
		// Built from a config that was not validated (a test, a tool):
		// validate now so that the ports and reasons are known.
		if err := cfg.Validate(); err != nil {
			return nil, err
		}
	}
	if x := keepInstance(ctx); x != nil {
		return x, nil // a reload keeps the running process (reload.go)
	}
	x := &Instance{
		name: ctx.Name, cfg: cfg, nout: cfg.outputs, bypass: cfg.OnFailure == "bypass",
		readOnly: cfg.info.ReadOnly, timeout: int64(cfg.Timeout),
		label: fmt.Sprintf("plugin %q (%s in %s, worker %d)", ctx.Name, cfg.Element, cfg.Path, ctx.Worker),
		outs:  ctx.Outputs, st: ctx.Stats, chunk: packet.NewBatch(wire.MaxBatch),
		kick: make(chan struct{}, 1), closing: make(chan struct{}), supDone: make(chan struct{}),
		pidfd: -1,
	}
	x.ctx, x.cancel = context.WithCancel(context.Background())
	if len(x.outs) < x.nout {
		return nil, fmt.Errorf("plugin %s: %d outputs bound, want %d", cfg.Element, len(x.outs), x.nout)
	}
	x.portB = make([]*packet.Batch, x.nout)
	for i := 1; i < x.nout; i++ {
		x.portB[i] = packet.NewBatch(wire.MaxBatch)
	}
	x.pluginDrop = x.st.Reason("plugin drop")
	for i, r := range cfg.info.Reasons {
		x.reasons[i] = x.st.Reason(r)
		x.nreasons++
	}
	if x.bypass {
		x.bypassed = x.st.Counter("bypassed")
	} else {
		x.failDrop = x.st.Reason("plugin failure")
	}
	x.crashes = x.st.Counter("crashes")
	x.timeouts = x.st.Counter("timeouts")
	x.garbage = x.st.Counter("garbage")
	x.restarts = x.st.Counter("restarts")
	x.startFails = x.st.Counter("start failures")

	fd, region, err := wire.Create("junction-" + ctx.Name)
	if err != nil {
		return nil, err
	}
	x.region = region
	x.files = append(x.files, os.NewFile(uintptr(fd), "junction-region"))
	if x.reqBell, err = wire.NewBell(); err == nil {
		x.files = append(x.files, os.NewFile(uintptr(x.reqBell.FD), "junction-request-bell"))
		if x.respBell, err = wire.NewBell(); err == nil {
			x.files = append(x.files, os.NewFile(uintptr(x.respBell.FD), "junction-response-bell"))
		}
	}
	if err == nil {
		err = x.start()
	}
	if err != nil {
		x.release()
		return nil, err
	}
	go x.supervise()
	return x, nil
}

// start launches a plugin process on the region and opens the element; on
// success the instance is up. Only the supervisor (or New) calls it, while
// the instance is down.
func (x *Instance) start() error {
	x.region.Reset()
	clearBell(x.reqBell)
	clearBell(x.respBell)
	p, err := launch(x.ctx, x.cfg.abs, x.cfg.SHA256, x.label, x.files)
	if err != nil {
		return err
	}
	ctx, cancel := callContext(x.ctx)
	defer cancel()
	text, _ := x.cfg.configText()
	r, err := p.rpc.Open(ctx, &wire.OpenRequest{Element: x.cfg.Element, Config: text, Batch: wire.MaxBatch})
	if err != nil {
		err = fmt.Errorf("open: %w", callError(err))
	}
	if err == nil {
		err = keyErrors(r.Errors)
	}
	if err == nil && (r.Info.Outputs != x.nout || len(r.Info.Reasons) != x.nreasons) {
		err = fmt.Errorf("%s: element %s changed since the graph was loaded (%d outputs, %d drop reasons; was %d, %d)",
			x.cfg.Path, x.cfg.Element, r.Info.Outputs, len(r.Info.Reasons), x.nout, x.nreasons)
	}
	if err != nil {
		p.kill()
		return err
	}
	x.proc = p
	x.pidfd = p.pidfd
	x.seq = 0
	x.pid.Store(int64(p.pid))
	x.started = time.Now()
	x.exited.Store(false)
	x.state.Store(stateUp)
	return nil
}

// PID returns the current plugin process's id (0 while it is down).
func (x *Instance) PID() int {
	if x.state.Load() != stateUp {
		return 0
	}
	return int(x.pid.Load())
}

// clearBell drains a doorbell without blocking.
func clearBell(b *wire.Bell) {
	fds := []unix.PollFd{{Fd: int32(b.FD), Events: unix.POLLIN}}
	if n, _ := unix.Poll(fds, 0); n > 0 {
		b.Clear()
	}
}

// Push sends the batch through the plugin. The hot path: per packet one
// copy into the region and one back (none back for a read-only element);
// per batch one atomic store, at most one doorbell, and a spin (then a
// ppoll) for the answer.
func (x *Instance) Push(in int, b *packet.Batch) {
	n := len(b.Pkts)
	if n == 0 {
		return
	}
	if n <= wire.MaxBatch {
		x.one(in, b)
		return
	}
	// Larger than the region: in pieces (no graph makes such batches, but
	// an element may concatenate).
	c := x.chunk
	for off := 0; off < n; off += wire.MaxBatch {
		c.Pkts = append(c.Pkts[:0], b.Pkts[off:min(n, off+wire.MaxBatch)]...)
		x.one(in, c)
		c.Reset()
	}
	b.Reset()
}

func (x *Instance) one(in int, b *packet.Batch) {
	if x.state.Load() != stateUp {
		x.fail(b)
		return
	}
	r := x.region
	for i, p := range b.Pkts {
		off := p.Headroom()
		slot := r.Slot(i)
		copy(slot[off:], p.Data)
		d := r.Desc(i)
		d.SetOff(off)
		d.SetLen(len(p.Data))
		d.SetPort(0)
		d.SetL3(p.L3)
		d.SetInDevice(p.InDevice)
		d.SetInQueue(p.InQueue)
		d.SetFlowHash(p.FlowHash)
	}
	n := len(b.Pkts)
	r.SetCount(uint32(n))
	r.SetInPort(uint32(in))
	x.seq++
	r.Req().Store(x.seq)
	if r.PluginSleeps().Load() != 0 {
		x.reqBell.Ring()
	}
	if f := x.wait(); f != failNone {
		x.down(f)
		x.fail(b)
		return
	}
	// Check everything before touching a packet: a batch is applied whole
	// or not at all.
	nout, nr := uint16(x.nout), uint16(x.nreasons)
	bad := r.Status() != wire.StatusOK
	for i := 0; i < n && !bad; i++ {
		d := r.Desc(i)
		port, ln := d.Port(), d.Len()
		if port >= nout {
			k := port & wire.ReasonMask
			if port&^wire.ReasonMask != wire.Drop || (k >= nr && k != wire.ReasonMask) {
				x.badIdx, x.badPort, x.badLen, x.badCap = i, int(port), ln, -1
				bad = true
				break
			}
		}
		if !x.readOnly {
			if c := cap(b.Pkts[i].Data); ln > c {
				x.badIdx, x.badPort, x.badLen, x.badCap = i, int(port), ln, c
				bad = true
				break
			}
		}
		x.ports[i], x.lens[i] = port, uint16(ln)
	}
	if bad {
		x.down(failGarbage)
		x.fail(b)
		return
	}
	k := 0
	for i, p := range b.Pkts {
		if !x.readOnly {
			ln := int(x.lens[i])
			off := p.Headroom()
			p.Data = p.Data[:ln]
			copy(p.Data, r.Slot(i)[off:off+ln])
		}
		switch port := x.ports[i]; {
		case port == 0:
			b.Pkts[k] = p
			k++
		case port < wire.Drop:
			x.portB[port].Add(p)
		case port&wire.ReasonMask == wire.ReasonMask:
			x.st.Drop(p, x.pluginDrop)
		default:
			x.st.Drop(p, x.reasons[port&wire.ReasonMask])
		}
	}
	b.Pkts = b.Pkts[:k]
	x.outs[0].Push(b)
	for port := 1; port < x.nout; port++ {
		x.outs[port].Push(x.portB[port])
	}
}

// wait waits for the plugin's answer to x.seq: spinning first, then in
// ppoll on the response doorbell and the process's pidfd, until the
// timeout.
func (x *Instance) wait() int32 {
	r := x.region
	resp := r.Resp()
	seq := x.seq
	t0 := elements.Nanotime()
	for i := 1; ; i++ {
		if resp.Load() == seq {
			return failNone
		}
		if i&7 == 0 {
			if elements.Nanotime()-t0 > spinNanos {
				break
			}
			// On a machine with more runnable threads than cores the
			// plugin may be queued behind us: let it run.
			unix.Syscall(unix.SYS_SCHED_YIELD, 0, 0, 0)
		}
	}
	deadline := t0 + x.timeout
	hs := r.HostSleeps()
	for {
		hs.Store(1)
		if resp.Load() == seq {
			hs.Store(0)
			return failNone
		}
		left := deadline - elements.Nanotime()
		if left <= 0 {
			hs.Store(0)
			return failTimeout
		}
		x.ts = unix.NsecToTimespec(left)
		x.pfd[0] = unix.PollFd{Fd: int32(x.respBell.FD), Events: unix.POLLIN}
		x.pfd[1] = unix.PollFd{Fd: int32(x.pidfd), Events: unix.POLLIN}
		_, err := unix.Ppoll(x.pfd[:], &x.ts, nil)
		hs.Store(0)
		if x.pfd[0].Revents != 0 {
			x.respBell.Clear()
		}
		if resp.Load() == seq {
			return failNone
		}
		if x.pfd[1].Revents != 0 {
			return failCrash
		}
		if err != nil && err != unix.EINTR {
			return failCrash
		}
	}
}

// down hands the instance to the supervisor after a failure.
func (x *Instance) down(kind int32) {
	switch kind {
	case failCrash:
		x.crashes.Add(1)
	case failTimeout:
		x.timeouts.Add(1)
	case failGarbage:
		x.garbage.Add(1)
	}
	x.lastFail.Store(kind)
	x.state.Store(stateDown)
	select {
	case x.kick <- struct{}{}:
	default:
	}
}

// fail applies on_failure to a batch the plugin did not (validly) process.
func (x *Instance) fail(b *packet.Batch) {
	if x.bypass {
		x.bypassed.Add(uint64(len(b.Pkts)))
		x.outs[0].Push(b)
		return
	}
	x.st.DropBatch(b, x.failDrop)
}

// Tick notices a plugin that died between batches, so that it is restarted
// before traffic needs it.
// NextTick: nothing due; a plugin's exit is noticed at the idle cadence
// (elements.MaxIdleTick) when the worker sleeps.
func (x *Instance) NextTick(int64) int64 { return elements.NoWake }

func (x *Instance) Tick(int64) {
	if x.state.Load() == stateUp && x.exited.Load() {
		x.down(failCrash)
	}
}

// supervise restarts the plugin after each failure, with backoff, and logs.
func (x *Instance) supervise() {
	defer close(x.supDone)
	backoff := MinBackoff
	for {
		var exited <-chan struct{}
		if x.proc != nil {
			exited = x.proc.exited
		}
		select {
		case <-x.closing:
			return
		case <-exited:
			// Died between batches: tell the worker (its next Tick or
			// batch takes the instance down), then wait for the kick.
			x.exited.Store(true)
			select {
			case <-x.closing:
				return
			case <-x.kick:
			}
		case <-x.kick:
		}
		if x.state.Load() != stateDown {
			continue
		}
		if time.Since(x.started) > healthy {
			backoff = MinBackoff
		}
		what := ""
		switch x.lastFail.Load() {
		case failCrash:
			what = "exited"
		case failTimeout:
			what = fmt.Sprintf("did not answer within %v (killed)", x.cfg.Timeout)
		case failGarbage:
			if x.badCap >= 0 {
				what = fmt.Sprintf("returned length %d for packet %d, beyond its buffer (%d bytes)", x.badLen, x.badIdx, x.badCap)
			} else {
				what = fmt.Sprintf("returned output port %#x for packet %d (it has %d outputs, %d drop reasons)", x.badPort, x.badIdx, x.nout, x.nreasons)
			}
			if x.region.Status() != wire.StatusOK {
				what = "reported a malformed request"
			}
		}
		policy := "dropped"
		if x.bypass {
			policy = "bypassed"
		}
		logf("%s: %s; batches %s until it is back; restarting in %v", x.label, what, policy, backoff)
		if x.proc != nil {
			x.proc.kill()
			x.proc = nil
		}
		// Restart until it works, backing off; a failed start is counted
		// each time but logged once per outage (the first, and the
		// recovery), so a plugin that stays broken cannot flood the log.
		fails, down := 0, time.Now()
		for {
			t := time.NewTimer(backoff)
			select {
			case <-x.closing:
				t.Stop()
				return
			case <-t.C:
			}
			err := x.start()
			backoff = min(backoff*2, MaxBackoff)
			if err == nil {
				x.restarts.Add(1)
				if fails > 0 {
					logf("%s: restarted (pid %d) after %d failed starts, %v down", x.label, x.proc.pid, fails, time.Since(down).Round(time.Millisecond))
				} else {
					logf("%s: restarted (pid %d)", x.label, x.proc.pid)
				}
				break
			}
			if err == errAborted {
				return
			}
			x.startFails.Add(1)
			fails++
			if fails == 1 {
				logf("%s: restart failed: %v; retrying with backoff up to %v, counted in \"start failures\", logged again when it is back", x.label, err, MaxBackoff)
			}
		}
	}
}

// Close stops the supervisor and the plugin and releases the region.
func (x *Instance) Close() error {
	x.closeOnce.Do(func() {
		x.state.Store(stateClosed)
		close(x.closing)
		x.cancel() // abandons a start under way: its process group is killed
		<-x.supDone
		x.release()
	})
	return nil
}

func (x *Instance) release() {
	x.cancel()
	if x.proc != nil {
		x.proc.kill()
		x.proc = nil
	}
	if x.region != nil {
		x.region.Unmap()
	}
	for _, f := range x.files {
		f.Close()
	}
	x.files = nil
}

var (
	_ elements.Element       = (*Instance)(nil)
	_ elements.Closer        = (*Instance)(nil)
	_ elements.TickScheduler = (*Instance)(nil)
)
