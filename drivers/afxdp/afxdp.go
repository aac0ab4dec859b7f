package afxdp

import (
	"errors"
	"fmt"
	"io"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/asavie/xdp"
	"golang.org/x/sys/unix"

	"github.com/junction-dataplane/junction/conf"
	"github.com/junction-dataplane/junction/drivers"
	"github.com/junction-dataplane/junction/drivers/afxdp/fastpath"
	"github.com/junction-dataplane/junction/drivers/internal/linkstats"
	"github.com/junction-dataplane/junction/drivers/internal/nlink"
	"github.com/junction-dataplane/junction/drivers/kfeature"
	"github.com/junction-dataplane/junction/drivers/rss"
	"github.com/junction-dataplane/junction/packet"
)

func init() {
	drivers.Register(drivers.Driver{
		Name:      "afxdp",
		NewConfig: newConfig,
		Exclusive: true, // one AF_XDP socket per queue, one XDP program
		Open:      open,
		Doc:       manual(),
	})
}

// progName is the name v0.3.3 gives its program: one found attached at
// Open (or one named fastpath.ProgramName) is a leftover of ours.
const progName = "xsk_ebpf"

// socketMu serialises xdp.DefaultSocketFlags, a package variable that
// v0.3.3 reads in NewSocket.
var socketMu sync.Mutex

// Device is an open afxdp device.
type Device struct {
	info    drivers.Info
	ifname  string
	log     opLog       // the operator's messages (OpenContext.Log)
	rss     *rss.Config // the device's RSS key and table (nil: it has none)
	ifindex int
	index   uint16

	queues []*queue
	txq    []*queue // by worker
	// retired are the queues a reload removed (reconfig.go): their
	// counters stay in Stats, and those whose frames the graph still held
	// at the reload are closed with the device.
	retired []*queue
	// cfg is the configuration the device runs (Queues as the last
	// reload set it); progQueues the size of the XDP program's xsks map.
	cfg        Config
	progQueues int
	// rxQueues is what RxQueues reports: len(queues), or during a
	// reload's preparation the count the new graph is built for.
	rxQueues atomic.Int32
	pending  *queueChange // the reload's prepared change, until Apply or Abort

	prog    *xdp.Program
	fp      *fastpath.Program // with fastpath = true: prog is fp's
	fpFinal fastpath.Counters // fp's counters when Close released it
	ft      *fastTable
	out     *egressOut   // as an output of the fast path: its state and counters
	tc      io.Closer    // the fast path's TC ingress program (tcx link), or nil
	watch   *attachWatch // its programs' watcher (attachwatch.go), or nil
	// fallbacks are the steps down from what the file asked of the fast
	// path (openFastPath), in words for the log and Modes.
	fallbacks []string
	locals    []netip.Addr // addresses marked local in ft
	mtu       int          // the interface's MTU at open: the fast path's limit for IPv6 datagrams out of it
	nl        *nlink.Conn
	link      *linkstats.Reader // the interface's own drop counters
	linkFD    int               // BPF link holding the program, or -1
	xdpFlags  uint32            // netlink attach flags, when linkFD < 0
	attached  bool
	// Mode is what Open settled on: "native" or "generic", and whether the
	// sockets are zero-copy.
	Mode     string
	ZeroCopy bool

	mu     sync.RWMutex // Close against Stats
	closed bool
}

var _ drivers.Device = (*Device)(nil)

func open(cfg any, ctx drivers.OpenContext) (drivers.Device, error) {
	c, ok := cfg.(*Config)
	if !ok {
		return nil, fmt.Errorf("afxdp: config is %T, want *afxdp.Config", cfg)
	}
	return Open(c, ctx)
}

// opLog writes a device's messages for the operator to the Log its
// driver's Open was given (OpenContext.Logf, which names the device
// first), each after the driver and the interface: "wan: afxdp (wan0):
// ...". The zero opLog discards them, as a nil Log does.
type opLog struct {
	ctx    drivers.OpenContext
	prefix string
}

