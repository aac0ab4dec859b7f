package arp_test

import (
	"bytes"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/gopacket"
	"github.com/google/gopacket/layers"

	"github.com/junction-dataplane/junction/drivers"
	"github.com/junction-dataplane/junction/elements"
	"github.com/junction-dataplane/junction/elements/arp"
	"github.com/junction-dataplane/junction/elements/elementtest"
	"github.com/junction-dataplane/junction/packet"
)

var (
	devMAC  = net.HardwareAddr{0x02, 0x00, 0x00, 0x00, 0x02, 0x01}
	peerMAC = net.HardwareAddr{0x02, 0x00, 0x00, 0x00, 0x02, 0x02}
	wanDev  = elementtest.Device{DevInfo: drivers.Info{Name: "wan", MAC: packet.MAC(devMAC), Addresses: []netip.Prefix{
		netip.MustParsePrefix("10.2.0.1/24"), netip.MustParsePrefix("2001:db8::1/64")}}}
)

// fakeClock is a settable clock for the querier.
type fakeClock struct{ ns atomic.Int64 }

func (c *fakeClock) now() int64          { return c.ns.Load() }
func (c *fakeClock) add(d time.Duration) { c.ns.Add(int64(d)) }

// testClock is the clock useClock set for the running test: queriers
// built by newQuerier and newOnWorker run on it.
var testClock *fakeClock

func useClock(t testing.TB) *fakeClock {
	c := &fakeClock{}
	c.ns.Store(int64(time.Hour))
	testClock = c
	t.Cleanup(func() { testClock = nil })
	return c
}

// withClock puts querier q on the test's clock, if it set one.
func withClock(q elements.Element) elements.Element {
	if testClock != nil {
		arp.SetClock(q, testClock.now)
	}
	return q
}
func querierCfg(neigh ...string) *arp.QuerierConfig {
	typ, _ := elements.Lookup("ARPQuerier")
	c := typ.NewConfig().(*arp.QuerierConfig)
	c.Device = "wan"
	c.Neighbors = neigh
	return c
}

func newQuerier(t testing.TB, c *arp.QuerierConfig, o *elementtest.Options) *elementtest.Harness {
	if o == nil {
		o = &elementtest.Options{}
	}
	if o.Devices == nil {
		o.Devices = elementtest.Devices{"wan": wanDev}
	}
	h := elementtest.New(t, "ARPQuerier", c, o)
	withClock(h.Element)
	return h
}

// ipFrame is an Ethernet/IPv4/UDP frame to dst (its Ethernet header is
// junk: ARPQuerier must overwrite it).
func ipFrame(t testing.TB, src, dst string) []byte {
	eth := &layers.Ethernet{SrcMAC: net.HardwareAddr{1, 1, 1, 1, 1, 1}, DstMAC: net.HardwareAddr{3, 3, 3, 3, 3, 3},
		EthernetType: layers.EthernetTypeIPv4}
	ip := &layers.IPv4{Version: 4, IHL: 5, TTL: 63, Protocol: layers.IPProtocolUDP,
		SrcIP: net.IP(ip4(src)), DstIP: net.IP(ip4(dst))}
	udp := &layers.UDP{SrcPort: 1234, DstPort: 9}
	udp.SetNetworkLayerForChecksum(ip)
	buf := gopacket.NewSerializeBuffer()
	if err := gopacket.SerializeLayers(buf, gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true},
		eth, ip, udp, gopacket.Payload("hello")); err != nil {
		t.Fatal(err)
	}
	return append([]byte(nil), buf.Bytes()...)
}

// arpMsg builds an ARP frame from sha/spa to tpa.
func arpMsg(t testing.TB, op uint16, sha net.HardwareAddr, spa, tpa string) []byte {
	return arpFrame{op: op, sha: sha, spa: spa, tpa: tpa}.bytes(t)
}

type decoded struct {
	eth *layers.Ethernet
	arp *layers.ARP
	ip  *layers.IPv4
}

