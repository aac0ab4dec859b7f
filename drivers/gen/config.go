package gen

import (
	"math"
	"net/netip"
	"strconv"
	"strings"

	"github.com/junction-dataplane/junction/conf"
	"github.com/junction-dataplane/junction/packet"
)

// Config is the gen driver's keys (see manual).
type Config struct {
	Count int64   `toml:"count"`
	Rate  float64 `toml:"rate"`
	Size  int     `toml:"size"`
	Src   string  `toml:"src"`
	Dst   string  `toml:"dst"`
	Flows int64   `toml:"flows"`
	// SplitFlows gives each flow to one queue (see manual).
	SplitFlows bool   `toml:"split_flows"`
	Proto      string `toml:"proto"`
	// Sport and Dport are a port or a LO-HI range (see manual).
	Sport  Ports  `toml:"sport"`
	Dport  Ports  `toml:"dport"`
	Queues int    `toml:"queues"`
	Seed   int64  `toml:"seed"`
	SrcMAC string `toml:"src_mac"`
	DstMAC string `toml:"dst_mac"`

	// Sequence numbers the frames (see manual).
	Sequence bool `toml:"sequence"`
}

// Defaults. The addresses come from 198.18.0.0/15, the range RFC 2544
// reserves for benchmarking, so generated traffic never looks like a real
// network's.
const (
	DefaultSize   = 64
	DefaultSrc    = "198.18.0.1"
	DefaultDst    = "198.19.0.0/16"
	DefaultProto  = "udp"
	DefaultSeed   = 1
	DefaultSrcMAC = "02:00:00:00:00:01"
	// DefaultDstMAC is used when the device has no mac key; otherwise the
	// frames are addressed to the device's own MAC, as a peer would.
	DefaultDstMAC = "02:00:00:00:00:02"

	// MaxSize is the largest standard Ethernet frame without FCS.
	MaxSize = 1514
	// MaxQueues bounds the queues key (each queue has its own pool).
	MaxQueues = 256
	// MaxRate bounds the rate key: far above what one core can build, and
	// small enough that the token arithmetic stays exact.
	MaxRate = 1e10

	// DstPort is the default destination port (discard, RFC 863);
	// FirstSrcPort is flow 0's source port by default, the first of
	// DefaultSport.
	DstPort      = 9
	FirstSrcPort = 1024
	DefaultSport = "1024-65535"
)

// Ports is a port or an inclusive range of ports, "23" or "1024-65535"; a
// TOML integer is a single port.
type Ports string

// UnmarshalText takes the text as written (checked by validate).
func (p *Ports) UnmarshalText(b []byte) error { *p = Ports(b); return nil }

// parsePorts parses a Ports value: the first port and how many.
func parsePorts(key string, p Ports) (uint32, uint32, error) {
	s := strings.TrimSpace(string(p))
	lo, hi, isRange := strings.Cut(s, "-")
	a, err1 := strconv.ParseUint(strings.TrimSpace(lo), 10, 16)
	b := a
	var err2 error
	if isRange {
		b, err2 = strconv.ParseUint(strings.TrimSpace(hi), 10, 16)
	}
	if err1 != nil || err2 != nil || b < a {
		return 0, 0, conf.Errorf(key, "%q: want a port (0-65535) or a range LO-HI such as \"1024-65535\"", s)
	}
	return uint32(a), uint32(b-a) + 1, nil
}

func newConfig() any {
	return &Config{Size: DefaultSize, Src: DefaultSrc, Dst: DefaultDst, Flows: 1,
		Proto: DefaultProto, Seed: DefaultSeed, SrcMAC: DefaultSrcMAC, Sport: DefaultSport}
}

// addrRange is a run of consecutive IPv4 addresses.
type addrRange struct {
	first uint32
	n     uint64 // ≥ 1, ≤ 2^32
}