func newOpLog(ctx drivers.OpenContext, driver, ifname string) opLog {
	return opLog{ctx: ctx, prefix: driver + " (" + ifname + "): "}
}

// Printf writes one message.
func (l opLog) Printf(format string, args ...any) {
	l.ctx.Logf("%s%s", l.prefix, fmt.Sprintf(format, args...))
}

// RSS is the device's RSS hash key and indirection table as read when it
// was opened (after rss = "symmetric" set its key), or nil when the device
// has none: then the queue a packet lands on cannot be predicted.
func (d *Device) RSS() *rss.Config { return d.rss }

// Open opens the device on the calling thread's network namespace.
func Open(c *Config, ctx drivers.OpenContext) (dev *Device, err error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	d := &Device{ifname: c.Interface, log: newOpLog(ctx, "afxdp", c.Interface), index: uint16(ctx.Index), linkFD: -1, cfg: *c}
	defer func() {
		if err != nil {
			d.Close()
			dev = nil
		}
	}()

	// Permission and kernel support first: one clear message.
	fd, serr := unix.Socket(unix.AF_XDP, unix.SOCK_RAW|unix.SOCK_CLOEXEC, 0)
	switch {
	case errors.Is(serr, unix.EPERM) || errors.Is(serr, unix.EACCES):
		return nil, conf.Errorf("interface", "%s: cannot open an AF_XDP socket: permission denied (run as root, or with CAP_NET_ADMIN, CAP_NET_RAW and CAP_BPF)", c.Interface)
	case errors.Is(serr, unix.EAFNOSUPPORT):
		return nil, conf.Errorf("interface", "%s: this kernel has no AF_XDP sockets (use driver = \"afpacket\")", c.Interface)
	case serr != nil:
		return nil, conf.Errorf("interface", "%s: AF_XDP socket: %v", c.Interface, serr)
	}
	unix.Close(fd)

	if d.nl, err = nlink.Open(); err != nil {
		return nil, conf.Errorf("interface", "%s: %v", c.Interface, err)
	}
	link, err := d.nl.LinkByName(c.Interface)
	if errors.Is(err, nlink.ErrNoLink) {
		return nil, conf.Errorf("interface", "no interface %q in this network namespace (run the forwarder in the interface's namespace: ip netns exec NS forwarder run ...)", c.Interface)
	}
	if err != nil {
		return nil, conf.Errorf("interface", "%v", err)
	}
	d.ifindex = link.Index
	d.mtu = link.MTU
	if lnl, err := nlink.Open(); err == nil {
		d.link = linkstats.Open(lnl, d.ifindex)
	}

	nq := c.Queues
	if nq == 0 {
		nq = link.RxQueues
		if ch, ok := nlink.Channels(c.Interface); ok && ch < nq {
			nq = ch
		}
	}
	if nq > link.RxQueues {
		return nil, conf.Errorf("queues", "%d queues, but interface %q has %d RX queues", nq, c.Interface, link.RxQueues)
	}

	mac := ctx.MAC
	if mac == (packet.MAC{}) && len(link.MAC) == 6 {
		copy(mac[:], link.MAC)
	}
	d.info = drivers.Info{Name: ctx.Name, Driver: "afxdp", MAC: mac, Addresses: ctx.Addresses, MTU: link.MTU}

	d.rss = rss.Setup(c.Interface, c.RSS == "symmetric", d.log.Printf)

	if err := d.removeStale(link); err != nil {
		return nil, conf.Errorf("interface", "%v", err)
	}
	d.progQueues = link.RxQueues
	if c.FastPath {
		if err := d.openFastPath(link.RxQueues, link.Kind); err != nil {
			if _, ok := errors.AsType[*conf.KeyError](err); ok {
				return nil, err
			}
			return nil, conf.Errorf("fastpath", "%s: opening the fast path: %v", c.Interface, err)
		}
	} else if d.prog, err = newProgram(link.RxQueues); err != nil {
		return nil, conf.Errorf("interface", "%s: loading the XDP program: %v", c.Interface, err)
	}
	if err := d.attach(c.Mode); err != nil {
		return nil, err
	}
	if err := d.openQueues(c, nq, ctx.Workers); err != nil {
		return nil, err
	}
	d.startAttachWatch()
	return d, nil
}