func decode(t testing.TB, f []byte) decoded {
	t.Helper()
	pk := gopacket.NewPacket(f, layers.LayerTypeEthernet, gopacket.Default)
	if el := pk.ErrorLayer(); el != nil {
		t.Fatalf("decode: %v", el.Error())
	}
	var d decoded
	d.eth, _ = pk.Layer(layers.LayerTypeEthernet).(*layers.Ethernet)
	d.arp, _ = pk.Layer(layers.LayerTypeARP).(*layers.ARP)
	d.ip, _ = pk.Layer(layers.LayerTypeIPv4).(*layers.IPv4)
	return d
}

func checkRequest(t testing.TB, f []byte, dst net.HardwareAddr, spa, tpa string) {
	t.Helper()
	d := decode(t, f)
	if d.arp == nil {
		t.Fatalf("not an ARP frame: % x", f)
	}
	if !bytes.Equal(d.eth.DstMAC, dst) || !bytes.Equal(d.eth.SrcMAC, devMAC) || len(f) < 60 {
		t.Errorf("request Ethernet %v -> %v len %d", d.eth.SrcMAC, d.eth.DstMAC, len(f))
	}
	if d.arp.Operation != layers.ARPRequest || !bytes.Equal(d.arp.SourceHwAddress, devMAC) ||
		!bytes.Equal(d.arp.SourceProtAddress, ip4(spa)) || !bytes.Equal(d.arp.DstProtAddress, ip4(tpa)) ||
		!bytes.Equal(d.arp.DstHwAddress, make([]byte, 6)) {
		t.Errorf("bad request %+v", d.arp)
	}
}

func checkIP(t testing.TB, f []byte, dstMAC net.HardwareAddr, dstIP string) {
	t.Helper()
	d := decode(t, f)
	if d.ip == nil {
		t.Fatalf("not an IPv4 frame: % x", f)
	}
	if !bytes.Equal(d.eth.DstMAC, dstMAC) || !bytes.Equal(d.eth.SrcMAC, devMAC) || d.eth.EthernetType != layers.EthernetTypeIPv4 {
		t.Errorf("Ethernet %v -> %v type %v, want %v -> %v", d.eth.SrcMAC, d.eth.DstMAC, d.eth.EthernetType, devMAC, dstMAC)
	}
	if d.ip.DstIP.String() != dstIP {
		t.Errorf("IP dst %v, want %s", d.ip.DstIP, dstIP)
	}
}

func TestARPQuerierResolve(t *testing.T) {
	clk := useClock(t)
	h := newQuerier(t, querierCfg(), nil)
	// Two packets to an unknown next hop: one broadcast request, both held.
	h.PushVia(0, "10.2.0.2", ipFrame(t, "10.1.0.5", "10.16.0.1"), ipFrame(t, "10.1.0.5", "10.16.0.2"))
	out := h.Outs[0].Frames()
	if len(out) != 1 {
		t.Fatalf("%d frames out, want 1 request", len(out))
	}
	checkRequest(t, out[0], bcastMAC, "10.2.0.1", "10.2.0.2")
	if h.Counter("held") != 2 || h.Counter("requests") != 1 {
		t.Fatalf("counters %v", h.Stats.Counters())
	}
	h.Reset()
	// Within a second no second request for that hop.
	clk.add(500 * time.Millisecond)
	h.PushVia(0, "10.2.0.2", ipFrame(t, "10.1.0.5", "10.16.0.3"))
	h.Element.(elements.Ticker).Tick(clk.now())
	if n := len(h.Outs[0].Pkts); n != 0 || h.Counter("requests") != 1 {
		t.Fatalf("%d frames, %d requests within a second", n, h.Counter("requests"))
	}
	// The reply (a frame to us) releases the three, in order.
	h.Push(1, arpMsg(t, layers.ARPReply, peerMAC, "10.2.0.2", "10.2.0.1"))
	out = h.Outs[0].Frames()
	if len(out) != 3 || h.Counter("released") != 3 || h.Counter("learned") != 1 {
		t.Fatalf("%d frames after reply, counters %v", len(out), h.Stats.Counters())
	}
	for i, f := range out {
		checkIP(t, f, peerMAC, fmt.Sprintf("10.16.0.%d", i+1))
	}
	h.Reset()
	// Now resolved: straight through, with the destination itself as next
	// hop when there is no annotation.
	h.PushVia(0, "10.2.0.2", ipFrame(t, "10.1.0.5", "10.16.0.9"))
	h.PushVia(0, "", ipFrame(t, "10.1.0.5", "10.2.0.2"))
	out = h.Outs[0].Frames()
	if len(out) != 2 {
		t.Fatalf("%d frames for a resolved hop", len(out))
	}
	checkIP(t, out[0], peerMAC, "10.16.0.9")
	checkIP(t, out[1], peerMAC, "10.2.0.2")
	h.Reset()
	h.CheckNoLeak()
}

