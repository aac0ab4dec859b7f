package devices

import (
	"encoding/binary"
	"fmt"
	"net/netip"
	"strings"

	"github.com/junction-dataplane/junction/drivers"
	"github.com/junction-dataplane/junction/elements"
	"github.com/junction-dataplane/junction/elements/flowsteer"
	"github.com/junction-dataplane/junction/packet"
)

// Config is the config of FromDevice and ToDevice: the device's name in
// the graph's [devices] tables.
type Config struct {
	Device string `toml:"device"`
}

// Validate checks that a device is named.
func (c *Config) Validate() error {
	if c.Device == "" {
		return elements.Errorf("device", "required: the name of a [devices.NAME] table")
	}
	return nil
}

// FromConfig is FromDevice's config.
type FromConfig struct {
	Device string `toml:"device"`
	// Spread is "auto" (spread in software when the device has fewer RX
	// queues than there are workers), "on" or "off".
	Spread string `toml:"spread"`
	// HostAffinity lists host networks whose hosts are each steered to
	// one worker (flowsteer's host steering).
	HostAffinity []string `toml:"host_affinity"`

	hosts flowsteer.Hosts
}

// Validate checks the keys.
func (c *FromConfig) Validate() error {
	if c.Device == "" {
		return elements.Errorf("device", "required: the name of a [devices.NAME] table")
	}
	switch c.Spread {
	case "auto", "on", "off":
	default:
		return elements.Errorf("spread", "%q: want auto, on or off", c.Spread)
	}
	c.hosts = flowsteer.Hosts{}
	for _, s := range c.HostAffinity {
		p, err := netip.ParsePrefix(strings.TrimSpace(s))
		if err != nil {
			return elements.Errorf("host_affinity", "%q: not a network (192.168.20.0/24, 2001:db8:20::/64)", s)
		}
		p = p.Masked()
		if p.Addr().Is4() {
			c.hosts.V4 = append(c.hosts.V4, flowsteer.Prefix{Addr: binary.BigEndian.Uint32(p.Addr().AsSlice()), Bits: p.Bits()})
		} else {
			c.hosts.V6 = append(c.hosts.V6, p)
		}
	}
	if len(c.HostAffinity) > 0 && c.Spread == "off" {
		return elements.Errorf("host_affinity", "steers only what is spread: not with spread = \"off\"")
	}
	return nil
}

var deviceKey = []elements.Key{{
	Name: "device", Type: "device", Required: true,
	Doc: "the device, by its name in the graph's [devices.NAME] tables",
}}

func init() {
	elements.Register(elements.Type{
		Name:       "FromDevice",
		NewConfig:  func() any { return &FromConfig{Spread: "auto"} },
		New:        newFromDevice,
		In:         0,
		Out:        1,
		Source:     true,
		Doc:        fromDeviceManual,
		TakesState: true, // a reload keeps its state (carry.go)
	})
	elements.Register(elements.Type{
		Name:      "ToDevice",
		NewConfig: func() any { return &Config{} },
		New:       newToDevice,
		In:        1,
		Out:       0,
		Doc:       toDeviceManual,
	})
}

const sleepDoc = `Idle workers. A worker that found nothing for a while sleeps until a ` +
	`packet arrives when its device offers a descriptor per queue (afxdp: the queue's XDP ` +
	`socket; afpacket: its packet socket): FromDevice gives the worker the descriptors of the ` +
	`queues it serves and, with spreading, an eventfd that a worker handing it packets writes ` +
	`while it sleeps. With gen and pcap devices the worker sleeps on a timer instead. ToDevice ` +
	`on afxdp keeps a worker from sleeping on descriptors while frames it transmitted still ` +
	`wait on the TX ring (copy mode sends them only when asked): the worker asks the kernel ` +
	`again and sleeps on a timer meanwhile.`

// FromDevice is one worker's receiver for one device. It implements
// elements.Source.
type FromDevice struct {
	// hosts: what this instance published of host_affinity (nil: none),
	// under hostsKey in steer.
	hosts    *flowsteer.Hosts
	hostsKey string
	steer    *flowsteer.Table
	dev      drivers.Device
	index    uint16
	queues   []int
	// drained caches drivers.Device.Drained per queue: a drained queue
	// stays drained, so the driver is asked again only for live ones.
	drained []bool
	live    int // queues not yet drained
	next    int // round-robin cursor into queues
	batch   *packet.Batch
	out     *elements.Output

	sp *spreader // nil: no spreading
	// takeSp: TakeState takes the running instance's spreader.
	takeSp bool

	// rxFDs[i] is what poll(2) waits on for queues[i] (-1: nothing, the
	// worker sleeps on a timer); nil when the device has none.
	rxFDs []int
}

