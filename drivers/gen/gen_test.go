package gen

import (
	"bytes"
	"encoding/binary"
	"errors"
	"net/netip"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/google/gopacket"
	"github.com/google/gopacket/layers"

	"github.com/junction-dataplane/junction/conf"
	"github.com/junction-dataplane/junction/drivers"
	"github.com/junction-dataplane/junction/packet"
)

// openGen opens a gen device through the registry, as the loader does, with
// the defaults changed by edit.
func openGen(t testing.TB, workers int, edit func(c *Config)) *Device {
	t.Helper()
	drv, ok := drivers.Lookup("gen")
	if !ok {
		t.Fatal("gen driver not registered")
	}
	cfg := drv.NewConfig().(*Config)
	if edit != nil {
		edit(cfg)
	}
	dev, err := drv.Open(cfg, drivers.OpenContext{Name: "g", Index: 3, Workers: workers, Batch: 64})
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	return dev.(*Device)
}

// decoded is what a test checks of one generated frame.
type decoded struct {
	src, dst     netip.Addr
	sport, dport uint16
	proto        uint8
}

// verify decodes frame with gopacket, checks its structure, and checks both
// checksums by having gopacket recompute them: it re-serializes the decoded
// layers with ComputeChecksums and the result must equal the frame.
func verify(t *testing.T, frame []byte, wantProto uint8) decoded {
	t.Helper()
	pkt := gopacket.NewPacket(frame, layers.LayerTypeEthernet, gopacket.Default)
	if el := pkt.ErrorLayer(); el != nil {
		t.Fatalf("gopacket: %v\n% x", el.Error(), frame)
	}
	eth, _ := pkt.Layer(layers.LayerTypeEthernet).(*layers.Ethernet)
	ip, _ := pkt.Layer(layers.LayerTypeIPv4).(*layers.IPv4)
	if eth == nil || ip == nil {
		t.Fatalf("not Ethernet/IPv4: %v", pkt)
	}
	if int(ip.Length) != len(frame)-14 || ip.IHL != 5 || ip.TTL != 64 || ip.Flags != layers.IPv4DontFragment {
		t.Fatalf("IPv4 header: %+v", ip)
	}
	var l4 gopacket.SerializableLayer
	var payload []byte
	d := decoded{src: netip.AddrFrom4([4]byte(ip.SrcIP.To4())), dst: netip.AddrFrom4([4]byte(ip.DstIP.To4())), proto: uint8(ip.Protocol)}
	if d.proto != wantProto {
		t.Fatalf("proto %d, want %d", d.proto, wantProto)
	}
	switch wantProto {
	case packet.ProtoUDP:
		u, _ := pkt.Layer(layers.LayerTypeUDP).(*layers.UDP)
		if u == nil {
			t.Fatalf("no UDP layer: %v", pkt)
		}
		if int(u.Length) != len(frame)-34 {
			t.Fatalf("UDP length %d, frame %d", u.Length, len(frame))
		}
		if u.Checksum == 0 {
			t.Fatal("UDP checksum 0 (none) in a generated frame")
		}
		d.sport, d.dport = uint16(u.SrcPort), uint16(u.DstPort)
		u.SetNetworkLayerForChecksum(ip)
		l4, payload = u, u.Payload
	case packet.ProtoTCP:
		tc, _ := pkt.Layer(layers.LayerTypeTCP).(*layers.TCP)
		if tc == nil {
			t.Fatalf("no TCP layer: %v", pkt)
		}
		if !tc.ACK || tc.SYN || tc.FIN || tc.RST || tc.PSH || tc.DataOffset != 5 {
			t.Fatalf("TCP header: %+v", tc)
		}
		d.sport, d.dport = uint16(tc.SrcPort), uint16(tc.DstPort)
		tc.SetNetworkLayerForChecksum(ip)
		l4, payload = tc, tc.Payload
	case packet.ProtoICMP:
		ic, _ := pkt.Layer(layers.LayerTypeICMPv4).(*layers.ICMPv4)
		if ic == nil {
			t.Fatalf("no ICMPv4 layer: %v", pkt)
		}
		if ic.TypeCode != layers.CreateICMPv4TypeCode(layers.ICMPv4TypeEchoRequest, 0) || ic.Seq != 1 {
			t.Fatalf("ICMP header: %+v", ic)
		}
		d.sport = ic.Id // the identifier is the flow's port
		l4, payload = ic, ic.Payload
	}
	buf := gopacket.NewSerializeBuffer()
	if err := gopacket.SerializeLayers(buf, gopacket.SerializeOptions{ComputeChecksums: true},
		eth, ip, l4, gopacket.Payload(payload)); err != nil {
		t.Fatalf("serialize: %v", err)
	}
	want := buf.Bytes()
	if len(frame) < 60 && len(want) == 60 && bytes.Count(want[len(frame):], []byte{0}) == 60-len(frame) {
		want = want[:len(frame)] // gopacket pads short frames to Ethernet's minimum
	}
	if wantProto == packet.ProtoUDP && binary.BigEndian.Uint16(want[40:]) == 0 {
		binary.BigEndian.PutUint16(want[40:], 0xffff) // RFC 768; gopacket leaves 0
	}
	if !bytes.Equal(want, frame) {
		t.Fatalf("frame differs from gopacket's recomputation (bad checksum?)\n got % x\nwant % x", frame, want)
	}
	return d
}