func TestARPQuerierAgeing(t *testing.T) {
	clk := useClock(t)
	c := querierCfg()
	c.Timeout = 10 * time.Second
	h := newQuerier(t, c, nil)
	// Learnt from a request for our address (the host pings us first).
	h.Push(1, arpMsg(t, layers.ARPRequest, peerMAC, "10.2.0.2", "10.2.0.1"))
	if h.Counter("learned") != 1 {
		t.Fatalf("request to us not learnt: %v", h.Stats.Counters())
	}
	h.PushVia(0, "10.2.0.2", ipFrame(t, "10.1.0.5", "10.2.0.2"))
	if out := h.Outs[0].Frames(); len(out) != 1 {
		t.Fatalf("learnt entry not used: %d frames", len(out))
	}
	h.Reset()
	// Past the timeout: still used, and re-probed by unicast, once per
	// second.
	clk.add(11 * time.Second)
	h.PushVia(0, "10.2.0.2", ipFrame(t, "10.1.0.5", "10.2.0.2"), ipFrame(t, "10.1.0.5", "10.2.0.2"))
	out := h.Outs[0].Frames()
	if len(out) != 3 {
		t.Fatalf("stale entry: %d frames, want 2 packets + 1 probe", len(out))
	}
	// The packets first, then the probe made while resolving them.
	checkIP(t, out[0], peerMAC, "10.2.0.2")
	checkIP(t, out[1], peerMAC, "10.2.0.2")
	checkRequest(t, out[2], peerMAC, "10.2.0.1", "10.2.0.2")
	h.Reset()
	// Past the grace: unresolved, packets held, broadcast request.
	clk.add(3 * time.Second)
	h.PushVia(0, "10.2.0.2", ipFrame(t, "10.1.0.5", "10.2.0.2"))
	out = h.Outs[0].Frames()
	if len(out) != 1 || h.Counter("held") != 1 {
		t.Fatalf("dead entry: %d frames, counters %v", len(out), h.Stats.Counters())
	}
	checkRequest(t, out[0], bcastMAC, "10.2.0.1", "10.2.0.2")
	h.Reset()
	// Retries once a second from Tick, then gives up after 3 s.
	for i := 0; i < 3; i++ {
		clk.add(time.Second)
		h.Element.(elements.Ticker).Tick(clk.now())
	}
	if h.Counter("requests") != 4 || h.Counter("unresolved") != 1 {
		t.Fatalf("retries: counters %v", h.Stats.Counters())
	}
	h.Reset()
	h.CheckNoLeak()
}

func TestARPQuerierStatic(t *testing.T) {
	useClock(t)
	h := newQuerier(t, querierCfg("10.2.0.2 02:00:00:00:02:02"), nil)
	h.PushVia(0, "10.2.0.2", ipFrame(t, "10.1.0.5", "10.16.0.1"))
	out := h.Outs[0].Frames()
	if len(out) != 1 || h.Counter("requests") != 0 {
		t.Fatalf("static: %d frames, %v", len(out), h.Stats.Counters())
	}
	checkIP(t, out[0], peerMAC, "10.16.0.1")
	// ARP never overrides a static entry.
	h.Push(1, arpMsg(t, layers.ARPReply, ourMAC2, "10.2.0.2", "10.2.0.1"))
	if h.Counter("learned") != 0 {
		t.Fatalf("static entry overridden")
	}
}

