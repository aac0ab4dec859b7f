package host

import (
	"encoding/binary"
	"testing"
	"time"

	"github.com/junction-dataplane/junction/drivers"
	"github.com/junction-dataplane/junction/elements"
	"github.com/junction-dataplane/junction/elements/elementtest"
	"github.com/junction-dataplane/junction/packet"
)

// devices numbers lan 0 and wan 1, as a graph's device order does.
type devices struct{}

func (devices) Device(name string) (drivers.Device, int, bool) {
	switch name {
	case "lan":
		return nil, 0, true
	case "wan":
		return nil, 1, true
	}
	return nil, 0, false
}
func (devices) Queues(string, int) []int { return nil }

func eth(typ uint16, l3 []byte) []byte {
	f := make([]byte, 14, 14+len(l3))
	binary.BigEndian.PutUint16(f[12:], typ)
	return append(f, l3...)
}

// ip4 is an IPv4 frame from src with protocol proto and, for TCP and
// UDP, ports sport and dport.
func ip4(src [4]byte, proto uint8, sport, dport uint16) []byte {
	h := make([]byte, 40)
	h[0], h[9] = 0x45, proto
	binary.BigEndian.PutUint16(h[2:], 40)
	copy(h[12:], src[:])
	copy(h[16:], []byte{10, 2, 0, 1})
	binary.BigEndian.PutUint16(h[20:], sport)
	binary.BigEndian.PutUint16(h[22:], dport)
	return eth(packet.EtherTypeIPv4, h)
}

// ip6 is an IPv6 frame with next header nh and first payload bytes l4.
func ip6(nh uint8, l4 ...byte) []byte {
	h := make([]byte, 40+8)
	h[0], h[6], h[7] = 0x60, nh, 64
	binary.BigEndian.PutUint16(h[4:], 8)
	h[8], h[9], h[23] = 0x20, 0x01, 2
	copy(h[40:], l4)
	return eth(packet.EtherTypeIPv6, h)
}

var (
	peer    = [4]byte{10, 2, 0, 2}
	spoofed = [4]byte{198, 51, 100, 7}
	arpReq  = eth(packet.EtherTypeARP, make([]byte, 28))
	bgp     = ip4(peer, protoTCP, 40000, 179)
	bgpSyn  = ip4(spoofed, protoTCP, 40000, 179)
	ssh     = ip4(peer, protoTCP, 40000, 22)
	bfd     = ip4(peer, protoUDP, 49152, 3784)
	ospf    = ip4(peer, protoOSPF, 0, 0)
	ping    = ip4(peer, protoICMP, 0, 0)
	ns6     = ip6(protoICMP6, 135)
	mld6    = ip6(protoICMP6, 143)
	echo6   = ip6(protoICMP6, 128)
	bgp6    = ip6(protoTCP, 0, 179, 0x9c, 0x40)
	dhcp    = ip4([4]byte{}, protoUDP, 68, 67)
	garbage = eth(packet.EtherTypeIPv4, []byte{0x45})
)

func newHarness(t testing.TB, c *Config, o *elementtest.Options) (*elementtest.Harness, *int64) {
	if o == nil {
		o = &elementtest.Options{}
	}
	o.Devices = devices{}
	if c.Devices == nil {
		c.Devices = []string{"lan", "wan"}
	}
	h := elementtest.New(t, "HostPunt", c, o)
	clock := new(int64)
	*clock = int64(time.Hour)
	h.Element.(*Punt).now = func() int64 { return *clock }
	return h, clock
}

func defaults() *Config {
	typ, _ := elements.Lookup("HostPunt")
	return typ.NewConfig().(*Config)
}

func TestClassify(t *testing.T) {
	c := defaults()
	c.Peers = []string{"10.2.0.0/24", "2001::/16"}
	h, _ := newHarness(t, c, nil)
	p := h.Element.(*Punt)
	for _, tc := range []struct {
		name  string
		frame []byte
		want  int
	}{
		{"arp", arpReq, classNeighbor},
		{"bgp from a peer", bgp, classRouting},
		{"bgp from elsewhere", bgpSyn, classOther},
		{"bfd", bfd, classRouting},
		{"ospf", ospf, classRouting},
		{"ssh", ssh, classOther},
		{"dhcp", dhcp, classOther},
		{"ping", ping, classICMP},
		{"neighbour solicitation", ns6, classNeighbor},
		{"mld", mld6, classRouting},
		{"echo6", echo6, classICMP},
		{"bgp over ipv6", bgp6, classRouting},
		{"truncated", garbage, classOther},
	} {
		pk := h.Packet(tc.frame)
		if got := p.classify(pk); got != tc.want {
			t.Errorf("%s: class %s, want %s", tc.name, classNames[got], classNames[tc.want])
		}
		pk.Free()
	}
}