// drain receives n packets from queue q, passing each to fn, and frees them.
func drain(t *testing.T, d *Device, q, n int, fn func(p *packet.Packet)) {
	t.Helper()
	b := packet.NewBatch(64)
	for got := 0; got < n; {
		k := d.Receive(q, b)
		if k == 0 {
			t.Fatalf("queue %d: Receive gave nothing after %d packets", q, got)
		}
		if k != b.Len() {
			t.Fatalf("Receive returned %d, batch holds %d", k, b.Len())
		}
		for _, p := range b.Pkts {
			if got < n && fn != nil {
				fn(p)
			}
			got++
		}
		b.FreeAll()
	}
}

func checkNoLeak(t *testing.T, d *Device) {
	t.Helper()
	for q := range d.queues {
		if p := d.queues[q].pool; p != nil && p.Outstanding() != 0 {
			t.Errorf("queue %d: %d packets not returned to the pool", q, p.Outstanding())
		}
	}
}

func TestFramesDecodeWithValidChecksums(t *testing.T) {
	tests := []struct {
		name string
		edit func(c *Config)
	}{
		{"defaults", nil},
		{"udp min size", func(c *Config) { c.Size = 42 }},
		{"udp odd size", func(c *Config) { c.Size = 101 }},
		{"udp max size", func(c *Config) { c.Size = 1514; c.Flows = 50 }},
		{"tcp min size", func(c *Config) { c.Proto = "tcp"; c.Size = 54 }},
		{"tcp 64", func(c *Config) { c.Proto = "tcp"; c.Flows = 300 }},
		{"tcp ranges", func(c *Config) {
			c.Proto = "TCP"
			c.Src = "172.16.0.0/12"
			c.Dst = "0.0.0.0/0"
			c.Flows = 100000
		}},
		{"udp ranges", func(c *Config) {
			c.Src = "10.9.0.0/16"
			c.Dst = "192.0.2.0/24"
			c.Flows = 65536
			c.Seed = 7
		}},
		// Addresses near all-ones push the one's-complement sums through
		// their wrap-around, where incremental updates go wrong if they do.
		{"udp high addresses", func(c *Config) {
			c.Src = "255.255.255.0/24"
			c.Dst = "255.255.0.0/16"
			c.Flows = 20000
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := openGen(t, 1, tt.edit)
			proto := d.s.proto
			drain(t, d, 0, 3000, func(p *packet.Packet) {
				if p.InDevice != 3 || p.InQueue != 0 || p.L3 != 14 {
					t.Fatalf("annotations: dev %d queue %d L3 %d", p.InDevice, p.InQueue, p.L3)
				}
				if len(p.Data) != d.s.size {
					t.Fatalf("frame %d bytes, want %d", len(p.Data), d.s.size)
				}
				dd := verify(t, p.Data, proto)
				if dd.dport != DstPort {
					t.Fatalf("dst port %d", dd.dport)
				}
			})
			checkNoLeak(t, d)
		})
	}
}

// TestUDPZeroChecksum finds a frame whose UDP checksum computes to zero and
// checks it is sent as 0xffff (a zero would mean "no checksum").
func TestUDPZeroChecksum(t *testing.T) {
	for seed := int64(1); seed < 200; seed++ {
		d := openGen(t, 1, func(c *Config) { c.Dst = "10.0.0.0/8"; c.Flows = 64000; c.Seed = seed })
		found := false
		drain(t, d, 0, 20000, func(p *packet.Packet) {
			if binary.BigEndian.Uint16(p.Data[40:]) == 0xffff {
				if !found {
					verify(t, p.Data, packet.ProtoUDP)
				}
				found = true
			}
			if binary.BigEndian.Uint16(p.Data[40:]) == 0 {
				t.Fatal("UDP checksum 0")
			}
		})
		if found {
			return
		}
	}
	t.Skip("no frame with a 0xffff UDP checksum found")
}