// Learning rules: requests for our address make entries; unsolicited
// replies and requests for others do not.
func TestARPQuerierLearning(t *testing.T) {
	useClock(t)
	h := newQuerier(t, querierCfg(), nil)
	h.Push(1,
		arpMsg(t, layers.ARPReply, peerMAC, "10.2.0.7", "10.2.0.1"),    // unsolicited
		arpMsg(t, layers.ARPRequest, peerMAC, "10.2.0.8", "10.2.0.99"), // not for us
		arpMsg(t, layers.ARPRequest, peerMAC, "0.0.0.0", "10.2.0.1"),   // probe: ignored
	)
	if h.Counter("learned") != 0 {
		t.Fatalf("learnt from unsolicited ARP: %v", h.Stats.Counters())
	}
	h.PushVia(0, "10.2.0.7", ipFrame(t, "10.1.0.5", "10.2.0.7"))
	if h.Counter("held") != 1 {
		t.Fatalf("unsolicited reply made an entry")
	}
	h.Reset()
	h.Element.(elements.Closer).Close()
	h.CheckNoLeak()
}

func TestARPQuerierDrops(t *testing.T) {
	clk := useClock(t)
	c := querierCfg()
	c.Hold = 2
	h := newQuerier(t, c, nil)
	ipf := ipFrame(t, "10.1.0.5", "10.2.0.50")

	// queue full: 3 packets for one hop with hold 2.
	h.PushVia(0, "10.2.0.3", ipf, ipf, ipf)
	// too many unresolved: 65 distinct hops (one above is already held).
	for i := 0; i < 64; i++ {
		h.PushVia(0, fmt.Sprintf("10.2.1.%d", i+1), ipf)
	}
	// truncated: no annotation and no IPv4 header.
	h.Push(0, ipf[:20])
	// not ipv4: an IPv6 next hop.
	h.PushVia(0, "2001:db8::2", ipf)
	// no headroom: L3 at 0 with the frame at the start of its buffer.
	p := h.Pool.Get()
	p.Data = p.Buffer()[:len(ipf)-14]
	copy(p.Data, ipf[14:])
	p.L3 = 0
	h.Push(1, arpMsg(t, layers.ARPRequest, peerMAC, "10.2.0.9", "10.2.0.1"))
	p.NextHop = netip.MustParseAddr("10.2.0.9")
	h.PushBatch(0, p)
	// input 1: not arp, bad sender (multicast MAC, our own MAC, our IP).
	h.Push(1, ipf, arpMsg(t, layers.ARPReply, bcastMAC, "10.2.0.3", "10.2.0.1"),
		arpMsg(t, layers.ARPReply, devMAC, "10.2.0.3", "10.2.0.1"),
		arpMsg(t, layers.ARPReply, peerMAC, "10.2.0.1", "10.2.0.1"),
		arpMsg(t, layers.ARPReply, peerMAC, "10.2.0.3", "10.2.0.1")[:30])
	// unresolved: everything held times out.
	clk.add(4 * time.Second)
	h.Element.(elements.Ticker).Tick(clk.now())

	want := map[string]uint64{
		"queue full": 1, "too many unresolved": 1, "truncated": 1, "not ipv4": 1, "no headroom": 1,
		"not arp": 2, "bad sender": 3, "unresolved": 2 + 63,
	}
	for k, v := range want {
		if got := h.Counter(k); got != v {
			t.Errorf("%s = %d, want %d", k, got, v)
		}
	}
	h.Reset()
	h.CheckNoLeak()
}

// The global request rate: 65 new hops at rate 10 send 10 requests.
func TestARPQuerierRate(t *testing.T) {
	useClock(t)
	c := querierCfg()
	c.Rate = 10
	h := newQuerier(t, c, nil)
	ipf := ipFrame(t, "10.1.0.5", "10.2.0.50")
	for i := 0; i < 30; i++ {
		h.PushVia(0, fmt.Sprintf("10.2.1.%d", i+1), ipf)
	}
	if h.Counter("requests") != 10 || h.Counter("rate limited") != 20 {
		t.Fatalf("counters %v", h.Stats.Counters())
	}
}

func TestARPQuerierClose(t *testing.T) {
	useClock(t)
	h := newQuerier(t, querierCfg(), nil)
	h.PushVia(0, "10.2.0.2", ipFrame(t, "10.1.0.5", "10.16.0.1"))
	h.Reset()
	if h.Pool.Outstanding() != 1 {
		t.Fatalf("outstanding %d", h.Pool.Outstanding())
	}
	h.Element.(elements.Closer).Close()
	if h.Pool.Outstanding() != 0 || h.Counter("unresolved") != 1 {
		t.Fatalf("close left %d packets", h.Pool.Outstanding())
	}
}

