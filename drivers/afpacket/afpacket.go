package afpacket

import (
	"errors"
	"fmt"
	"math/bits"
	"net"
	"slices"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"

	"github.com/junction-dataplane/junction/conf"
	"github.com/junction-dataplane/junction/drivers"
	"github.com/junction-dataplane/junction/drivers/afxdp"
	"github.com/junction-dataplane/junction/drivers/internal/linkstats"
	"github.com/junction-dataplane/junction/drivers/internal/nlink"
	"github.com/junction-dataplane/junction/packet"
)

func init() {
	drivers.Register(drivers.Driver{
		Name:      "afpacket",
		NewConfig: newConfig,
		Open:      open,
		Doc:       manual(),
	})
}

// Config is the afpacket driver's keys (see manual).
type Config struct {
	Interface string `toml:"interface"`
	Queues    int    `toml:"queues"`
	Frames    int    `toml:"frames"`
	BlockSize int    `toml:"block_size"`
	// FastPath: the in-kernel fast path in TC (see manual): "off",
	// "auto" or "tc".
	FastPath string `toml:"fastpath"`
	// LocalRate and LocalBurst: the fast path's policing of traffic
	// for the router (see manual), as the afxdp driver's keys.
	LocalRate  string `toml:"local_rate"`
	LocalBurst int    `toml:"local_burst"`
}

const (
	frameSize = 2048
	// PoolSize is the number of packets in each queue's pool.
	PoolSize  = 4096
	maxQueues = 64
	// hdrLen is TPACKET_ALIGN(sizeof(tpacket2_hdr)) + sizeof(sockaddr_ll)
	// rounded: where the kernel puts the frame in a ring slot is tp_mac;
	// this only bounds the largest frame for the doc.
	txRetries = 4
)

func newConfig() any {
	return &Config{Frames: 4096, BlockSize: 1 << 20, FastPath: "off",
		LocalRate: afxdp.DefaultLocalRate, LocalBurst: afxdp.DefaultLocalBurst}
}

// fastPathKey is c's fastpath, "" (a Config built in code) read as "off".
func (c *Config) fastPathKey() string {
	if c.FastPath == "" {
		return "off"
	}
	return c.FastPath
}

func pow2(n int) bool { return n > 0 && bits.OnesCount(uint(n)) == 1 }

// Validate checks the keys without touching the system.
func (c *Config) Validate() error {
	if err := drivers.ValidInterfaceName(c.Interface); err != nil {
		return err
	}
	if c.Queues < 0 || c.Queues > maxQueues {
		return conf.Errorf("queues", "%d out of range 0..%d (0 = one per worker)", c.Queues, maxQueues)
	}
	if !pow2(c.BlockSize) || c.BlockSize < 4096 || c.BlockSize > 1<<26 {
		return conf.Errorf("block_size", "%d: must be a power of two in 4096..67108864", c.BlockSize)
	}
	if !pow2(c.Frames) || c.Frames > 1<<20 {
		return conf.Errorf("frames", "%d: must be a power of two up to 1048576", c.Frames)
	}
	if c.Frames*frameSize < c.BlockSize {
		return conf.Errorf("frames", "%d frames of %d bytes do not fill one block of %d bytes", c.Frames, frameSize, c.BlockSize)
	}
	if !slices.Contains(afxdp.TCKeyValues, c.fastPathKey()) {
		return conf.Errorf("fastpath", "%q: must be \"off\", \"auto\" or \"tc\"", c.FastPath)
	}
	if _, err := afxdp.ParseLocalRate(c.LocalRate, c.LocalBurst); err != nil {
		return err
	}
	return nil
}

// Device is an open afpacket device.
type Device struct {
	info    drivers.Info
	ifname  string
	ifindex int
	index   uint16
	rx      []*rxQueue
	tx      []*txSocket
	link    *linkstats.Reader // the interface's own drop counters
	// cfg and groups are the configuration and the fanout group ids the
	// device runs, one per socket of a queue (0: one queue, no group
	// yet), for a reload that adds RX queues (reconfig.go); pending is
	// that reload's prepared change until Apply or Abort: RxQueues counts
	// its queues. typed: the queues' sockets are bound to bindProtos.
	cfg     Config
	groups  []int
	typed   bool
	pending *rxGrow
	// tcp is the fast path in TC (fastpath key), or nil; rps, the RX
	// queues whose RPS it turned on (rps.go), restored at Close.
	tcp *afxdp.TCPort
	rps []rpsQueue
	// shrinkTo is the RX socket count a prepared reload lowers the
	// device to (0: none pending); retired are the sockets such reloads
	// closed, whose counters stay in the totals; rxRemoved counts the
	// frames those sockets still held when they closed.
	shrinkTo  int
	retired   []*rxQueue
	rxRemoved atomic.Uint64
	// abortDrops counts what added sockets of a failed reload had
	// received when they were closed.
	abortDrops atomic.Uint64

	mu     sync.Mutex // Close against Stats
	closed bool
}