// removeStale replaces a leftover program of ours; it refuses to touch a
// program someone else attached.
func (d *Device) removeStale(link nlink.Link) error {
	if link.XDPAttached == nlink.AttachedNone {
		return nil
	}
	type att struct {
		id    uint32
		flags uint32
	}
	var progs []att
	switch link.XDPAttached {
	case nlink.AttachedDrv:
		progs = []att{{link.XDPProgID, unix.XDP_FLAGS_DRV_MODE}}
	case nlink.AttachedSkb:
		progs = []att{{link.XDPProgID, unix.XDP_FLAGS_SKB_MODE}}
	case nlink.AttachedHw:
		return fmt.Errorf("%s: an offloaded (hw) XDP program id %d is attached; remove it first (ip link set dev %s xdpoffload off)", d.ifname, link.XDPProgID, d.ifname)
	default:
		if link.XDPDrvProgID != 0 {
			progs = append(progs, att{link.XDPDrvProgID, unix.XDP_FLAGS_DRV_MODE})
		}
		if link.XDPSkbProgID != 0 {
			progs = append(progs, att{link.XDPSkbProgID, unix.XDP_FLAGS_SKB_MODE})
		}
	}
	for _, p := range progs {
		name := nlink.ProgName(p.id)
		if name != progName && name != fastpath.ProgramName {
			return fmt.Errorf("%s: XDP program %q (id %d) is already attached and was not loaded by Junction; remove it first (ip link set dev %s xdp off)", d.ifname, name, p.id, d.ifname)
		}
		err := d.nl.SetXDP(d.ifindex, -1, p.flags)
		if errors.Is(err, unix.EBUSY) {
			return fmt.Errorf("%s: XDP program id %d is held by a running process (another forwarder on this interface?): %v", d.ifname, p.id, err)
		}
		if err != nil {
			return fmt.Errorf("%s: removing the stale XDP program id %d: %v", d.ifname, p.id, err)
		}
	}
	return nil
}

func newProgram(queues int) (*xdp.Program, error) {
	p, err := xdp.NewProgram(queues)
	if err != nil && (errors.Is(err, unix.EPERM) || containsEPERM(err)) {
		// Kernels before 5.11 charge BPF maps to RLIMIT_MEMLOCK.
		_ = unix.Setrlimit(unix.RLIMIT_MEMLOCK, &unix.Rlimit{Cur: unix.RLIM_INFINITY, Max: unix.RLIM_INFINITY})
		p, err = xdp.NewProgram(queues)
	}
	return p, err
}

func containsEPERM(err error) bool {
	return strings.Contains(err.Error(), "operation not permitted")
}

