package tap

import (
	"bytes"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/junction-dataplane/junction/conf"
	"github.com/junction-dataplane/junction/drivers"
	"github.com/junction-dataplane/junction/packet"
)

func init() {
	drivers.Register(drivers.Driver{
		Name:      "tap",
		NewConfig: newConfig,
		// One descriptor per TAP (not multi-queue): a second open of
		// the same name fails.
		Exclusive: true,
		Open:      open,
		Doc:       manual(),
	})
	drivers.RegisterCheck("tap", check)
}

// Config is the tap driver's keys (see manual).
type Config struct {
	Interface string `toml:"interface"`
	Twin      string `toml:"twin"`
	MTU       int    `toml:"mtu"`
	// Persist keeps the TAP (TUNSETPERSIST) with its addresses when the
	// forwarder exits, to be adopted by the next start.
	Persist bool `toml:"persist"`
}

const (
	// PoolSize is the RX queue's pool: the kernel's control traffic is a
	// trickle, but a BGP table transfer comes in bursts.
	PoolSize = 1024
	maxMTU   = packet.BufSize - packet.Headroom - packet.EthernetLen - 4
)

func newConfig() any { return &Config{} }

// Validate checks the keys without touching the system.
func (c *Config) Validate() error {
	if err := drivers.ValidInterfaceName(c.Interface); err != nil {
		return err
	}
	if c.Twin != "" {
		if len(c.Twin) > 15 {
			return conf.Errorf("twin", "%q is longer than an interface name can be (15 bytes)", c.Twin)
		}
		if c.Twin == c.Interface {
			return conf.Errorf("twin", "%q is the interface itself: name the port's interface (e.g. \"wan0\" for a twin \"wan0h\")", c.Twin)
		}
	}
	if c.MTU != 0 && (c.MTU < 68 || c.MTU > maxMTU) {
		return conf.Errorf("mtu", "%d out of range 68..%d (0: the twin's)", c.MTU, maxMTU)
	}
	return nil
}

// Device is an open tap device.
type Device struct {
	info drivers.Info
	fd   int
	idx  uint16
	pool *packet.Pool
	twin int // the twin's ifindex, 0: none
	link netlink.Link
	// nl is a netlink handle opened in the namespace the device was
	// opened in: the follower goroutine changes the TAP from whatever
	// thread it runs on, which need not be in that namespace.
	nl *netlink.Handle

	rxPkts, rxBytes, rxErrors, poolEmpty atomic.Uint64
	txPkts, txBytes, txErrors, tooLong   atomic.Uint64
	carrierChanges                       atomic.Uint64
	maxFrame                             atomic.Int64

	done     chan struct{}
	watching sync.WaitGroup
	mu       sync.Mutex // Close against itself
	closed   bool
}

var (
	_ drivers.Device   = (*Device)(nil)
	_ drivers.RxWaiter = (*Device)(nil)
)

func open(cfg any, ctx drivers.OpenContext) (drivers.Device, error) {
	c, ok := cfg.(*Config)
	if !ok {
		return nil, fmt.Errorf("tap: config is %T, want *tap.Config", cfg)
	}
	return Open(c, ctx)
}

// twinOf reads the twin interface: its MAC and MTU are the TAP's unless
// the mac and mtu keys say otherwise.
func twinOf(c *Config) (*net.Interface, error) {
	if c.Twin == "" {
		return nil, nil
	}
	ifi, err := net.InterfaceByName(c.Twin)
	if err != nil {
		return nil, conf.Errorf("twin", "no interface %q in this network namespace (the port's interface, which the twin copies)", c.Twin)
	}
	return ifi, nil
}

