package host

import (
	"encoding/binary"
	"net"
	"net/netip"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/junction-dataplane/junction/elements"
	"github.com/junction-dataplane/junction/packet"
)

// KernelNeighborsConfig is KernelNeighbors' config.
type KernelNeighborsConfig struct {
	// Interface is the kernel interface whose neighbours are mirrored
	// (the port's tap twin).
	Interface string `toml:"interface"`
	// Device is the graph device the mirrored neighbours are on: the
	// frames made for them are addressed to its MAC and addresses.
	Device string `toml:"device"`
	// Family is "ipv4" (ARP, for ARPQuerier) or "ipv6" (neighbour
	// solicitations, for NDPQuerier).
	Family string `toml:"family"`
	// Refresh is how often the whole table is read again, so that entries
	// the kernel keeps without announcing them (permanent ones) stay fresh
	// in the querier, whose entries age.
	Refresh time.Duration `toml:"refresh"`
}

// Validate checks the keys.
func (c *KernelNeighborsConfig) Validate() error {
	if c.Interface == "" || len(c.Interface) > 15 {
		return elements.Errorf("interface", "%q: want the kernel interface (the twin), e.g. \"wan0h\"", c.Interface)
	}
	if c.Device == "" {
		return elements.Errorf("device", "required: the graph device the neighbours are on")
	}
	if c.Family != "ipv4" && c.Family != "ipv6" {
		return elements.Errorf("family", "%q: want \"ipv4\" or \"ipv6\"", c.Family)
	}
	if c.Refresh < time.Second || c.Refresh > time.Hour {
		return elements.Errorf("refresh", "%v: want 1s..1h", c.Refresh)
	}
	return nil
}

func init() {
	elements.Register(elements.Type{
		Name: "KernelNeighbors",
		NewConfig: func() any {
			return &KernelNeighborsConfig{Family: "ipv4", Refresh: 10 * time.Second}
		},
		New: newKernelNeighbors,
		In:  1,
		Out: 1,
		Doc: kernelNeighborsManual,
	})
}

// KernelNeighbors is one worker's KernelNeighbors.
type KernelNeighbors struct {
	out     *elements.Output
	side    *packet.Batch
	pool    *packet.Pool
	fd      int // -1: not the listening worker
	ifindex int32
	v6      bool
	family  uint8
	mac     packet.MAC
	addrs   []netip.Prefix // the device's addresses of the family
	refresh int64
	nextDmp int64
	buf     []byte
	seq     uint32

	mirrored, nlErrors, noBuffer *atomic.Uint64
}

func newKernelNeighbors(cfg any, ctx *elements.Context) (elements.Element, error) {
	c := cfg.(*KernelNeighborsConfig)
	dev, _, ok := ctx.Devices.Device(c.Device)
	if !ok {
		return nil, elements.Errorf("device", "no device %q", c.Device)
	}
	info := dev.Info()
	k := &KernelNeighbors{out: ctx.Outputs[0], side: ctx.SideBatch(), pool: ctx.Pool, fd: -1,
		v6: c.Family == "ipv6", mac: info.MAC, refresh: int64(c.Refresh),
		mirrored: ctx.Stats.Counter("mirrored"), nlErrors: ctx.Stats.Counter("netlink errors"),
		noBuffer: ctx.Stats.Counter("no buffer")}
	k.family = unix.AF_INET
	if k.v6 {
		k.family = unix.AF_INET6
	}
	for _, p := range info.Addresses {
		if p.Addr().Is6() == k.v6 {
			k.addrs = append(k.addrs, p)
		}
	}
	if len(k.addrs) == 0 {
		return nil, elements.Errorf("device", "%s has no %s address to address the frames to", c.Device, c.Family)
	}
	if ctx.Worker != 0 {
		return k, nil
	}
	ifi, err := net.InterfaceByName(c.Interface)
	if err != nil {
		return nil, elements.Errorf("interface", "no interface %q in this network namespace (the twin: a tap device opened before this element)", c.Interface)
	}
	k.ifindex = int32(ifi.Index)
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC|unix.SOCK_NONBLOCK, unix.NETLINK_ROUTE)
	if err != nil {
		return nil, elements.Errorf("interface", "netlink socket: %v", err)
	}
	if err := unix.Bind(fd, &unix.SockaddrNetlink{Family: unix.AF_NETLINK, Groups: unix.RTMGRP_NEIGH}); err != nil {
		unix.Close(fd)
		return nil, elements.Errorf("interface", "netlink: subscribing to neighbour changes: %v", err)
	}
	k.fd, k.buf = fd, make([]byte, 1<<16)
	return k, nil
}