func TestDstUniform(t *testing.T) {
	d := openGen(t, 1, func(c *Config) { c.Dst = "192.0.2.0/24"; c.Src = "198.18.0.9" })
	const hosts, per = 254, 200
	counts := map[netip.Addr]int{}
	pfx := netip.MustParsePrefix("192.0.2.0/24")
	drain(t, d, 0, hosts*per, func(p *packet.Packet) {
		ip := packet.IPv4(p.Data[14:])
		dst := ip.Dst()
		if !pfx.Contains(dst) || dst == pfx.Addr() || dst == netip.MustParseAddr("192.0.2.255") {
			t.Fatalf("dst %v outside the hosts of %v", dst, pfx)
		}
		if src := ip.Src(); src != netip.MustParseAddr("198.18.0.9") {
			t.Fatalf("src %v", src)
		}
		counts[dst]++
	})
	if len(counts) != hosts {
		t.Fatalf("%d distinct destinations, want %d", len(counts), hosts)
	}
	for a, n := range counts {
		if n < per/2 || n > per*3/2 {
			t.Errorf("dst %v drawn %d times, expected about %d", a, n, per)
		}
	}
}

func TestSingleAndSmallRanges(t *testing.T) {
	for _, tt := range []struct {
		dst  string
		want []string
	}{
		{"203.0.113.7", []string{"203.0.113.7"}},
		{"203.0.113.7/32", []string{"203.0.113.7"}},
		{"203.0.113.6/31", []string{"203.0.113.6", "203.0.113.7"}},
		{"203.0.113.5/30", []string{"203.0.113.5", "203.0.113.6"}},
	} {
		d := openGen(t, 1, func(c *Config) { c.Dst = tt.dst })
		seen := map[string]bool{}
		drain(t, d, 0, 500, func(p *packet.Packet) { seen[packet.IPv4(p.Data[14:]).Dst().String()] = true })
		var got []string
		for _, w := range tt.want {
			if !seen[w] {
				t.Errorf("dst %s: %s never drawn", tt.dst, w)
			}
			got = append(got, w)
		}
		if len(seen) != len(tt.want) {
			t.Errorf("dst %s: drew %v, want %v", tt.dst, seen, got)
		}
	}
}

func TestFlowsAreExactAndDeterministic(t *testing.T) {
	for _, tt := range []struct {
		name  string
		src   string
		flows int64
		srcs  []string
	}{
		{"one", "198.18.0.1", 1, []string{"198.18.0.1"}},
		{"ports only", "198.18.0.1", 100, []string{"198.18.0.1"}},
		{"src range", "10.0.0.0/29", 1000, []string{"10.0.0.1", "10.0.0.2", "10.0.0.3", "10.0.0.4", "10.0.0.5", "10.0.0.6"}},
		{"fewer flows than addrs", "10.0.0.0/24", 3, []string{"10.0.0.1", "10.0.0.2", "10.0.0.3"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			// Flow i's tuple, from the contract in Doc.
			want := map[decoded]bool{}
			for i := range int(tt.flows) {
				src := netip.MustParseAddr(tt.srcs[i%len(tt.srcs)])
				want[decoded{src: src, dst: netip.MustParseAddr("192.0.2.1"), sport: uint16(FirstSrcPort + i/len(tt.srcs)), dport: DstPort, proto: packet.ProtoUDP}] = true
			}
			got := map[decoded]bool{}
			// Two queues: each picks flows on its own, the mapping is the same.
			d := openGen(t, 2, func(c *Config) { c.Src = tt.src; c.Dst = "192.0.2.1"; c.Flows = tt.flows })
			for q := range 2 {
				drain(t, d, q, int(tt.flows)*30+100, func(p *packet.Packet) {
					got[verify(t, p.Data, packet.ProtoUDP)] = true
				})
			}
			if len(got) != int(tt.flows) {
				t.Fatalf("%d distinct 5-tuples, want %d", len(got), tt.flows)
			}
			for k := range got {
				if !want[k] {
					t.Fatalf("unexpected tuple %+v", k)
				}
			}
			checkNoLeak(t, d)
		})
	}
}