// attach attaches the program in the requested mode: a BPF link when the
// kernel has them, else netlink.
func (d *Device) attach(mode string) error {
	noLink := kfeature.Have(kfeature.XDPLink) != nil
	try := func(flags uint32) error {
		if !noLink {
			fd, err := nlink.LinkCreateXDP(d.prog.Program.FD(), d.ifindex, flags)
			if err == nil {
				d.linkFD, d.attached = fd, true
				return nil
			}
			if !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOSYS) && !errors.Is(err, unix.EPERM) {
				return err
			}
		}
		// No XDP BPF links (kernel < 5.9): netlink, detached by Close.
		if err := d.nl.SetXDP(d.ifindex, d.prog.Program.FD(), flags|unix.XDP_FLAGS_UPDATE_IF_NOEXIST); err != nil {
			return err
		}
		d.xdpFlags, d.attached = flags, true
		return nil
	}
	switch mode {
	case "native":
		if err := try(unix.XDP_FLAGS_DRV_MODE); err != nil {
			if errors.Is(err, unix.EOPNOTSUPP) {
				return noNativeXDP(d.ifname)
			}
			return conf.Errorf("mode", "%s: native XDP not available: %v (use mode = \"generic\" or \"auto\")", d.ifname, err)
		}
		d.Mode = "native"
	case "generic":
		if err := try(unix.XDP_FLAGS_SKB_MODE); err != nil {
			return conf.Errorf("mode", "%s: generic XDP: %v", d.ifname, err)
		}
		d.Mode = "generic"
	default:
		if err := try(unix.XDP_FLAGS_DRV_MODE); err == nil {
			d.Mode = "native"
			return nil
		}
		if err := try(unix.XDP_FLAGS_SKB_MODE); err != nil {
			return conf.Errorf("interface", "%s: attaching the XDP program: %v", d.ifname, err)
		}
		d.Mode = "generic"
	}
	return nil
}

// detach removes the program (idempotent).
func (d *Device) detach() error {
	if !d.attached {
		return nil
	}
	d.attached = false
	if d.linkFD >= 0 {
		err := unix.Close(d.linkFD)
		d.linkFD = -1
		return err
	}
	return d.nl.SetXDP(d.ifindex, -1, d.xdpFlags)
}

func (d *Device) openQueues(c *Config, nq, workers int) error {
	if workers < 1 {
		workers = 1
	}
	opts := xdp.SocketOptions{
		NumFrames: c.Frames, FrameSize: packet.BufSize,
		FillRingNumDescs: c.Ring, CompletionRingNumDescs: c.Ring,
		RxRingNumDescs: c.Ring, TxRingNumDescs: c.Ring,
	}
	// Zero-copy is tried only with native XDP, and only on the first
	// queue: the answer is the same for the others.
	zc := d.Mode == "native"
	for q := 0; q < nq; q++ {
		xsk, err := newSocket(d.ifindex, q, &opts, zc)
		if err != nil && zc {
			zc = false
			xsk, err = newSocket(d.ifindex, q, &opts, false)
		}
		if err != nil {
			return conf.Errorf("interface", "%s: AF_XDP socket on queue %d: %v", d.ifname, q, err)
		}
		d.ZeroCopy = zc
		qu, err := newQueue(q, xsk, c.Frames, c.Ring)
		if err != nil {
			xsk.Close()
			return conf.Errorf("interface", "%s: queue %d: %v", d.ifname, q, err)
		}
		qu.maxFrame = drivers.MaxFrame(d.mtu)
		d.queues = append(d.queues, qu)
		if err := d.prog.Register(q, xsk.FD()); err != nil {
			return conf.Errorf("interface", "%s: registering queue %d: %v", d.ifname, q, err)
		}
		qu.refill()
	}
	// Transmit queues per worker and which sockets are shared.
	d.txq = txQueues(d.queues, workers)
	d.rxQueues.Store(int32(len(d.queues)))
	return nil
}