var (
	_ elements.Source  = (*FromDevice)(nil)
	_ elements.Closer  = (*FromDevice)(nil)
	_ elements.Sleeper = (*FromDevice)(nil)
	_ elements.Sleeper = (*ToDevice)(nil)
)

func newFromDevice(cfg any, ctx *elements.Context) (elements.Element, error) {
	c := cfg.(*FromConfig)
	if err := c.Validate(); err != nil { // builds c.hosts
		return nil, err
	}
	dev, index, ok := ctx.Devices.Device(c.Device)
	if !ok || dev == nil {
		return nil, elements.Errorf("device", "no device %q", c.Device)
	}
	// Copy the queue list: it belongs to the device set.
	qs := append([]int(nil), ctx.Devices.Queues(c.Device, ctx.Worker)...)
	for _, q := range qs {
		if q < 0 || q >= dev.RxQueues() {
			return nil, fmt.Errorf("FromDevice(%s): queue %d out of range (device has %d)", c.Device, q, dev.RxQueues())
		}
	}
	batch := ctx.Batch
	if batch <= 0 {
		batch = packet.DefaultBatch
	}
	f := &FromDevice{
		dev: dev, index: uint16(index), queues: qs,
		drained: make([]bool, len(qs)), live: len(qs),
		batch: packet.NewBatch(batch), out: ctx.Outputs[0],
	}
	if rw, ok := dev.(drivers.RxWaiter); ok {
		f.rxFDs = make([]int, len(qs))
		for i, q := range qs {
			f.rxFDs[i] = rw.RxFD(q)
		}
	}
	workers := max(ctx.Workers, 1)
	spread := c.Spread == "on" || (c.Spread == "auto" || c.Spread == "") && !queuesOwnFlows(dev, workers, ctx.FlowState)
	if spread && workers > 1 && canTakeSpreader(ctx, f) {
		// A reload keeps the running instance's rings (carry.go).
		f.takeSp = true
	} else if spread && workers > 1 {
		sp, err := newSpreader(ctx, c.Device, dev, workers, batch)
		if err != nil {
			return nil, err
		}
		f.sp = sp
	}
	if len(c.HostAffinity) > 0 && workers > 1 {
		h := c.hosts
		h.Workers = workers
		f.hosts, f.hostsKey = &h, "FromDevice "+ctx.Name
		f.steer = flowsteer.Of(ctx)
		f.steer.SetHosts(f.hostsKey, f.hosts)
	}
	return f, nil
}

// queuesOwnFlows reports whether the device's queues alone are enough:
// one queue per worker at least, and either a graph that keeps no per-flow
// state per worker (a plain router: nothing there cares which worker sees
// a packet, and a handoff would only cost a copy and a second CPU) or a
// device that promises a flow never changes queue
// (drivers.Info.FlowAffine). Anything else (a veth, whose queue is the
// sending host's TX queue and changes after a retransmission timeout; a
// NIC whose RSS is asymmetric or blind to NAT) is spread when the graph
// tracks flows: a flow whose packets reached two workers would meet a
// Conntrack that never saw it.
func queuesOwnFlows(dev drivers.Device, workers int, flowState bool) bool {
	return workers <= 1 || dev.RxQueues() >= workers && (!flowState || dev.Info().FlowAffine)
}

// Push is never called (FromDevice has no inputs); should it be, the
// packets are freed so that none is lost.
func (f *FromDevice) Push(in int, b *packet.Batch) { b.FreeAll() }

// Poll receives one batch from the next live queue, round robin, and pushes
// it to output 0. A queue that has nothing now is passed over for the next
// one within the same poll, so that one idle queue does not cost the worker
// an empty poll while another has packets. With spreading it first pushes
// what other workers handed over, and passes on the packets of its own
// batch that belong to other workers. It returns the packets it pushed into
// the graph (so that summing over workers counts each packet once).
func (f *FromDevice) Poll() int {
	n := 0
	if f.sp != nil {
		f.sp.outp = f.out
		n = f.sp.receive(f.batch, f.out)
		n += f.sp.released
		f.sp.released = 0
	}
	if f.sp != nil && f.live > 0 && f.sp.congested(f.batch.Cap()) {
		return n // backpressure: the own queues wait for the next poll
	}
	nq := len(f.queues)
	for tries := 0; tries < nq && f.live > 0; tries++ {
		i := f.next
		f.next++
		if f.next == nq {
			f.next = 0
		}
		if f.drained[i] {
			continue
		}
		q := f.queues[i]
		b := f.batch
		got := f.dev.Receive(q, b)
		if f.sp != nil && f.sp.ord != nil && got == 0 {
			f.sp.progressed(q)
		}
		if got == 0 {
			if f.dev.Drained(q) {
				f.drained[i] = true
				f.live--
				if f.live == 0 && f.sp != nil {
					f.sp.finish()
				}
			}
			continue
		}
		for _, p := range b.Pkts {
			p.InDevice, p.InQueue = f.index, uint16(q)
		}
		if f.sp != nil {
			f.sp.handOff(b)
			if f.sp.ord != nil {
				f.sp.filter(b)
			}
		}
		got = len(b.Pkts)
		if got > 0 {
			f.out.Push(b)
		}
		b.Reset() // in case the output was a no-op on an empty batch
		if f.sp != nil && f.sp.ord != nil {
			// After the push and the handoff's publish: whoever waits
			// for this queue to pass a flow's last packet may go on.
			f.sp.progressed(q)
			got += f.sp.released // held packets the filter had to let go
			f.sp.released = 0
		}
		return n + got
	}
	return n
}