// TestSplitFlows: with split_flows each flow reaches exactly one queue
// (queue q: flows q, q+Q, …), and together the queues send every flow;
// without it both queues send all flows.
func TestSplitFlows(t *testing.T) {
	const flows, queues = 11, 3
	for _, split := range []bool{true, false} {
		d := openGen(t, queues, func(c *Config) { c.Dst = "192.0.2.1"; c.Flows = flows; c.SplitFlows = split })
		seen := map[uint16]map[int]bool{} // source port -> queues
		for q := range queues {
			drain(t, d, q, flows*40, func(p *packet.Packet) {
				sport := verify(t, p.Data, packet.ProtoUDP).sport
				if seen[sport] == nil {
					seen[sport] = map[int]bool{}
				}
				seen[sport][q] = true
			})
		}
		if len(seen) != flows {
			t.Fatalf("split=%v: %d flows seen, want %d", split, len(seen), flows)
		}
		for sport, qs := range seen {
			f := int(sport) - FirstSrcPort
			switch {
			case split && (len(qs) != 1 || !qs[f%queues]):
				t.Errorf("split: flow %d on queues %v, want only %d", f, qs, f%queues)
			case !split && len(qs) != queues:
				t.Errorf("not split: flow %d on queues %v, want all %d", f, qs, queues)
			}
		}
		checkNoLeak(t, d)
	}
}

func TestSeed(t *testing.T) {
	frames := func(seed int64, q int) [][]byte {
		d := openGen(t, 2, func(c *Config) { c.Seed = seed; c.Dst = "10.0.0.0/8"; c.Flows = 1000 })
		var out [][]byte
		drain(t, d, q, 200, func(p *packet.Packet) { out = append(out, bytes.Clone(p.Data)) })
		return out
	}
	a, b, c, q1 := frames(5, 0), frames(5, 0), frames(6, 0), frames(5, 1)
	if !reflect.DeepEqual(a, b) {
		t.Error("same seed gave different packets")
	}
	if reflect.DeepEqual(a, c) {
		t.Error("different seeds gave the same packets")
	}
	if reflect.DeepEqual(a, q1) {
		t.Error("two queues gave the same packets")
	}
}

func TestMACs(t *testing.T) {
	drv, _ := drivers.Lookup("gen")
	devMAC := packet.MAC{0x02, 0xaa, 0, 0, 0, 1}
	for _, tt := range []struct {
		name          string
		ctxMAC        packet.MAC
		srcMAC, dstMC string
		wantSrc       string
		wantDst       string
		wantInfo      string
	}{
		{"defaults", packet.MAC{}, "", "", DefaultSrcMAC, DefaultDstMAC, DefaultDstMAC},
		{"device mac", devMAC, "", "", DefaultSrcMAC, "02:aa:00:00:00:01", "02:aa:00:00:00:01"},
		{"explicit", devMAC, "0a:00:00:00:00:0b", "0e:00:00:00:00:0f", "0a:00:00:00:00:0b", "0e:00:00:00:00:0f", "02:aa:00:00:00:01"},
	} {
		cfg := drv.NewConfig().(*Config)
		if tt.srcMAC != "" {
			cfg.SrcMAC = tt.srcMAC
		}
		cfg.DstMAC = tt.dstMC
		dev, err := drv.Open(cfg, drivers.OpenContext{Name: "g", Workers: 1, MAC: tt.ctxMAC})
		if err != nil {
			t.Fatal(err)
		}
		d := dev.(*Device)
		drain(t, d, 0, 1, func(p *packet.Packet) {
			e := packet.Ethernet(p.Data)
			if e.Src().String() != tt.wantSrc || e.Dst().String() != tt.wantDst {
				t.Errorf("%s: src %v dst %v, want %s %s", tt.name, e.Src(), e.Dst(), tt.wantSrc, tt.wantDst)
			}
		})
		if got := d.Info().MAC.String(); got != tt.wantInfo || d.Info().Driver != "gen" || d.Info().Name != "g" {
			t.Errorf("%s: Info %+v, want MAC %s", tt.name, d.Info(), tt.wantInfo)
		}
	}
}

