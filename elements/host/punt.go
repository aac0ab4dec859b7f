package host

import (
	"encoding/binary"
	"net/netip"
	"sync/atomic"
	"time"

	"github.com/junction-dataplane/junction/elements"
	"github.com/junction-dataplane/junction/packet"
)

// The punt classes, in the order of the rate keys and counters.
const (
	classNeighbor = iota // ARP, IPv6 neighbour discovery (RS, RA, NS, NA, redirect)
	classRouting         // BGP, BFD, OSPF, RIP, LDP, VRRP, PIM, IGMP, MLD
	classICMP            // the rest of ICMP and ICMPv6
	classOther           // everything else: SSH, DHCP, DNS, HTTP, ...
	numClasses
)

var classNames = [numClasses]string{"neighbor", "routing", "icmp", "other"}

// MaxDevices bounds HostPunt's devices (its outputs).
const MaxDevices = 64

// Config is HostPunt's config.
type Config struct {
	// Devices are the forwarded ports whose traffic is punted: a packet
	// that came in on Devices[i] leaves on output i (to that port's twin).
	Devices []string `toml:"devices"`
	// The rates, packets per second per class for the whole element (all
	// workers together); 0 punts nothing of the class.
	NeighborRate int `toml:"neighbor_rate"`
	RoutingRate  int `toml:"routing_rate"`
	ICMPRate     int `toml:"icmp_rate"`
	OtherRate    int `toml:"other_rate"`
	// Burst is how much of a class's rate may arrive at once: each
	// bucket holds rate × burst packets (at least minBurst).
	Burst time.Duration `toml:"burst"`
	// Peers, when set, are the sources routing-protocol packets must
	// come from to be policed as routing (the configured BGP neighbours'
	// addresses, say); from anyone else they are "other".
	Peers []string `toml:"peers"`

	peers []netip.Prefix
}

const (
	defaultNeighborRate = 2000
	defaultRoutingRate  = 20000
	defaultICMPRate     = 1000
	defaultOtherRate    = 5000
	defaultBurst        = 100 * time.Millisecond
	// minBurst is the least a bucket holds: a handful of packets arriving
	// together (a TCP window's ACKs, an ARP request and its retries)
	// pass even under a small rate.
	minBurst = 16
	maxRate  = 10_000_000
)

func (c *Config) rates() [numClasses]int {
	return [numClasses]int{c.NeighborRate, c.RoutingRate, c.ICMPRate, c.OtherRate}
}

// Validate checks the keys and parses the peers.
func (c *Config) Validate() error {
	if len(c.Devices) == 0 {
		return elements.Errorf("devices", `required: the forwarded ports whose traffic reaches their twins, e.g. HostPunt(lan, wan)`)
	}
	if len(c.Devices) > MaxDevices {
		return elements.Errorf("devices", "%d devices: at most %d", len(c.Devices), MaxDevices)
	}
	for i, r := range c.rates() {
		if r < 0 || r > maxRate {
			return elements.Errorf(classNames[i]+"_rate", "%d packets/s: want 0..%d (0 punts none)", r, maxRate)
		}
	}
	if c.Burst < time.Millisecond || c.Burst > 10*time.Second {
		return elements.Errorf("burst", "%v: want 1ms..10s", c.Burst)
	}
	c.peers = c.peers[:0]
	for _, s := range c.Peers {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			a, aerr := netip.ParseAddr(s)
			if aerr != nil {
				return elements.Errorf("peers", "%q: not an address or prefix", s)
			}
			p = netip.PrefixFrom(a, a.BitLen())
		}
		c.peers = append(c.peers, p.Masked())
	}
	return nil
}

// Ports: one input, one output per device.
func (c *Config) Ports() (in, out int) { return 1, len(c.Devices) }

var _ elements.PortCounter = (*Config)(nil)

func init() {
	elements.Register(elements.Type{
		Name: "HostPunt",
		NewConfig: func() any {
			return &Config{NeighborRate: defaultNeighborRate, RoutingRate: defaultRoutingRate,
				ICMPRate: defaultICMPRate, OtherRate: defaultOtherRate, Burst: defaultBurst}
		},
		New: newPunt,
		In:  1,
		Out: -1,
		Doc: hostPuntManual,
	})
}

// bucket is one class's token bucket, counting nanotokens (1e9 per
// packet) so that a refill is a multiplication.
type bucket struct {
	rate   int64 // nanotokens per ns = packets per second
	depth  int64 // nanotokens
	tokens int64
}

const nanoPerToken = int64(time.Second)

func (b *bucket) refill(elapsed int64) {
	if b.rate == 0 || elapsed <= 0 {
		return
	}
	if elapsed >= b.depth/b.rate { // cap before multiplying: no overflow
		b.tokens = b.depth
		return
	}
	b.tokens = min(b.tokens+elapsed*b.rate, b.depth)
}

func (b *bucket) take() bool {
	if b.tokens < nanoPerToken {
		return false
	}
	b.tokens -= nanoPerToken
	return true
}

// Punt is one worker's HostPunt.
type Punt struct {
	buckets  [numClasses]bucket
	last     int64
	out      []uint8 // device index -> output+1 (0: not one of ours)
	peers    []netip.Prefix
	dispatch *elements.Dispatch
	st       *elements.Stats
	punted   [numClasses]uint64
	pub      [numClasses]*atomic.Uint64
	over     [numClasses]elements.Reason
	noDevice elements.Reason
	// now is the clock (elements.Nanotime; tests replace it).
	now func() int64
}