// Drained reports that every queue this instance serves is exhausted (true
// at once when it serves none and does not spread) and, with spreading,
// that no other worker can hand it anything more.
func (f *FromDevice) Drained() bool {
	for i, q := range f.queues {
		if !f.drained[i] && f.dev.Drained(q) {
			f.drained[i] = true
			f.live--
			if f.live == 0 && f.sp != nil {
				f.sp.finish()
			}
		}
	}
	if f.live != 0 {
		return false
	}
	return f.sp == nil || f.sp.drained()
}

// PrepareSleep implements elements.Sleeper: the descriptors of the live
// queues it serves (a device without them, gen or pcap: SleepTimed) and,
// with spreading, the eventfd other workers write when they hand it
// packets while it sleeps (SleepNot when they already have).
func (f *FromDevice) PrepareSleep(fds []int) ([]int, elements.SleepMode) {
	mode := elements.SleepOnFDs
	if f.sp != nil {
		if f.sp.holding() {
			return fds, elements.SleepNot // held packets wait for another queue's reader
		}
		fds, mode = f.sp.prepareSleep(fds)
		if mode == elements.SleepNot {
			return fds, mode
		}
	}
	for i := range f.queues {
		if f.drained[i] {
			continue
		}
		if f.rxFDs == nil || f.rxFDs[i] < 0 {
			mode = elements.SleepTimed
			continue
		}
		fds = append(fds, f.rxFDs[i])
	}
	return fds, mode
}

// Woke implements elements.Sleeper.
func (f *FromDevice) Woke() {
	if f.sp != nil {
		f.sp.woke()
	}
}

// Close returns the spreading buffers (those handed to this worker and not
// yet taken, and the empty ones it lent out) to this worker's pool. The
// pipeline calls it after every worker has stopped.
func (f *FromDevice) Close() error {
	if f.sp != nil {
		f.sp.close()
	}
	if f.hosts != nil {
		f.steer.WithdrawHosts(f.hostsKey, f.hosts)
	}
	return nil
}

// ToDevice is one worker's transmitter for one device.
type ToDevice struct {
	dev      drivers.Device
	tw       drivers.TxWaiter // nil: the driver leaves nothing on a ring
	worker   int
	st       *elements.Stats
	notTaken elements.Reason
}

func newToDevice(cfg any, ctx *elements.Context) (elements.Element, error) {
	c := cfg.(*Config)
	dev, _, ok := ctx.Devices.Device(c.Device)
	if !ok || dev == nil {
		return nil, elements.Errorf("device", "no device %q", c.Device)
	}
	tw, _ := dev.(drivers.TxWaiter)
	return &ToDevice{dev: dev, tw: tw, worker: ctx.Worker, st: ctx.Stats,
		notTaken: ctx.Stats.Reason("not transmitted")}, nil
}

// PrepareSleep implements elements.Sleeper: a worker must not sleep on
// descriptors while frames it transmitted wait on a TX ring for a kick
// (afxdp in copy mode); the driver kicks them, and if some are still
// there the worker sleeps on a timer and tries again.
func (t *ToDevice) PrepareSleep(fds []int) ([]int, elements.SleepMode) {
	if t.tw != nil && !t.tw.TxIdle(t.worker) {
		return fds, elements.SleepTimed
	}
	return fds, elements.SleepOnFDs
}

// Woke implements elements.Sleeper.
func (t *ToDevice) Woke() {}

// Push hands the whole batch to the driver, which takes every packet.
func (t *ToDevice) Push(in int, b *packet.Batch) {
	t.dev.Transmit(t.worker, b)
	if len(b.Pkts) != 0 {
		// The Device contract says Transmit leaves b empty; a driver
		// that does not must not leak buffers or hand them on twice.
		t.st.DropBatch(b, t.notTaken)
	}
}