func TestCountSplitAcrossQueues(t *testing.T) {
	for _, tt := range []struct {
		count  int64
		queues int
		want   []int
	}{
		{1000, 3, []int{334, 333, 333}},
		{2, 3, []int{1, 1, 0}},
		{128, 1, []int{128}},
		{1, 4, []int{1, 0, 0, 0}},
	} {
		d := openGen(t, 1, func(c *Config) { c.Count = tt.count; c.Queues = tt.queues })
		if d.RxQueues() != tt.queues {
			t.Fatalf("RxQueues %d, want %d", d.RxQueues(), tt.queues)
		}
		got := make([]int, tt.queues)
		b := packet.NewBatch(64)
		for round := 0; round < 1000; round++ {
			all := true
			for q := range tt.queues {
				if d.Drained(q) {
					continue
				}
				all = false
				got[q] += d.Receive(q, b)
				b.FreeAll()
			}
			if all {
				break
			}
		}
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("count %d over %d queues: got %v, want %v", tt.count, tt.queues, got, tt.want)
		}
		for q := range tt.queues {
			if !d.Drained(q) {
				t.Errorf("count %d: queue %d not drained", tt.count, q)
			}
			if n := d.Receive(q, b); n != 0 {
				t.Errorf("count %d: queue %d gave %d packets after draining", tt.count, q, n)
			}
		}
		if v := stat(d, "rx_packets"); v != uint64(tt.count) {
			t.Errorf("rx_packets %d, want %d", v, tt.count)
		}
		checkNoLeak(t, d)
	}
	// Endless devices never drain.
	d := openGen(t, 2, nil)
	if d.Drained(0) || d.Drained(1) || d.RxQueues() != 2 {
		t.Errorf("endless device: drained %v %v, queues %d", d.Drained(0), d.Drained(1), d.RxQueues())
	}
	if !d.Drained(5) || d.Receive(5, packet.NewBatch(8)) != 0 {
		t.Error("a queue that does not exist must read as drained and empty")
	}
}

func TestBatchPartlyFull(t *testing.T) {
	d := openGen(t, 1, func(c *Config) { c.Count = 100 })
	b := packet.NewBatch(64)
	drv := openGen(t, 1, nil)
	drv.Receive(0, b) // someone else's packets already in the batch
	b.Pkts = b.Pkts[:10]
	if n := d.Receive(0, b); n != 54 || b.Len() != 64 {
		t.Fatalf("Receive into a batch holding 10: added %d, len %d", n, b.Len())
	}
	for _, p := range b.Pkts[10:] {
		if p.InDevice != 3 {
			t.Fatal("wrong device annotation")
		}
	}
	b.FreeAll()
}

func TestRate(t *testing.T) {
	const rate = 20000.0
	d := openGen(t, 2, func(c *Config) { c.Rate = rate })
	b := packet.NewBatch(64)
	for q := range 2 {
		d.Receive(q, b) // make the pools (slow under -race) before the clock starts
	}
	start := time.Now()
	last := start
	total := 0
	// reachable is the time the bucket could pay out for: the gaps between
	// polls, each counted up to the 10 ms a stalled poller catches up on.
	// On a loaded machine the poller may not run for longer than that.
	var reachable time.Duration
	for time.Since(start) < 250*time.Millisecond {
		now := time.Now()
		reachable += min(now.Sub(last), 10*time.Millisecond)
		last = now
		for q := range 2 {
			total += d.Receive(q, b)
			b.FreeAll()
		}
		time.Sleep(200 * time.Microsecond)
	}
	el := time.Since(start).Seconds()
	want, floor := rate*el, rate*reachable.Seconds()
	if float64(total) < floor*0.5 || float64(total) > want*1.3+128 {
		t.Errorf("%d packets in %.3fs at rate %g: expected about %.0f (at least half of %.0f, what the polls could reach)", total, el, rate, want, floor)
	}
	checkNoLeak(t, d)
}