func newPunt(cfg any, ctx *elements.Context) (elements.Element, error) {
	c := cfg.(*Config)
	p := &Punt{peers: append([]netip.Prefix(nil), c.peers...), st: ctx.Stats, now: elements.Nanotime}
	p.noDevice = ctx.Stats.Reason("other device")
	p.dispatch = elements.NewDispatch(ctx, p.noDevice)
	workers := int64(max(ctx.Workers, 1))
	for i, r := range c.rates() {
		share := (int64(r) + workers - 1) / workers
		depth := max(share*int64(c.Burst)/int64(time.Second), minBurst) * nanoPerToken
		if share == 0 {
			depth = 0
		}
		p.buckets[i] = bucket{rate: share, depth: depth, tokens: depth}
		p.over[i] = ctx.Stats.Reason(classNames[i] + " over rate")
		p.pub[i] = ctx.Stats.Counter("punted " + classNames[i])
	}
	for i, name := range c.Devices {
		_, idx, ok := ctx.Devices.Device(name)
		if !ok {
			return nil, elements.Errorf("devices", "no device %q", name)
		}
		for len(p.out) <= idx {
			p.out = append(p.out, 0)
		}
		p.out[idx] = uint8(i + 1)
	}
	return p, nil
}

// Push classifies, polices and sorts a batch by input device.
func (p *Punt) Push(_ int, b *packet.Batch) {
	now := p.now()
	if p.last != 0 {
		for i := range p.buckets {
			p.buckets[i].refill(now - p.last)
		}
	}
	p.last = now
	for _, pk := range b.Pkts {
		cl := p.classify(pk)
		if !p.buckets[cl].take() {
			p.st.Drop(pk, p.over[cl])
			continue
		}
		d := int(pk.InDevice)
		if d >= len(p.out) || p.out[d] == 0 {
			p.st.Drop(pk, p.noDevice)
			continue
		}
		p.punted[cl]++
		p.dispatch.Add(int(p.out[d]-1), pk)
	}
	b.Reset()
	p.dispatch.Flush()
	for i, n := range p.punted {
		if n != 0 {
			p.pub[i].Add(n)
			p.punted[i] = 0
		}
	}
}

// Routing-protocol numbers.
const (
	protoIGMP  = 2
	protoTCP   = 6
	protoUDP   = 17
	protoICMP  = 1
	protoICMP6 = 58
	protoOSPF  = 89
	protoPIM   = 103
	protoVRRP  = 112
)

// routingPort reports a TCP or UDP port of a routing protocol.
func routingPort(port uint16) bool {
	switch port {
	case 179, 3784, 3785, 4784, 646, 520, 521:
		return true
	}
	return false
}

// classify returns a packet's class. A frame too short for the headers
// it claims is "other": it goes to the kernel (which drops it, counted in
// its own statistics) only within the other class's rate.
func (p *Punt) classify(pk *packet.Packet) int {
	d := pk.Data
	l3 := int(pk.L3)
	if l3 < packet.EthernetLen || l3 > len(d) {
		return classOther
	}
	switch binary.BigEndian.Uint16(d[l3-2:]) {
	case packet.EtherTypeARP:
		return classNeighbor
	case packet.EtherTypeIPv4:
		h := d[l3:]
		if len(h) < 20 {
			return classOther
		}
		proto := h[9]
		l4 := h[min(int(h[0]&0xf)*4, len(h)):]
		first := binary.BigEndian.Uint16(h[6:])&0x1fff == 0
		if proto == protoICMP {
			return classICMP
		}
		if p.routing(proto, l4, first) && p.fromPeer(netip.AddrFrom4([4]byte(h[12:16]))) {
			return classRouting
		}
		return classOther
	case packet.EtherTypeIPv6:
		h := d[l3:]
		if len(h) < packet.IPv6Len {
			return classOther
		}
		u := packet.IPv6Upper(h)
		if !u.OK {
			return classOther
		}
		l4 := h[u.Off:u.End]
		if u.Proto == protoICMP6 {
			if len(l4) == 0 {
				return classICMP
			}
			switch t := l4[0]; {
			case t >= 133 && t <= 137:
				return classNeighbor
			case t >= 130 && t <= 132 || t == 143:
				return classRouting // MLD: multicast listeners, from anyone on the link
			}
			return classICMP
		}
		if p.routing(u.Proto, l4, u.FragOff == 0) && p.fromPeer(netip.AddrFrom16([16]byte(h[8:24]))) {
			return classRouting
		}
	}
	return classOther
}

// routing reports a routing protocol: by IP protocol, or by a TCP or UDP
// port on either side (a BGP session's packets have 179 on one side).
func (p *Punt) routing(proto uint8, l4 []byte, first bool) bool {
	switch proto {
	case protoIGMP, protoOSPF, protoPIM, protoVRRP:
		return true
	case protoTCP, protoUDP:
		if !first || len(l4) < 4 {
			return false
		}
		return routingPort(binary.BigEndian.Uint16(l4)) || routingPort(binary.BigEndian.Uint16(l4[2:]))
	}
	return false
}

// fromPeer reports whether a routing-protocol packet's source is one of
// the peers (any source when there are none).
func (p *Punt) fromPeer(src netip.Addr) bool {
	if len(p.peers) == 0 {
		return true
	}
	for _, pr := range p.peers {
		if pr.Contains(src) {
			return true
		}
	}
	return false
}