// check is the driver's CheckFunc: the twin exists, and the interface
// name is free or a TAP.
func check(cfg any, ctx drivers.OpenContext) (drivers.Info, error) {
	c := cfg.(*Config)
	info := drivers.Info{Name: ctx.Name, Driver: "tap", MAC: ctx.MAC, Addresses: ctx.Addresses, MTU: c.MTU}
	if err := c.Validate(); err != nil {
		return info, err
	}
	ifi, err := twinOf(c)
	if err != nil {
		return info, err
	}
	if ifi != nil {
		if info.MAC == (packet.MAC{}) && len(ifi.HardwareAddr) == 6 {
			copy(info.MAC[:], ifi.HardwareAddr)
		}
		if info.MTU == 0 {
			info.MTU = ifi.MTU
		}
	}
	if l, err := netlink.LinkByName(c.Interface); err == nil && l.Type() != "tuntap" {
		return info, conf.Errorf("interface", "%q exists and is a %s, not a TAP: name a free interface for the twin", c.Interface, l.Type())
	}
	return info, nil
}

// Open creates (or attaches to) the TAP in the calling thread's network
// namespace, gives it the twin's MAC and MTU and the device's addresses,
// brings it up and starts following the twin's link state.
func Open(c *Config, ctx drivers.OpenContext) (dev *Device, err error) {
	info, err := check(c, ctx)
	if err != nil {
		return nil, err
	}
	fd, err := unix.Open("/dev/net/tun", unix.O_RDWR|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
	if err != nil {
		return nil, conf.Errorf("interface", "%s: cannot open /dev/net/tun: %v (needs root or CAP_NET_ADMIN, and the tun module)", c.Interface, err)
	}
	d := &Device{fd: fd, idx: uint16(ctx.Index), pool: packet.NewPool(PoolSize), done: make(chan struct{})}
	defer func() {
		if err != nil {
			d.Close()
			dev = nil
		}
	}()
	if d.nl, err = netlink.NewHandle(unix.NETLINK_ROUTE); err != nil {
		return nil, conf.Errorf("interface", "%s: netlink: %v", c.Interface, err)
	}
	ifr, err := unix.NewIfreq(c.Interface)
	if err != nil {
		return nil, conf.Errorf("interface", "%q: %v", c.Interface, err)
	}
	ifr.SetUint16(unix.IFF_TAP | unix.IFF_NO_PI)
	if err := unix.IoctlIfreq(fd, unix.TUNSETIFF, ifr); err != nil {
		return nil, conf.Errorf("interface", "%s: TUNSETIFF: %v", c.Interface, err)
	}
	if d.link, err = d.nl.LinkByName(c.Interface); err != nil {
		return nil, conf.Errorf("interface", "%s: created, but netlink cannot find it: %v", c.Interface, err)
	}
	twin, _ := twinOf(c) // check found it
	if twin != nil {
		d.twin = twin.Index
	}
	// A TAP kept by an earlier run (persist) already has the MAC: setting
	// it again would announce a change to the daemons for nothing.
	if info.MAC != (packet.MAC{}) && !bytes.Equal(d.link.Attrs().HardwareAddr, info.MAC[:]) {
		if err := d.nl.LinkSetHardwareAddr(d.link, net.HardwareAddr(info.MAC[:])); err != nil {
			return nil, conf.Errorf("interface", "%s: setting the MAC %s: %v", c.Interface, info.MAC, err)
		}
	} else if len(d.link.Attrs().HardwareAddr) == 6 {
		copy(info.MAC[:], d.link.Attrs().HardwareAddr)
	}
	if info.MTU == 0 {
		info.MTU = d.link.Attrs().MTU
	}
	if err := d.setMTU(info.MTU); err != nil {
		return nil, conf.Errorf("mtu", "%s: %v", c.Interface, err)
	}
	for _, a := range ctx.Addresses {
		if err := addAddress(d.nl, d.link, a); err != nil {
			return nil, conf.Errorf("addresses", "%s: adding %s: %v", c.Interface, a, err)
		}
	}
	if err := d.nl.LinkSetUp(d.link); err != nil {
		return nil, conf.Errorf("interface", "%s: setting it up: %v", c.Interface, err)
	}
	d.info = info
	if d.twin != 0 {
		if err := d.follow(twin.Name); err != nil {
			return nil, conf.Errorf("twin", "%s: following its link state: %v", c.Twin, err)
		}
	}
	// Last, so that a TAP created by a failed open is not left behind.
	// Without persist the flag is cleared, so that a TAP an earlier run
	// kept goes away at this run's exit.
	if err := d.setPersist(c.Persist); err != nil {
		return nil, conf.Errorf("persist", "%s: TUNSETPERSIST: %v", c.Interface, err)
	}
	return d, nil
}

// setPersist sets or clears the TAP's persistence: a persistent TAP
// stays, with its addresses, routes and the daemons' sockets, when its
// last descriptor is closed (its carrier goes off until the next open).
func (d *Device) setPersist(on bool) error {
	v := 0
	if on {
		v = 1
	}
	return unix.IoctlSetInt(d.fd, unix.TUNSETPERSIST, v)
}

// addAddress puts a on the TAP without duplicate address detection: the
// address is the router's on the port already (the graph answers ARP and
// neighbour solicitations for it), and DAD would hold it "tentative",
// unusable by daemons, for a second or more.
func addAddress(h *netlink.Handle, l netlink.Link, a netip.Prefix) error {
	ipn := &net.IPNet{IP: net.IP(a.Addr().AsSlice()), Mask: net.CIDRMask(a.Bits(), a.Addr().BitLen())}
	addr := &netlink.Addr{IPNet: ipn}
	if a.Addr().Is6() {
		addr.Flags = unix.IFA_F_NODAD
	}
	return h.AddrReplace(l, addr)
}

// setMTU sets the TAP's MTU at open.
func (d *Device) setMTU(mtu int) error {
	if d.link.Attrs().MTU != mtu {
		if err := d.nl.LinkSetMTU(d.link, mtu); err != nil {
			return err
		}
	}
	d.maxFrame.Store(int64(drivers.MaxFrame(mtu)))
	return nil
}

// setCarrier turns the TAP's carrier on or off (TUNSETCARRIER, Linux 5.0).
func (d *Device) setCarrier(on bool) error {
	v := 0
	if on {
		v = 1
	}
	return unix.IoctlSetPointerInt(d.fd, unix.TUNSETCARRIER, v)
}

// up reports whether a link has a carrier: the kernel's operational state
// (RFC 2863), or IFF_LOWER_UP where the driver reports none.
func up(a *netlink.LinkAttrs) bool {
	if a.OperState == netlink.OperUp {
		return true
	}
	if a.OperState == netlink.OperUnknown {
		return a.RawFlags&unix.IFF_LOWER_UP != 0
	}
	return false
}

// follow copies the twin's link state and MTU to the TAP now and on
// every change the kernel announces, until Close: a daemon on the twin
// then sees the port go down (BIRD and FRR drop the session and withdraw
// its routes at once instead of after a hold time) and come back.
func (d *Device) follow(twin string) error {
	updates := make(chan netlink.LinkUpdate, 16)
	if err := netlink.LinkSubscribeWithOptions(updates, d.done, netlink.LinkSubscribeOptions{ListExisting: false}); err != nil {
		return err
	}
	l, err := d.nl.LinkByName(twin)
	if err != nil {
		return err
	}
	state, mtu := up(l.Attrs()), d.info.MTU
	if err := d.setCarrier(state); err != nil {
		return fmt.Errorf("TUNSETCARRIER (Linux 5.0 or later): %w", err)
	}
	d.watching.Add(1)
	go func() {
		defer d.watching.Done()
		for u := range updates {
			a := u.Link.Attrs()
			if a.Index != d.twin {
				continue
			}
			if s := up(a); s != state {
				if d.setCarrier(s) == nil {
					state = s
					d.carrierChanges.Add(1)
				}
			}
			if a.MTU > 0 && a.MTU != mtu && a.MTU <= maxMTU {
				// An error leaves the old MTU (tried again at the next
				// change): the frames the kernel sends then still fit
				// the port when it grew, and are refused by the port's
				// driver and counted when it shrank.
				if d.nl.LinkSetMTU(d.link, a.MTU) == nil {
					mtu = a.MTU
					d.maxFrame.Store(int64(drivers.MaxFrame(mtu)))
				}
			}
		}
	}()
	return nil
}

// RxQueues implements drivers.Device: one queue, the TAP descriptor.
func (d *Device) RxQueues() int { return 1 }

// Drained implements drivers.Device: a TAP never drains.
func (d *Device) Drained(int) bool { return false }

// Info implements drivers.Device.
func (d *Device) Info() drivers.Info { return d.info }

// RxFD implements drivers.RxWaiter: the TAP descriptor is readable while
// the kernel has queued a frame.
func (d *Device) RxFD(q int) int {
	if q != 0 {
		return -1
	}
	return d.fd
}

// Receive implements drivers.Device: one read(2) per frame, until the
// batch is full or the TAP is empty.
func (d *Device) Receive(q int, b *packet.Batch) int {
	if q != 0 {
		return 0
	}
	got := 0
	var bytes, errs uint64
	for !b.Full() {
		p := d.pool.Get()
		if p == nil {
			d.poolEmpty.Add(1)
			break
		}
		buf := p.Data[:cap(p.Data)]
		n, err := unix.Read(d.fd, buf)
		if err != nil || n <= 0 {
			p.Free()
			if err == unix.EAGAIN || err == unix.EINTR {
				break
			}
			errs++
			if err == nil || err == unix.EBADF {
				break // closed under us
			}
			continue
		}
		p.SetLen(n)
		p.L3 = packet.L3Offset(p.Data)
		p.InDevice = d.idx
		b.Add(p)
		bytes += uint64(n)
		got++
	}
	if got != 0 {
		d.rxPkts.Add(uint64(got))
		d.rxBytes.Add(bytes)
	}
	if errs != 0 {
		d.rxErrors.Add(errs)
	}
	return got
}

// Transmit implements drivers.Device: one write(2) per frame; the kernel
// takes the frame as if it had arrived on the TAP.
func (d *Device) Transmit(_ int, b *packet.Batch) {
	maxFrame := int(d.maxFrame.Load())
	var sent, bytes, errs, long uint64
	for _, p := range b.Pkts {
		f := p.Data
		switch {
		case len(f) > maxFrame && drivers.TooLong(f, maxFrame):
			long++
		case len(f) < packet.EthernetLen:
			errs++
		default:
			if _, err := unix.Write(d.fd, f); err != nil {
				errs++
			} else {
				sent++
				bytes += uint64(len(f))
			}
		}
	}
	b.FreeAll()
	if sent != 0 {
		d.txPkts.Add(sent)
		d.txBytes.Add(bytes)
	}
	if errs != 0 {
		d.txErrors.Add(errs)
	}
	if long != 0 {
		d.tooLong.Add(long)
	}
}

// Flush implements drivers.Device: write(2) has handed everything over.
func (d *Device) Flush() error { return nil }

// Close stops following the twin and closes the descriptor, which
// removes the TAP and its addresses unless it is persistent.
func (d *Device) Close() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return nil
	}
	d.closed = true
	close(d.done)
	d.watching.Wait()
	if d.nl != nil {
		d.nl.Close()
	}
	if d.fd < 0 {
		return nil
	}
	err := unix.Close(d.fd)
	d.fd = -1
	return err
}

// Stats implements drivers.Device.
func (d *Device) Stats() []drivers.Counter {
	return []drivers.Counter{
		{Name: "rx_packets", Value: d.rxPkts.Load()},
		{Name: "rx_bytes", Value: d.rxBytes.Load()},
		{Name: "tx_packets", Value: d.txPkts.Load()},
		{Name: "tx_bytes", Value: d.txBytes.Load()},
		{Name: "tx_errors", Value: d.txErrors.Load()},
		{Name: drivers.CounterTxTooLong, Value: d.tooLong.Load()},
		{Name: "rx_errors", Value: d.rxErrors.Load()},
		{Name: "rx_pool_empty", Value: d.poolEmpty.Load()},
		{Name: "carrier_changes", Value: d.carrierChanges.Load()},
	}
}