// TestTokenBucket drives the bucket with a synthetic clock.
func TestTokenBucket(t *testing.T) {
	d := openGen(t, 2, func(c *Config) { c.Rate = 2e6 }) // 1e6 per queue: 1 per µs
	qs := &d.queues[0]
	if qs.burst != 10000 {
		t.Fatalf("burst %v, want 10 ms worth (10000)", qs.burst)
	}
	const us = int64(1000)
	t0 := int64(1e12)
	steps := []struct {
		at   int64
		ask  int
		want int
	}{
		{t0, 64, 0},                        // first call starts the clock
		{t0 + 10*us, 64, 10},               // 10 µs → 10 packets
		{t0 + 10*us, 64, 0},                // no time, no tokens
		{t0 + 10*us + 500, 64, 0},          // half a token
		{t0 + 11*us, 64, 1},                // the half adds up
		{t0 + 111*us, 64, 64},              // 100 tokens, 64 asked
		{t0 + 111*us, 64, 36},              // the rest stays
		{t0 + 111*us + 3e9, 64, 64},        // a long stall: capped at 10 ms...
		{t0 + 111*us + 3e9, 1 << 20, 9936}, // ...of which 64 were taken
		{t0 + 111*us + 3e9, 64, 0},
	}
	for i, s := range steps {
		if got := qs.admit(s.ask, s.at); got != s.want {
			t.Fatalf("step %d: admit(%d) at +%dns = %d, want %d", i, s.ask, s.at-t0, got, s.want)
		}
	}
	small := openGen(t, 1, func(c *Config) { c.Rate = 10 })
	if small.queues[0].burst != 64 {
		t.Errorf("burst %v, want one batch for a slow rate", small.queues[0].burst)
	}
}

func TestRateLow(t *testing.T) {
	// 100 pps: a busy poller must not get more than a handful in 100 ms.
	d := openGen(t, 1, func(c *Config) { c.Rate = 100 })
	b := packet.NewBatch(64)
	total := d.Receive(0, b)
	for start := time.Now(); time.Since(start) < 100*time.Millisecond; {
		total += d.Receive(0, b)
		b.FreeAll()
	}
	if total < 3 || total > 20 {
		t.Errorf("rate 100 for 100ms gave %d packets", total)
	}
}

func stat(d drivers.Device, name string) uint64 {
	for _, c := range d.Stats() {
		if c.Name == name {
			return c.Value
		}
	}
	panic("no stat " + name)
}

func TestTransmitCountsAndFrees(t *testing.T) {
	src := openGen(t, 2, func(c *Config) { c.Size = 100 })
	sink := openGen(t, 2, nil)
	b := packet.NewBatch(64)
	for i := range 10 {
		src.Receive(i%2, b)
		sink.Transmit(i%2, b)
		if b.Len() != 0 {
			t.Fatal("Transmit left packets in the batch")
		}
	}
	sink.Transmit(7, b) // empty batch; worker out of range folds
	if got := stat(sink, "tx_packets"); got != 640 {
		t.Errorf("tx_packets %d, want 640", got)
	}
	if got := stat(sink, "tx_bytes"); got != 64000 {
		t.Errorf("tx_bytes %d, want 64000", got)
	}
	if got, got2 := stat(src, "rx_packets"), stat(src, "rx_bytes"); got != 640 || got2 != 64000 {
		t.Errorf("rx %d packets %d bytes", got, got2)
	}
	if stat(sink, "rx_packets") != 0 || sink.queues[0].pool != nil {
		t.Error("a sink must not take RX pools")
	}
	checkNoLeak(t, src)
	if err := sink.Flush(); err != nil {
		t.Error(err)
	}
	if err := sink.Close(); err != nil {
		t.Error(err)
	}
}

func TestPoolEmpty(t *testing.T) {
	d := openGen(t, 1, func(c *Config) { c.Count = PoolSize + 100 })
	var held []*packet.Batch
	for {
		b := packet.NewBatch(64)
		n := d.Receive(0, b)
		if n == 0 {
			break
		}
		held = append(held, b)
		if len(held) > PoolSize {
			t.Fatal("pool never ran out")
		}
	}
	if got := d.queues[0].pool.Outstanding(); got != PoolSize {
		t.Fatalf("outstanding %d, want the whole pool", got)
	}
	if stat(d, "rx_pool_empty") == 0 {
		t.Error("rx_pool_empty not counted")
	}
	if d.Drained(0) {
		t.Error("drained while 100 packets of its count are still to come")
	}
	for _, b := range held {
		b.FreeAll()
	}
	rest := 0
	b := packet.NewBatch(64)
	for !d.Drained(0) {
		rest += d.Receive(0, b)
		b.FreeAll()
	}
	if rest != 100 {
		t.Errorf("after the pool refilled: %d packets, want 100", rest)
	}
	checkNoLeak(t, d)
}