// parseRange parses an address or a CIDR. A prefix of /30 or shorter means
// its hosts (the network and broadcast addresses are left out, so that a
// generated destination is never a subnet broadcast); /31 and /32 mean every
// address, as RFC 3021 has it.
func parseRange(key, s string) (addrRange, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return addrRange{}, conf.Errorf(key, "empty address")
	}
	if lo, hi, ok := strings.Cut(s, "-"); ok {
		// An inclusive range FIRST-LAST, e.g. 10.0.0.0-10.18.255.255
		// (1.25M destinations: what no single CIDR gives).
		a, err1 := netip.ParseAddr(strings.TrimSpace(lo))
		z, err2 := netip.ParseAddr(strings.TrimSpace(hi))
		if err1 != nil || err2 != nil || !a.Is4() || !z.Is4() || u32(z) < u32(a) {
			return addrRange{}, conf.Errorf(key, "bad range %q: want FIRST-LAST, two IPv4 addresses in order", s)
		}
		return addrRange{first: u32(a), n: uint64(u32(z)-u32(a)) + 1}, nil
	}
	if !strings.Contains(s, "/") {
		a, err := netip.ParseAddr(s)
		if err != nil {
			return addrRange{}, conf.Errorf(key, "bad address %q", s)
		}
		if !a.Is4() {
			return addrRange{}, conf.Errorf(key, "%q is not an IPv4 address", s)
		}
		return addrRange{first: u32(a), n: 1}, nil
	}
	p, err := netip.ParsePrefix(s)
	if err != nil {
		return addrRange{}, conf.Errorf(key, "bad CIDR %q", s)
	}
	if !p.Addr().Is4() {
		return addrRange{}, conf.Errorf(key, "%q is not an IPv4 prefix", s)
	}
	p = p.Masked()
	hostBits := 32 - p.Bits()
	r := addrRange{first: u32(p.Addr()), n: uint64(1) << hostBits}
	if hostBits >= 2 {
		r.first++
		r.n -= 2
	}
	return r, nil
}

func u32(a netip.Addr) uint32 {
	b := a.As4()
	return uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
}

// settings is a validated Config.
type settings struct {
	count    int64
	rate     float64
	size     int
	src, dst addrRange
	flows    uint64
	split    bool
	proto    uint8
	// The source ports of the flows: sportN from sport0; the destination
	// ports, drawn per packet: dportN from dport0 (ICMP: the echo
	// identifier takes the source port's role, and there is no dport).
	sport0, sportN uint32
	dport0, dportN uint32
	queues         int
	seed           uint64
	srcMAC         packet.MAC
	dstMAC         packet.MAC
	// v6: IPv6 traffic (gen6.go); src6 and dst6 are the addresses whose
	// low 32 bits src and dst range over.
	v6         bool
	src6, dst6 [16]byte
	sequence   bool
}

// SeqOffset is where, with the sequence key, a frame's queue (2 bytes) and
// sequence number on that queue (8 bytes) start: the UDP payload.
const SeqOffset = l4Off + 8

// minSize is the size of the headers alone.
func minSize(proto uint8) int {
	switch proto {
	case packet.ProtoTCP:
		return packet.EthernetLen + packet.IPv4MinLen + packet.TCPMinLen
	case packet.ProtoICMP:
		return packet.EthernetLen + packet.IPv4MinLen + icmpLen
	}
	return packet.EthernetLen + packet.IPv4MinLen + packet.UDPLen
}

// icmpLen is an ICMP echo request's header: type, code, checksum,
// identifier, sequence number.
const icmpLen = 8