func TestARPQuerierConfig(t *testing.T) {
	bad := []struct {
		key string
		mod func(c *arp.QuerierConfig)
	}{
		{"device", func(c *arp.QuerierConfig) { c.Device = "" }},
		{"timeout", func(c *arp.QuerierConfig) { c.Timeout = 0 }},
		{"hold", func(c *arp.QuerierConfig) { c.Hold = 0 }},
		{"hold", func(c *arp.QuerierConfig) { c.Hold = 65 }},
		{"rate", func(c *arp.QuerierConfig) { c.Rate = 0 }},
		{"neighbors", func(c *arp.QuerierConfig) { c.Neighbors = []string{"10.2.0.2"} }},
		{"neighbors", func(c *arp.QuerierConfig) { c.Neighbors = []string{"10.2.0.x 02:00:00:00:00:01"} }},
		{"neighbors", func(c *arp.QuerierConfig) { c.Neighbors = []string{"10.2.0.2 02:00:00:00:00"} }},
		{"neighbors", func(c *arp.QuerierConfig) { c.Neighbors = []string{"10.2.0.2 ff:ff:ff:ff:ff:ff"} }},
	}
	for _, tt := range bad {
		c := querierCfg()
		tt.mod(c)
		err := c.Validate()
		ke, ok := err.(*elements.KeyError)
		if !ok || ke.Key != tt.key {
			t.Errorf("%s: got %v", tt.key, err)
		}
	}
	// New: unknown device, device without MAC.
	typ, _ := elements.Lookup("ARPQuerier")
	for name, set := range map[string]elementtest.Devices{"unknown": {}, "no mac": {"wan": elementtest.Device{}}} {
		c := querierCfg()
		if err := c.Validate(); err != nil {
			t.Fatal(err)
		}
		ctx := elements.NewContext("a", 0, 1, 64, []*elements.Output{elements.NewOutput(&elements.Clock{})},
			&elements.Stats{}, packet.NewPool(4), set, nil)
		if _, err := typ.New(c, ctx); err == nil {
			t.Errorf("%s: New succeeded", name)
		}
	}
}

// Two workers share the table: worker 1 sees the reply, worker 0 releases
// the packets it holds on its next tick.
func TestARPQuerierSharedTable(t *testing.T) {
	clk := useClock(t)
	typ, _ := elements.Lookup("ARPQuerier")
	c := querierCfg()
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	slot := &elements.SharedSlot{}
	type inst struct {
		q    elements.Element
		rec  *elementtest.Recorder
		pool *packet.Pool
	}
	mk := func(w int) inst {
		out := elements.NewOutput(&elements.Clock{})
		rec := &elementtest.Recorder{}
		out.Connect(rec, 0, &elements.Stats{})
		pool := packet.NewPool(64)
		ctx := elements.NewContext("aq", w, 2, 64, []*elements.Output{out}, &elements.Stats{}, pool, elementtest.Devices{"wan": wanDev}, slot)
		q, err := typ.New(c, ctx)
		if err != nil {
			t.Fatal(err)
		}
		withClock(q)
		return inst{q, rec, pool}
	}
	w0, w1 := mk(0), mk(1)
	b := packet.NewBatch(64)
	p := w0.pool.Get()
	p.SetFrame(ipFrame(t, "10.1.0.5", "10.16.0.1"))
	p.NextHop = netip.MustParseAddr("10.2.0.2")
	b.Add(p)
	w0.q.Push(0, b)
	if len(w0.rec.Pkts) != 1 { // the request
		t.Fatalf("w0 sent %d", len(w0.rec.Pkts))
	}
	// Worker 1 has a packet for the same hop: held, no second request.
	p = w1.pool.Get()
	p.SetFrame(ipFrame(t, "10.1.0.5", "10.16.0.2"))
	p.NextHop = netip.MustParseAddr("10.2.0.2")
	b.Reset()
	b.Add(p)
	w1.q.Push(0, b)
	if len(w1.rec.Pkts) != 0 {
		t.Fatalf("second worker sent a request within the second")
	}
	p = w1.pool.Get()
	p.SetFrame(arpMsg(t, layers.ARPReply, peerMAC, "10.2.0.2", "10.2.0.1"))
	b.Reset()
	b.Add(p)
	w1.q.Push(1, b)
	if len(w1.rec.Pkts) != 1 {
		t.Fatalf("w1 did not release its packet")
	}
	w0.q.(elements.Ticker).Tick(clk.now())
	if len(w0.rec.Pkts) != 2 {
		t.Fatalf("w0 did not release after the tick: %d", len(w0.rec.Pkts))
	}
	checkIP(t, w0.rec.Pkts[1].Data, peerMAC, "10.16.0.1")
	w0.rec.Reset()
	w1.rec.Reset()
}