var _ drivers.Device = (*Device)(nil)

func open(cfg any, ctx drivers.OpenContext) (drivers.Device, error) {
	c, ok := cfg.(*Config)
	if !ok {
		return nil, fmt.Errorf("afpacket: config is %T, want *afpacket.Config", cfg)
	}
	return Open(c, ctx)
}

func htons(v uint16) uint16 { return v<<8 | v>>8 }

// Open opens the device in the calling thread's network namespace.
func Open(c *Config, ctx drivers.OpenContext) (dev *Device, err error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	workers := ctx.Workers
	if workers < 1 {
		workers = 1
	}
	d := &Device{ifname: c.Interface, index: uint16(ctx.Index), cfg: *c}
	defer func() {
		if err != nil {
			d.Close()
			dev = nil
		}
	}()
	fd, serr := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, 0)
	switch {
	case errors.Is(serr, unix.EPERM) || errors.Is(serr, unix.EACCES):
		return nil, conf.Errorf("interface", "%s: cannot open an AF_PACKET socket: permission denied (run as root or with CAP_NET_RAW)", c.Interface)
	case serr != nil:
		return nil, conf.Errorf("interface", "%s: AF_PACKET socket: %v", c.Interface, serr)
	}
	unix.Close(fd)
	ifi, err := net.InterfaceByName(c.Interface)
	if err != nil {
		return nil, conf.Errorf("interface", "no interface %q in this network namespace (run the forwarder in the interface's namespace: ip netns exec NS forwarder run ...)", c.Interface)
	}
	d.ifindex = ifi.Index
	if nl, err := nlink.Open(); err == nil {
		d.link = linkstats.Open(nl, d.ifindex)
	}
	mac := ctx.MAC
	if mac == (packet.MAC{}) && len(ifi.HardwareAddr) == 6 {
		copy(mac[:], ifi.HardwareAddr)
	}
	d.info = drivers.Info{Name: ctx.Name, Driver: "afpacket", MAC: mac, Addresses: ctx.Addresses, MTU: ifi.MTU}

	if key := c.fastPathKey(); key != "off" {
		kind := ""
		if nl, err := nlink.Open(); err == nil {
			if l, err := nl.LinkByIndex(d.ifindex); err == nil {
				kind = l.Kind
			}
			nl.Close()
		}
		pol, _ := afxdp.ParseLocalRate(c.LocalRate, c.LocalBurst) // checked by Validate
		if d.tcp, err = afxdp.OpenTCPort("afpacket", ctx, d.info, c.Interface, d.ifindex, kind, ifi.MTU, key, pol); err != nil {
			if _, ok := errors.AsType[*conf.KeyError](err); ok {
				return nil, err
			}
			return nil, conf.Errorf("fastpath", "%s: %v", c.Interface, err)
		}
		d.typed = d.tcp.Mode().Value == "tc"
		if d.typed && kind == "veth" {
			// Each flow's frames in one CPU's backlog, in order (rps.go).
			if d.rps, err = setRPS(c.Interface, d.ifindex, ifi.HardwareAddr.String()); err != nil {
				ctx.Logf("afpacket (%s): fast path: RPS not turned on (%v): a sender that moves between CPUs may see its flows reordered", c.Interface, err)
				err = nil
			} else if len(d.rps) > 0 {
				ctx.Logf("afpacket (%s): fast path: RPS on for its RX queues (rps_cpus of %d), so that each flow keeps its order through the TC program; restored at exit", c.Interface, len(d.rps))
			}
		}
	}

	nq := c.Queues
	if nq == 0 {
		nq = workers
	}
	for q := 0; q < nq; q++ {
		r, err := newRxQueue(d.ifindex, q, c, d.typed)
		if err != nil {
			return nil, conf.Errorf("interface", "%s: RX queue %d: %v", c.Interface, q, err)
		}
		d.rx = append(d.rx, r)
		if d.groups == nil {
			d.groups = make([]int, len(r.sockets()))
		}
		if nq > 1 {
			if err = r.join(d.groups); err != nil {
				return nil, conf.Errorf("queues", "%s: PACKET_FANOUT: %v", c.Interface, err)
			}
		}
	}
	for w := 0; w < workers; w++ {
		t, err := newTxSocket(d.ifindex)
		if err != nil {
			return nil, conf.Errorf("interface", "%s: TX socket: %v", c.Interface, err)
		}
		t.maxFrame = drivers.MaxFrame(ifi.MTU)
		d.tx = append(d.tx, t)
	}
	return d, nil
}