func (c *Config) validate(workers int, devMAC packet.MAC) (settings, error) {
	var s settings
	if c.Count < 0 {
		return s, conf.Errorf("count", "must be ≥ 0 (0 = endless), got %d", c.Count)
	}
	s.count = c.Count
	if c.Rate < 0 || math.IsNaN(c.Rate) || c.Rate > MaxRate {
		return s, conf.Errorf("rate", "must be between 0 (as fast as possible) and %g packets/s, got %g", float64(MaxRate), c.Rate)
	}
	s.rate = c.Rate
	switch strings.ToLower(c.Proto) {
	case "udp":
		s.proto = packet.ProtoUDP
	case "tcp":
		s.proto = packet.ProtoTCP
	case "icmp":
		s.proto = packet.ProtoICMP
	default:
		return s, conf.Errorf("proto", "%q: want \"udp\", \"tcp\" or \"icmp\"", c.Proto)
	}
	var err error
	sport := c.Sport
	if sport == "" {
		sport = DefaultSport
	}
	if s.sport0, s.sportN, err = parsePorts("sport", sport); err != nil {
		return s, err
	}
	switch {
	case s.proto == packet.ProtoICMP && c.Dport != "":
		return s, conf.Errorf("dport", "ICMP has no ports: an echo request's identifier is its flow's sport")
	case s.proto == packet.ProtoICMP:
		s.dport0, s.dportN = 0, 1
	case c.Dport == "":
		s.dport0, s.dportN = DstPort, 1
	default:
		if s.dport0, s.dportN, err = parsePorts("dport", c.Dport); err != nil {
			return s, err
		}
	}
	s.v6 = c.isV6()
	if s.v6 {
		// gen6.go's frames keep the default ports and carry UDP or TCP.
		switch {
		case s.proto == packet.ProtoICMP:
			return s, conf.Errorf("proto", "icmp is ICMPv4 echo: not available with IPv6 src/dst")
		case c.Sport != "" && c.Sport != DefaultSport:
			return s, conf.Errorf("sport", "port ranges are not available with IPv6 src/dst")
		case c.Dport != "":
			return s, conf.Errorf("dport", "port ranges are not available with IPv6 src/dst")
		}
	}
	lo := minSize(s.proto)
	if s.v6 {
		lo += packet.IPv6Len - packet.IPv4MinLen
	}
	if c.Size < lo || c.Size > MaxSize {
		return s, conf.Errorf("size", "%d bytes out of range [%d, %d] for %s frames", c.Size, lo, MaxSize, strings.ToLower(c.Proto))
	}
	s.size = c.Size
	if s.v6 {
		src := c.Src
		if src == DefaultSrc {
			src = DefaultSrc6
		}
		if s.src6, s.src, err = parseRange6("src", src); err != nil {
			return s, err
		}
		if s.dst6, s.dst, err = parseRange6("dst", c.Dst); err != nil {
			return s, err
		}
	} else {
		if s.src, err = parseRange("src", c.Src); err != nil {
			return s, err
		}
		if s.dst, err = parseRange("dst", c.Dst); err != nil {
			return s, err
		}
	}
	if c.Flows < 1 {
		return s, conf.Errorf("flows", "must be ≥ 1, got %d", c.Flows)
	}
	// Per-packet flow choice multiplies 32 random bits by flows, and each
	// flow needs its own (source address, source port) pair.
	maxFlows := min(s.src.n*uint64(s.sportN), math.MaxUint32)
	if uint64(c.Flows) > maxFlows {
		return s, conf.Errorf("flows", "%d flows exceed the %d distinct (source address, source port) pairs src %q and sport %q offer", c.Flows, maxFlows, c.Src, string(sport))
	}
	s.flows = uint64(c.Flows)
	if c.Queues < 0 || c.Queues > MaxQueues {
		return s, conf.Errorf("queues", "must be between 0 (one per worker) and %d, got %d", MaxQueues, c.Queues)
	}
	s.queues = c.Queues
	if s.queues == 0 {
		s.queues = max(workers, 1)
	}
	s.split = c.SplitFlows
	if s.split && s.flows < uint64(s.queues) {
		return s, conf.Errorf("split_flows", "%d flows cannot be split over %d queues: want flows ≥ queues", s.flows, s.queues)
	}
	s.seed = uint64(c.Seed)
	if c.Sequence && (s.proto != packet.ProtoUDP || s.size < SeqOffset+10) {
		return s, conf.Errorf("sequence", "needs proto \"udp\" and size ≥ %d (the queue and sequence number are the payload's first 10 bytes)", SeqOffset+10)
	}
	s.sequence = c.Sequence
	var ok bool
	if s.srcMAC, ok = packet.ParseMAC(c.SrcMAC); !ok {
		return s, conf.Errorf("src_mac", "bad MAC address %q", c.SrcMAC)
	}
	switch {
	case c.DstMAC != "":
		if s.dstMAC, ok = packet.ParseMAC(c.DstMAC); !ok {
			return s, conf.Errorf("dst_mac", "bad MAC address %q", c.DstMAC)
		}
	case devMAC != packet.MAC{}:
		s.dstMAC = devMAC
	default:
		s.dstMAC, _ = packet.ParseMAC(DefaultDstMAC)
	}
	return s, nil
}