// Concurrent learners and readers on the shared table (run with -race).
func TestARPQuerierConcurrent(t *testing.T) {
	typ, _ := elements.Lookup("ARPQuerier")
	c := querierCfg()
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	slot := &elements.SharedSlot{}
	var insts []elements.Element
	var pools []*packet.Pool
	for w := 0; w < 2; w++ {
		out := elements.NewOutput(&elements.Clock{})
		out.Connect(&elementtest.Sink{}, 0, &elements.Stats{})
		pool := packet.NewPool(512)
		ctx := elements.NewContext("aq", w, 2, 64, []*elements.Output{out}, &elements.Stats{}, pool, elementtest.Devices{"wan": wanDev}, slot)
		q, err := typ.New(c, ctx)
		if err != nil {
			t.Fatal(err)
		}
		withClock(q)
		insts, pools = append(insts, q), append(pools, pool)
	}
	ipf := ipFrame(t, "10.1.0.5", "10.16.0.1")
	var wg sync.WaitGroup
	for w := 0; w < 2; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			b := packet.NewBatch(64)
			for i := 0; i < 300; i++ {
				b.Reset()
				hop := fmt.Sprintf("10.2.0.%d", 2+i%20)
				for j := 0; j < 8; j++ {
					p := pools[w].Get()
					p.SetFrame(ipf)
					p.NextHop = netip.MustParseAddr(hop)
					b.Add(p)
				}
				insts[w].Push(0, b)
				b.Reset()
				p := pools[w].Get()
				p.SetFrame(arpMsg(t, layers.ARPReply, peerMAC, fmt.Sprintf("10.2.0.%d", 2+(i+w)%20), "10.2.0.1"))
				b.Add(p)
				insts[w].Push(1, b)
				insts[w].(elements.Ticker).Tick(elements.Nanotime())
			}
		}()
	}
	wg.Wait()
	for w := range insts {
		insts[w].(elements.Closer).Close()
		if pools[w].Outstanding() != 0 {
			t.Errorf("worker %d: %d packets outstanding", w, pools[w].Outstanding())
		}
	}
}

func TestARPQuerierAllocs(t *testing.T) {
	h := newQuerier(t, querierCfg("10.2.0.2 02:00:00:00:02:02"), &elementtest.Options{Sink: true})
	frames := [][]byte{ipFrame(t, "10.1.0.5", "10.2.0.2")}
	if a := h.AllocsPerBatch(100, frames...); a != 0 {
		t.Fatalf("%v allocations per batch", a)
	}
	// The learning path too.
	h2 := newQuerier(t, querierCfg(), &elementtest.Options{Sink: true})
	reply := arpMsg(t, layers.ARPReply, peerMAC, "10.2.0.2", "10.2.0.1")
	b := packet.NewBatch(64)
	if a := testing.AllocsPerRun(100, func() {
		p := h2.Pool.Get()
		p.SetFrame(reply)
		b.Add(p)
		h2.Element.Push(1, b)
		b.Reset()
	}); a != 0 {
		t.Fatalf("%v allocations per ARP batch", a)
	}
}

func BenchmarkARPQuerier(b *testing.B) {
	h := newQuerier(b, querierCfg("10.2.0.2 02:00:00:00:02:02"), &elementtest.Options{Sink: true})
	h.Bench(b, ipFrame(b, "10.1.0.5", "10.2.0.2"))
}