// Push passes the querier's frames on.
func (k *KernelNeighbors) Push(_ int, b *packet.Batch) { k.out.Push(b) }

// Close closes the netlink socket.
func (k *KernelNeighbors) Close() error {
	if k.fd < 0 {
		return nil
	}
	err := unix.Close(k.fd)
	k.fd = -1
	return err
}

// Tick dumps the table when due, reads what the kernel announced and
// pushes a frame for each mirrored neighbour.
// NextTick: the next full dump. Between dumps, the kernel's events are
// read every millisecond while the worker is busy and at the idle cadence
// (elements.MaxIdleTick) while it sleeps.
func (k *KernelNeighbors) NextTick(int64) int64 {
	if k.fd < 0 {
		return elements.NoWake
	}
	return k.nextDmp
}

func (k *KernelNeighbors) Tick(now int64) {
	if k.fd < 0 {
		return
	}
	if now >= k.nextDmp {
		k.nextDmp = now + k.refresh
		k.dump()
	}
	for range 16 { // bounded per tick: a dump of a large table spreads over ticks
		n, _, err := unix.Recvfrom(k.fd, k.buf, unix.MSG_DONTWAIT)
		if err != nil || n <= 0 {
			if err != nil && err != unix.EAGAIN && err != unix.EINTR {
				k.nlErrors.Add(1) // ENOBUFS: events lost; the next refresh catches up
			}
			break
		}
		k.parse(k.buf[:n])
		if k.side.Full() {
			break
		}
	}
	if len(k.side.Pkts) > 0 {
		k.out.Push(k.side)
		k.side.Reset()
	}
}

// dump asks for the family's whole neighbour table.
func (k *KernelNeighbors) dump() {
	k.seq++
	req := make([]byte, unix.NLMSG_HDRLEN+unix.SizeofNdMsg)
	binary.NativeEndian.PutUint32(req[0:], uint32(len(req)))
	binary.NativeEndian.PutUint16(req[4:], unix.RTM_GETNEIGH)
	binary.NativeEndian.PutUint16(req[6:], unix.NLM_F_REQUEST|unix.NLM_F_DUMP)
	binary.NativeEndian.PutUint32(req[8:], k.seq)
	req[unix.NLMSG_HDRLEN] = k.family
	if err := unix.Sendto(k.fd, req, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		k.nlErrors.Add(1)
	}
}

// The neighbour states mirrored: confirmed, or configured.
const mirroredStates = unix.NUD_REACHABLE | unix.NUD_PERMANENT | unix.NUD_NOARP

// parse walks one read's netlink messages.
func (k *KernelNeighbors) parse(b []byte) {
	for len(b) >= unix.NLMSG_HDRLEN {
		l := int(binary.NativeEndian.Uint32(b[0:]))
		typ := binary.NativeEndian.Uint16(b[4:])
		if l < unix.NLMSG_HDRLEN || l > len(b) {
			k.nlErrors.Add(1)
			return
		}
		if typ == unix.RTM_NEWNEIGH {
			k.neighbour(b[unix.NLMSG_HDRLEN:l])
		}
		b = b[min(nlAlign(l), len(b)):]
	}
}

func nlAlign(n int) int { return (n + 3) &^ 3 }