// TestOutputsByDevice: a packet leaves on the output of the device it
// came in on; from another device it is dropped and counted.
func TestOutputsByDevice(t *testing.T) {
	h, _ := newHarness(t, defaults(), nil)
	a, b, c := h.Packet(ssh), h.Packet(arpReq), h.Packet(ping)
	a.InDevice, b.InDevice, c.InDevice = 1, 0, 7
	h.PushBatch(0, a, b, c)
	if len(h.Outs[0].Pkts) != 1 || h.Outs[0].Pkts[0] != b || len(h.Outs[1].Pkts) != 1 || h.Outs[1].Pkts[0] != a {
		t.Fatalf("outputs %d and %d packets, want the lan one on 0 and the wan one on 1", len(h.Outs[0].Pkts), len(h.Outs[1].Pkts))
	}
	if h.Counter("other device") != 1 || h.Counter("punted other") != 1 || h.Counter("punted neighbor") != 1 {
		t.Errorf("counters %v", h.Stats.Counters())
	}
	h.CheckNoLeak()
}

// TestPolicing: a flood of one class is cut to its bucket and rate and
// counted; the other classes pass untouched; the bucket refills with
// time.
func TestPolicing(t *testing.T) {
	c := defaults()
	c.OtherRate, c.RoutingRate = 1000, 100
	c.Burst = 50 * time.Millisecond // other: 50 packets, routing: the minimum, 16
	c.Peers = []string{"10.2.0.2"}
	h, clock := newHarness(t, c, &elementtest.Options{Workers: 2, PoolSize: 1024})
	// Two workers: each gets half the rate, 500 other/s (a 25-packet
	// bucket), 50 routing/s (16).
	send := func(n int, f []byte) {
		for i := 0; i < n; i += 32 {
			var pk []*packet.Packet
			for j := i; j < min(n, i+32); j++ {
				p := h.Packet(f)
				p.InDevice = 1
				pk = append(pk, p)
			}
			h.PushBatch(0, pk...)
			h.Reset()
		}
	}
	send(200, bgpSyn)
	send(10, bgp)
	if got := h.Counter("punted other"); got != 25 {
		t.Errorf("punted other %d of a 200-packet flood, want the bucket's 25", got)
	}
	if got := h.Counter("other over rate"); got != 175 {
		t.Errorf("other over rate %d, want 175", got)
	}
	if got := h.Counter("punted routing"); got != 10 {
		t.Errorf("the peer's BGP during the flood: %d of 10 punted", got)
	}
	*clock += int64(20 * time.Millisecond) // 500/s × 20 ms = 10 packets
	send(200, bgpSyn)
	if got := h.Counter("punted other"); got != 35 {
		t.Errorf("after 20 ms: punted other %d, want 35", got)
	}
	*clock += int64(time.Hour) // a long pause refills only to the bucket
	send(100, bgp)
	if got := h.Counter("punted routing"); got != 26 {
		t.Errorf("punted routing %d, want 10 + the 16 the refilled bucket holds", got)
	}
	h.CheckNoLeak()
}

// TestZeroRate: a class with rate 0 is never punted.
func TestZeroRate(t *testing.T) {
	c := defaults()
	c.ICMPRate = 0
	h, _ := newHarness(t, c, nil)
	p := h.Packet(ping)
	h.PushBatch(0, p)
	if h.Counter("icmp over rate") != 1 || len(h.Outs[0].Pkts) != 0 {
		t.Errorf("icmp with rate 0: counters %v", h.Stats.Counters())
	}
}

func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		mod  func(*Config)
		key  string
	}{
		{"no devices", func(c *Config) { c.Devices = nil }, "devices"},
		{"negative rate", func(c *Config) { c.RoutingRate = -1 }, "routing_rate"},
		{"burst", func(c *Config) { c.Burst = 0 }, "burst"},
		{"peers", func(c *Config) { c.Peers = []string{"10.2.0.0/33"} }, "peers"},
		{"ok", func(c *Config) { c.Peers = []string{"10.2.0.2", "2001:db8::/32"} }, ""},
	} {
		c := defaults()
		c.Devices = []string{"lan"}
		tc.mod(c)
		wantKeyError(t, tc.name, c.Validate(), tc.key)
	}
}

// wantKeyError checks a Validate error: none for key "", else one
// naming key.
func wantKeyError(t *testing.T, name string, err error, key string) {
	t.Helper()
	ke, _ := err.(*elements.KeyError)
	switch {
	case key == "" && err != nil:
		t.Errorf("%s: %v", name, err)
	case key != "" && (ke == nil || ke.Key != key):
		t.Errorf("%s: err = %v, want key %q", name, err, key)
	}
}

func TestNoAllocs(t *testing.T) {
	h, _ := newHarness(t, defaults(), &elementtest.Options{Sink: true})
	if a := h.AllocsPerBatch(100, bgp, ssh, arpReq, ns6, bgp6, ping); a != 0 {
		t.Errorf("%.1f allocations per batch", a)
	}
}

// BenchmarkPunt: a mixed batch (ns/packet; the punt path's cost before
// the TAP's write).
func BenchmarkPunt(b *testing.B) {
	c := defaults()
	c.Peers = []string{"10.2.0.0/24"}
	h, _ := newHarness(b, c, &elementtest.Options{Sink: true})
	h.Bench(b, bgp, ssh, arpReq, ns6, bgp6, ping, bgpSyn, bfd)
}