func TestBadKeys(t *testing.T) {
	for _, tt := range []struct {
		key  string
		edit func(c *Config)
		msg  string
	}{
		{"count", func(c *Config) { c.Count = -1 }, "≥ 0"},
		{"rate", func(c *Config) { c.Rate = -5 }, "rate"},
		{"rate", func(c *Config) { c.Rate = 1e12 }, "packets/s"},
		{"size", func(c *Config) { c.Size = 41 }, "41 bytes"},
		{"size", func(c *Config) { c.Proto = "tcp"; c.Size = 53 }, "[54, 1514]"},
		{"size", func(c *Config) { c.Size = 1515 }, "1515"},
		{"dst", func(c *Config) { c.Dst = "10.0.0/8" }, `bad CIDR "10.0.0/8"`},
		{"dst", func(c *Config) { c.Dst = "10.0.0.256" }, `bad address "10.0.0.256"`},
		{"src", func(c *Config) { c.Src = "10.0.0.1"; c.Dst = "2001:db8::1" }, "must both be IPv4 or both IPv6"},
		{"dst", func(c *Config) { c.Dst = "" }, "empty"},
		{"dst", func(c *Config) { c.Src = "2001:db8::/64" }, "must both be IPv4 or both IPv6"},
		{"size", func(c *Config) { c.Dst = "2001:db8::1"; c.Size = 61 }, "[62, 1514]"},
		{"src", func(c *Config) { c.Src = "x" }, `bad address "x"`},
		{"flows", func(c *Config) { c.Flows = 0 }, "≥ 1"},
		{"flows", func(c *Config) { c.Flows = 64513 }, "64512"},
		{"flows", func(c *Config) { c.Src = "10.0.0.0/31"; c.Flows = 2*64512 + 1 }, "129024"},
		{"proto", func(c *Config) { c.Proto = "sctp" }, `"sctp"`},
		{"sport", func(c *Config) { c.Sport = "70000" }, `"70000": want a port`},
		{"sport", func(c *Config) { c.Sport = "2000-1000" }, "LO-HI"},
		{"dport", func(c *Config) { c.Dport = "x" }, `"x"`},
		{"dport", func(c *Config) { c.Proto = "icmp"; c.Dport = "23" }, "ICMP has no ports"},
		{"flows", func(c *Config) { c.Sport = "5000-5009"; c.Flows = 11 }, "10 distinct"},
		{"size", func(c *Config) { c.Proto = "icmp"; c.Size = 41 }, "[42, 1514]"},
		{"split_flows", func(c *Config) { c.Flows = 1; c.Queues = 2; c.SplitFlows = true }, "flows ≥ queues"},
		{"queues", func(c *Config) { c.Queues = -1 }, "queues"},
		{"queues", func(c *Config) { c.Queues = 100000 }, "256"},
		{"src_mac", func(c *Config) { c.SrcMAC = "02:00:00:00:00" }, "bad MAC"},
		{"dst_mac", func(c *Config) { c.DstMAC = "zz:00:00:00:00:00" }, "bad MAC"},
	} {
		drv, _ := drivers.Lookup("gen")
		cfg := drv.NewConfig().(*Config)
		tt.edit(cfg)
		_, err := drv.Open(cfg, drivers.OpenContext{Name: "g", Workers: 1})
		var ke *conf.KeyError
		if !errors.As(err, &ke) || ke.Key != tt.key {
			t.Errorf("%+v: error %v, want one for key %q", cfg, err, tt.key)
			continue
		}
		if !strings.Contains(err.Error(), `key "`+tt.key+`"`) || !strings.Contains(err.Error(), tt.msg) {
			t.Errorf("key %s: error %q does not say %q", tt.key, err, tt.msg)
		}
	}
	drv, _ := drivers.Lookup("gen")
	if _, err := drv.Open(struct{}{}, drivers.OpenContext{}); err == nil {
		t.Error("a foreign config type must be refused")
	}
}

// TestDocListsKeys keeps the manual and Config in step, and the manual's
// stats with the counters Stats returns.
func TestDocListsKeys(t *testing.T) {
	drv, _ := drivers.Lookup("gen")
	if err := drivers.CheckDoc(drv); err != nil {
		t.Error(err)
	}
	d := openGen(t, 1, nil)
	for _, c := range d.Stats() {
		if !strings.Contains(drv.Doc.Stats, c.Name) {
			t.Errorf("the manual's stats do not mention counter %q", c.Name)
		}
	}
}