// neighbour mirrors one RTM_NEWNEIGH (an ndmsg and its attributes).
func (k *KernelNeighbors) neighbour(m []byte) {
	if len(m) < unix.SizeofNdMsg {
		k.nlErrors.Add(1)
		return
	}
	family, ifindex := m[0], int32(binary.NativeEndian.Uint32(m[4:]))
	state := binary.NativeEndian.Uint16(m[8:])
	if family != k.family || ifindex != k.ifindex || state&mirroredStates == 0 {
		return
	}
	var ip netip.Addr
	var lla []byte
	for a := m[unix.SizeofNdMsg:]; len(a) >= 4; {
		al := int(binary.NativeEndian.Uint16(a[0:]))
		if al < 4 || al > len(a) {
			k.nlErrors.Add(1)
			return
		}
		v := a[4:al]
		switch binary.NativeEndian.Uint16(a[2:]) {
		case unix.NDA_DST:
			ip, _ = netip.AddrFromSlice(v)
		case unix.NDA_LLADDR:
			lla = v
		}
		a = a[min(nlAlign(al), len(a)):]
	}
	// The kernel lists multicast groups as NOARP entries: not neighbours.
	if !ip.IsValid() || ip.IsMulticast() || len(lla) != 6 || lla[0]&1 != 0 {
		return
	}
	ours := k.addrs[0].Addr()
	for _, p := range k.addrs {
		if p.Contains(ip) {
			ours = p.Addr()
			break
		}
	}
	p := k.pool.Get()
	if p == nil {
		k.noBuffer.Add(1)
		return
	}
	if k.v6 {
		k.solicitation(p, [6]byte(lla), ip, ours)
	} else {
		k.request(p, [6]byte(lla), ip, ours)
	}
	k.side.Add(p)
	k.mirrored.Add(1)
}

// request makes the ARP request neighbour (mac, ip) would send for ours.
func (k *KernelNeighbors) request(p *packet.Packet, mac [6]byte, ip, ours netip.Addr) {
	f := p.Data[:packet.EthernetLen+packet.ARPLen]
	copy(f[0:6], k.mac[:])
	copy(f[6:12], mac[:])
	binary.BigEndian.PutUint16(f[12:], packet.EtherTypeARP)
	a := f[packet.EthernetLen:]
	copy(a[0:8], []byte{0, 1, 8, 0, 6, 4, 0, 1})
	copy(a[8:14], mac[:])
	ip4, our4 := ip.As4(), ours.As4()
	copy(a[14:18], ip4[:])
	clear(a[18:24])
	copy(a[24:28], our4[:])
	p.Data = f
}

// solicitation makes the neighbour solicitation neighbour (mac, ip)
// would send for ours, with its source link-layer address option.
func (k *KernelNeighbors) solicitation(p *packet.Packet, mac [6]byte, ip, ours netip.Addr) {
	const icmpLen = 8 + 16 + 8
	f := p.Data[:packet.EthernetLen+packet.IPv6Len+icmpLen]
	copy(f[0:6], k.mac[:])
	copy(f[6:12], mac[:])
	binary.BigEndian.PutUint16(f[12:], packet.EtherTypeIPv6)
	h := f[packet.EthernetLen:]
	clear(h[:packet.IPv6Len])
	h[0] = 0x60
	binary.BigEndian.PutUint16(h[4:], icmpLen)
	h[6], h[7] = 58, 255
	src, dst := ip.As16(), ours.As16()
	copy(h[8:24], src[:])
	copy(h[24:40], dst[:])
	c := h[packet.IPv6Len:]
	clear(c[:8])
	c[0] = 135
	copy(c[8:24], dst[:])
	c[24], c[25] = 1, 1 // source link-layer address, 8 bytes
	copy(c[26:32], mac[:])
	binary.BigEndian.PutUint16(c[2:], ^packet.Fold(packet.Sum(c, packet.PseudoHeaderSumV6(src, dst, 58, icmpLen))))
	p.Data = f
}

var _ elements.TickScheduler = (*KernelNeighbors)(nil)