// RxQueues implements drivers.Device.
func (d *Device) RxQueues() int {
	if g := d.pending; g != nil {
		return len(d.rx) + len(g.added)
	}
	if d.shrinkTo > 0 {
		return d.shrinkTo
	}
	return len(d.rx)
}

// Drained implements drivers.Device: an interface never drains.
func (d *Device) Drained(int) bool { return false }

// Info implements drivers.Device.
func (d *Device) Info() drivers.Info { return d.info }

// Receive implements drivers.Device.
func (d *Device) Receive(q int, b *packet.Batch) int {
	if q < 0 || q >= len(d.rx) {
		return 0
	}
	return d.rx[q].receive(d.index, b)
}

// Transmit implements drivers.Device.
func (d *Device) Transmit(w int, b *packet.Batch) {
	if w < 0 || w >= len(d.tx) {
		if len(d.tx) > 0 {
			d.tx[0].dropped.Add(uint64(len(b.Pkts)))
		}
		b.FreeAll()
		return
	}
	d.tx[w].transmit(b)
}

// Flush implements drivers.Device: sendmmsg has handed everything to the
// kernel already.
func (d *Device) Flush() error { return nil }

// Close closes the sockets and unmaps the rings.
func (d *Device) Close() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return nil
	}
	d.closed = true
	var errs []error
	for _, r := range d.rx {
		r.readKernelStats() // the last drops, for the exit table
		if err := r.close(); err != nil {
			errs = append(errs, err)
		}
	}
	for _, t := range d.tx {
		if err := unix.Close(t.fd); err != nil {
			errs = append(errs, err)
		}
	}
	if err := d.link.Close(); err != nil {
		errs = append(errs, err)
	}
	if d.tcp != nil {
		if err := d.tcp.Close(); err != nil {
			errs = append(errs, err)
		}
	}
	if err := restoreRPS(d.rps); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// Stats implements drivers.Device.
func (d *Device) Stats() []drivers.Counter {
	d.mu.Lock()
	defer d.mu.Unlock()
	var rxP, rxB, empty, trunc, own, kdrop, txP, txB, txD, txE, txL uint64
	for _, r := range append(d.rx[:len(d.rx):len(d.rx)], d.retired...) {
		if !d.closed {
			r.readKernelStats()
		}
		p, b, e, t, o, k := r.counts()
		rxP, rxB, empty, trunc, own, kdrop = rxP+p, rxB+b, empty+e, trunc+t, own+o, kdrop+k
	}
	for _, t := range d.tx {
		txP += t.pkts.Load()
		txB += t.bytes.Load()
		txD += t.dropped.Load()
		txE += t.errors.Load()
		txL += t.tooLong.Load()
	}
	cs := []drivers.Counter{
		{Name: "rx_packets", Value: rxP},
		{Name: "rx_bytes", Value: rxB},
		{Name: "tx_packets", Value: txP},
		{Name: "tx_bytes", Value: txB},
		{Name: "tx_dropped", Value: txD},
		{Name: "tx_errors", Value: txE},
		{Name: "rx_pool_empty", Value: empty},
		{Name: "rx_truncated", Value: trunc},
		{Name: "rx_own_skipped", Value: own},
		{Name: "rx_kernel_dropped", Value: kdrop},
		{Name: drivers.CounterTxTooLong, Value: txL},
		{Name: "rx_dropped_reload_aborted", Value: d.abortDrops.Load()},
		{Name: "rx_dropped_queue_removed", Value: d.rxRemoved.Load()},
	}
	cs = d.link.Append(cs)
	if d.tcp != nil {
		cs = append(cs, d.tcp.Counters()...)
	}
	return cs
}

// TCPort implements afxdp.TCPorter: the device's fast path in TC, or nil.
func (d *Device) TCPort() *afxdp.TCPort { return d.tcp }

// FastPathTable implements drivers.FastPath: the fast path's shared
// table, or nil without the fastpath key.
func (d *Device) FastPathTable() drivers.FastPathTable {
	if d.tcp == nil {
		return nil
	}
	return d.tcp.Table()
}

// Modes implements drivers.Moder: with the fastpath key, the fast path
// the device settled on ("tc" or "off") and why.
func (d *Device) Modes() []drivers.Mode {
	if d.tcp == nil {
		return nil
	}
	return []drivers.Mode{d.tcp.Mode()}
}

var (
	_ drivers.FastPath = (*Device)(nil)
	_ drivers.Moder    = (*Device)(nil)
)