func TestZeroAllocs(t *testing.T) {
	for _, tt := range []struct {
		name string
		edit func(c *Config)
	}{
		{"endless", func(c *Config) { c.Dst = "10.0.0.0/8"; c.Src = "10.1.0.0/16"; c.Flows = 1000 }},
		{"rate and count", func(c *Config) { c.Rate = 1e9; c.Count = 1 << 40; c.Proto = "tcp" }},
	} {
		d := openGen(t, 1, tt.edit)
		b := packet.NewBatch(64)
		d.Receive(0, b) // the pool is made on first use
		d.Transmit(0, b)
		allocs := testing.AllocsPerRun(200, func() {
			d.Receive(0, b)
			d.Transmit(0, b)
		})
		if allocs != 0 {
			t.Errorf("%s: %v allocations per Receive+Transmit", tt.name, allocs)
		}
		checkNoLeak(t, d)
	}
}

// BenchmarkReceiveTransmit measures the generator and the sink together at
// batch 64: the cost the gen driver adds to a graph benchmark.
func BenchmarkReceiveTransmit(b *testing.B) {
	for _, bc := range []struct {
		name string
		edit func(c *Config)
	}{
		{"udp64", nil},
		{"udp64-ranges", func(c *Config) { c.Dst = "10.0.0.0/8"; c.Src = "10.1.0.0/16"; c.Flows = 100000 }},
		{"tcp64-rate", func(c *Config) { c.Proto = "tcp"; c.Rate = 1e10; c.Flows = 1000 }},
		{"tcp64-dports", func(c *Config) { c.Proto = "tcp"; c.Dport = "1-1024"; c.Flows = 1000 }},
		{"icmp64", func(c *Config) { c.Proto = "icmp"; c.Flows = 1000 }},
		{"udp1514", func(c *Config) { c.Size = 1514; c.Flows = 1000 }},
	} {
		b.Run(bc.name, func(b *testing.B) {
			d := openGen(b, 1, bc.edit)
			batch := packet.NewBatch(64)
			d.Receive(0, batch)
			d.Transmit(0, batch)
			b.ReportAllocs()
			pkts := 0
			for b.Loop() {
				pkts += d.Receive(0, batch)
				d.Transmit(0, batch)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(max(pkts, 1)), "ns/pkt")
			b.SetBytes(int64(d.s.size) * 64)
		})
	}
}

// TestFastDiv checks fastDiv against the division it replaces, at the edges
// of both operands and on random ones.
func TestFastDiv(t *testing.T) {
	ds := []uint32{2, 3, 7, 254, 255, 65534, 65535, 65536, 1<<24 - 2, 1<<31 + 1, 1<<32 - 2, 1<<32 - 1}
	ns := []uint32{0, 1, 2, 65535, 65536, 1<<31 - 1, 1 << 31, 1<<32 - 2, 1<<32 - 1}
	s := uint64(7)
	for range 2000 {
		ds = append(ds, uint32(wyrand(&s))|2)
		ns = append(ns, uint32(wyrand(&s)))
	}
	for _, d := range ds {
		m := divMagic(d)
		for _, n := range ns {
			if got := fastDiv(n, m); got != n/d {
				t.Fatalf("fastDiv(%d, divMagic(%d)) = %d, want %d", n, d, got, n/d)
			}
		}
		for _, n := range []uint32{d - 1, d, d + 1, 2*d - 1, 2 * d} {
			if got := fastDiv(n, m); got != n/d {
				t.Fatalf("fastDiv(%d, divMagic(%d)) = %d, want %d", n, d, got, n/d)
			}
		}
	}
}

// TestIPv6RefusesPortsAndICMP: IPv6 frames keep the default ports and
// carry UDP or TCP; asking for more is refused, not ignored.
func TestIPv6RefusesPortsAndICMP(t *testing.T) {
	for _, c := range []struct{ key, val string }{{"proto", "icmp"}, {"sport", "2000-3000"}, {"dport", "23"}} {
		cfg := *newConfig().(*Config)
		cfg.Size, cfg.Src, cfg.Dst = 80, "2001:2::1", "2001:db8::1"
		switch c.key {
		case "proto":
			cfg.Proto = c.val
		case "sport":
			cfg.Sport = Ports(c.val)
		case "dport":
			cfg.Dport = Ports(c.val)
		}
		if _, err := cfg.validate(1, packet.MAC{}); err == nil || !strings.Contains(err.Error(), "IPv6") {
			t.Errorf("%s = %q with IPv6: %v", c.key, c.val, err)
		}
	}
}