func newSocket(ifindex, q int, opts *xdp.SocketOptions, zc bool) (*xdp.Socket, error) {
	socketMu.Lock()
	defer socketMu.Unlock()
	xdp.DefaultSocketFlags = unix.XDP_COPY
	if zc {
		xdp.DefaultSocketFlags = unix.XDP_ZEROCOPY
	}
	// A socket of a process that just died (SIGKILL, then a restart)
	// holds the queue until the kernel finishes releasing it, which it
	// does asynchronously: the bind fails with EBUSY for a moment.
	deadline := time.Now().Add(bindRetryFor)
	for {
		s, err := xdp.NewSocket(ifindex, q, opts)
		if err == nil || !isBusy(err) || time.Now().After(deadline) {
			return s, err
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// bindRetryFor is how long newSocket retries a busy queue.
const bindRetryFor = 3 * time.Second

// isBusy reports an EBUSY from v0.3.3, which formats the errno into its
// message instead of wrapping it.
func isBusy(err error) bool {
	return errors.Is(err, unix.EBUSY) || strings.Contains(err.Error(), unix.EBUSY.Error())
}

// RxQueues implements drivers.Device.
func (d *Device) RxQueues() int { return int(d.rxQueues.Load()) }

// Drained implements drivers.Device: an interface never drains.
func (d *Device) Drained(int) bool { return false }

// Info implements drivers.Device.
func (d *Device) Info() drivers.Info { return d.info }

// Receive implements drivers.Device.
func (d *Device) Receive(q int, b *packet.Batch) int {
	if q < 0 || q >= len(d.queues) {
		return 0
	}
	return d.queues[q].receive(d.index, b)
}

// Transmit implements drivers.Device.
func (d *Device) Transmit(w int, b *packet.Batch) {
	if w < 0 || w >= len(d.txq) {
		// Not a worker this device was opened for: nothing safe to use.
		if len(d.queues) > 0 {
			d.queues[0].txDropped.Add(uint64(len(b.Pkts)))
		}
		b.FreeAll()
		return
	}
	d.txq[w].transmit(b)
}

// Flush waits (up to 200 ms) for the TX rings to drain. It is called when
// the workers have stopped. Queues a reload removed are flushed too: their
// last frames may have completed after the reload gave up waiting.
func (d *Device) Flush() error {
	deadline := time.Now().Add(200 * time.Millisecond)
	for _, q := range append(d.queues[:len(d.queues):len(d.queues)], d.retired...) {
		for q.flushStep() && time.Now().Before(deadline) {
			time.Sleep(50 * time.Microsecond)
		}
	}
	return nil
}

// Close detaches the program and closes the sockets. Packets the graph
// still holds must not be used afterwards: their memory is unmapped.
func (d *Device) Close() error {
	// Before the lock: the watcher may be waiting for it to attach the
	// program again.
	d.stopAttachWatch()
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return nil
	}
	d.closed = true
	var errs []error
	if err := d.detach(); err != nil {
		errs = append(errs, fmt.Errorf("%s: detaching the XDP program: %w", d.ifname, err))
	}
	for _, q := range append(d.queues[:len(d.queues):len(d.queues)], d.retired...) {
		if err := q.close(); err != nil {
			errs = append(errs, err)
		}
	}
	if d.fp != nil {
		d.fpFinal, _ = d.fp.Counters() // for Stats after Close (the exit table)
	}
	if d.prog != nil {
		if err := d.prog.Close(); err != nil {
			errs = append(errs, err)
		}
	}
	if err := d.closeFastPath(); err != nil {
		errs = append(errs, err)
	}
	if err := d.nl.Close(); err != nil {
		errs = append(errs, err)
	}
	if err := d.link.Close(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// Stats implements drivers.Device.
func (d *Device) Stats() []drivers.Counter {
	d.mu.RLock()
	defer d.mu.RUnlock()
	var s [17]uint64
	for _, q := range d.retired {
		q.reapRetired()
	}
	for _, q := range append(d.queues[:len(d.queues):len(d.queues)], d.retired...) {
		s[0] += q.rxPkts.Load()
		s[1] += q.rxBytes.Load()
		s[2] += q.txPkts.Load()
		s[3] += q.txBytes.Load()
		s[4] += q.txDropped.Load()
		s[5] += q.txNoBuf.Load()
		s[6] += q.txKickFailed.Load()
		s[16] += q.txUnconfirmed.Load()
		s[7] += q.poolEmpty.Load()
		s[8] += q.rxInvalid.Load()
		s[14] += q.txTooLong.Load()
		k := q.kernelStats() // the last reading once closed
		s[9] += k.Rx_dropped
		s[10] += k.Rx_ring_full
		s[11] += k.Rx_fill_ring_empty_descs
		s[12] += k.Tx_invalid_descs
		s[13] += k.Tx_ring_empty_descs
		s[15] += q.rxRemoved.Load()
	}
	fc := d.fpFinal
	if d.fp != nil && !d.closed {
		fc, _ = d.fp.Counters()
	}
	cs := []drivers.Counter{
		{Name: "rx_packets", Value: s[0]},
		{Name: "rx_bytes", Value: s[1]},
		{Name: "tx_packets", Value: s[2]},
		{Name: "tx_bytes", Value: s[3]},
		{Name: "tx_dropped", Value: s[4]},
		{Name: "tx_dropped_nobuf", Value: s[5]},
		{Name: "tx_kicks_failed", Value: s[6]},
		{Name: drivers.CounterTxUnconfirmed, Value: s[16]},
		{Name: "rx_pool_empty", Value: s[7]},
		{Name: "rx_invalid", Value: s[8]},
		{Name: "rx_kernel_dropped", Value: s[9]},
		{Name: "rx_ring_full", Value: s[10]},
		{Name: "rx_fill_empty", Value: s[11]},
		{Name: "tx_invalid_descs", Value: s[12]},
		{Name: "tx_ring_empty", Value: s[13]},
		{Name: drivers.CounterTxTooLong, Value: s[14]},
		{Name: "rx_dropped_queue_removed", Value: s[15]},
	}
	cs = d.link.Append(cs)
	if d.watch != nil {
		cs = append(cs, drivers.Counter{Name: "xdp_reattached", Value: d.watch.reattached.Load()})
		if d.watch.tcID != 0 {
			cs = append(cs, drivers.Counter{Name: "fastpath_tc_lost", Value: d.watch.tcLost.Load()})
		}
	}
	if d.ft != nil {
		cs = append(cs, drivers.Counter{Name: "fastpath_fallbacks", Value: uint64(len(d.fallbacks))})
	}
	if d.fp != nil {
		cs = appendProgCounters(cs, fc)
		cs = append(cs, d.out.counters()...)
	}
	return cs
}

// appendProgCounters appends a fast-path program's counters c (XDP's or
// TC's) to cs as the device's counters.
func appendProgCounters(cs []drivers.Counter, c fastpath.Counters) []drivers.Counter {
	cs = append(cs, drivers.Counter{Name: drivers.CounterFastPathForwarded, Value: c.Forwarded},
		drivers.Counter{Name: "fastpath_forwarded_bytes", Value: c.ForwardedBytes},
		drivers.Counter{Name: "fastpath_to_graph", Value: c.Slow},
		drivers.Counter{Name: "fastpath_runs", Value: c.Runs},
		drivers.Counter{Name: "fastpath_run_ns", Value: c.RunNanos},
		drivers.Counter{Name: "local_rate_passed", Value: c.LocalPassed})
	for i, n := range fastpath.PoliceClasses {
		cs = append(cs, drivers.Counter{Name: "local_rate_dropped_" + n, Value: c.Policed[i]})
	}
	return cs
}

// Modes implements drivers.Moder: the XDP attach mode, zero-copy, and
// with fastpath the fast path's effective mode ("tc", "xdp" or "off",
// see fastPathMode) with the fallbacks that led to it.
func (d *Device) Modes() []drivers.Mode {
	zc := "no"
	if d.ZeroCopy {
		zc = "yes"
	}
	ms := []drivers.Mode{{Name: "xdp", Value: d.Mode}, {Name: "zero_copy", Value: zc}}
	if m := d.fastPathMode(); m != "" {
		ms = append(ms, drivers.Mode{Name: "fastpath", Value: m, Note: strings.Join(d.fallbacks, "; ")})
	}
	return ms
}

var _ drivers.Moder = (*Device)(nil)

// frameIndex is a packet's frame number in a UMEM starting at base.
func frameIndex(p *packet.Packet, base uintptr) uint64 {
	return uint64(uintptr(unsafe.Pointer(unsafe.SliceData(p.Buffer())))-base) / packet.BufSize
}
