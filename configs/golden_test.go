package configs_test

import (
	"bytes"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/gopacket"
	"github.com/google/gopacket/layers"

	_ "github.com/junction-dataplane/junction/drivers/all"
	_ "github.com/junction-dataplane/junction/elements/all"
	"github.com/junction-dataplane/junction/internal/pcaptest"
	"github.com/junction-dataplane/junction/pipeline"
)

// Addresses of router.toml's world.
var (
	lanRouterMAC = mustMAC("02:00:00:00:01:01")
	lanHostMAC   = mustMAC("02:00:00:00:01:02")
	wanRouterMAC = mustMAC("02:00:00:00:02:01")
	wanPeerMAC   = mustMAC("02:00:00:00:02:02")
)

func mustMAC(s string) net.HardwareAddr {
	m, err := net.ParseMAC(s)
	if err != nil {
		panic(err)
	}
	return m
}

// frame serializes layers with lengths and checksums computed by gopacket.
func frame(t *testing.T, ls ...gopacket.SerializableLayer) []byte {
	t.Helper()
	buf := gopacket.NewSerializeBuffer()
	if err := gopacket.SerializeLayers(buf, gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true}, ls...); err != nil {
		t.Fatal(err)
	}
	return append([]byte(nil), buf.Bytes()...)
}

func udpFrame(t *testing.T, srcMAC, dstMAC net.HardwareAddr, src, dst string, ttl uint8, sport, dport uint16) []byte {
	eth := &layers.Ethernet{SrcMAC: srcMAC, DstMAC: dstMAC, EthernetType: layers.EthernetTypeIPv4}
	ip := &layers.IPv4{Version: 4, IHL: 5, TTL: ttl, Id: 7, Protocol: layers.IPProtocolUDP,
		SrcIP: net.ParseIP(src).To4(), DstIP: net.ParseIP(dst).To4()}
	udp := &layers.UDP{SrcPort: layers.UDPPort(sport), DstPort: layers.UDPPort(dport)}
	udp.SetNetworkLayerForChecksum(ip)
	return frame(t, eth, ip, udp, gopacket.Payload([]byte("junction golden payload")))
}

func tcpFrame(t *testing.T, srcMAC, dstMAC net.HardwareAddr, src, dst string, ttl uint8) []byte {
	eth := &layers.Ethernet{SrcMAC: srcMAC, DstMAC: dstMAC, EthernetType: layers.EthernetTypeIPv4}
	ip := &layers.IPv4{Version: 4, IHL: 5, TTL: ttl, Id: 9, Protocol: layers.IPProtocolTCP,
		SrcIP: net.ParseIP(src).To4(), DstIP: net.ParseIP(dst).To4()}
	tcp := &layers.TCP{SrcPort: 40000, DstPort: 443, Seq: 1, Ack: 2, ACK: true, Window: 512}
	tcp.SetNetworkLayerForChecksum(ip)
	return frame(t, eth, ip, tcp, gopacket.Payload([]byte("hello over tcp")))
}

func arpRequest(t *testing.T, srcMAC net.HardwareAddr, srcIP, target string) []byte {
	eth := &layers.Ethernet{SrcMAC: srcMAC, DstMAC: net.HardwareAddr{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, EthernetType: layers.EthernetTypeARP}
	arp := &layers.ARP{AddrType: layers.LinkTypeEthernet, Protocol: layers.EthernetTypeIPv4, HwAddressSize: 6, ProtAddressSize: 4,
		Operation: layers.ARPRequest, SourceHwAddress: srcMAC, SourceProtAddress: net.ParseIP(srcIP).To4(),
		DstHwAddress: make([]byte, 6), DstProtAddress: net.ParseIP(target).To4()}
	return frame(t, eth, arp)
}

// runGraph copies a config into dir and runs it to completion.
func runGraph(t *testing.T, config, dir string) *pipeline.Router {
	t.Helper()
	src, err := os.ReadFile(config)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, filepath.Base(config))
	if err := os.WriteFile(path, src, 0o644); err != nil {
		t.Fatal(err)
	}
	g, err := pipeline.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	return runToEnd(t, g, pipeline.Options{NoPin: true})
}

// runToEnd starts a finite graph and waits for it to drain by itself.
func runToEnd(t testing.TB, g *pipeline.Graph, o pipeline.Options) *pipeline.Router {
	t.Helper()
	r, err := pipeline.Start(g, o)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- r.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(20 * time.Second):
		r.Stop()
		t.Fatal("finite graph did not finish by itself")
	}
	return r
}

// checksumsValid re-serializes the packet's IPv4 and L4 layers with gopacket's
// own checksum computation and compares with what the router wrote.
func checksumsValid(t *testing.T, what string, p gopacket.Packet) {
	t.Helper()
	ip, _ := p.Layer(layers.LayerTypeIPv4).(*layers.IPv4)
	if ip == nil {
		t.Errorf("%s: no IPv4 layer", what)
		return
	}
	orig := p.Data()[14 : 14+int(ip.Length)]
	var ls []gopacket.SerializableLayer
	ipc := *ip
	ls = append(ls, &ipc)
	switch l4 := p.TransportLayer().(type) {
	case *layers.UDP:
		u := *l4
		u.SetNetworkLayerForChecksum(&ipc)
		ls = append(ls, &u, gopacket.Payload(l4.Payload))
	case *layers.TCP:
		c := *l4
		c.SetNetworkLayerForChecksum(&ipc)
		ls = append(ls, &c, gopacket.Payload(l4.Payload))
	default:
		if ic, ok := p.Layer(layers.LayerTypeICMPv4).(*layers.ICMPv4); ok {
			c := *ic
			ls = append(ls, &c, gopacket.Payload(ic.Payload))
		}
	}
	buf := gopacket.NewSerializeBuffer()
	if err := gopacket.SerializeLayers(buf, gopacket.SerializeOptions{ComputeChecksums: true}, ls...); err != nil {
		t.Fatalf("%s: reserialize: %v", what, err)
	}
	if !bytes.Equal(buf.Bytes(), orig) {
		t.Errorf("%s: checksums differ from a fresh computation:\n got  %x\n want %x", what, orig, buf.Bytes())
	}
}

func TestRouterGolden(t *testing.T) {
	dir := t.TempDir()
	ttlOne := udpFrame(t, lanHostMAC, lanRouterMAC, "10.1.0.2", "10.2.0.5", 1, 5000, 53)
	badSum := udpFrame(t, lanHostMAC, lanRouterMAC, "10.1.0.2", "10.2.0.5", 64, 5000, 53)
	badSum[14+10] ^= 0xff
	badIHL := udpFrame(t, lanHostMAC, lanRouterMAC, "10.1.0.2", "10.2.0.5", 64, 5000, 53)
	badIHL[14] = 0x44
	truncated := udpFrame(t, lanHostMAC, lanRouterMAC, "10.1.0.2", "10.2.0.5", 64, 5000, 53)[:14+12]
	martian := udpFrame(t, lanHostMAC, lanRouterMAC, "127.0.0.1", "10.2.0.5", 64, 5000, 53)
	ip6 := frame(t, &layers.Ethernet{SrcMAC: lanHostMAC, DstMAC: lanRouterMAC, EthernetType: layers.EthernetTypeIPv6},
		&layers.IPv6{Version: 6, HopLimit: 64, NextHeader: layers.IPProtocolUDP, SrcIP: net.ParseIP("fd00::2"), DstIP: net.ParseIP("fd00::1")},
		gopacket.Payload(make([]byte, 8)))

	lanIn := [][]byte{
		arpRequest(t, lanHostMAC, "10.1.0.2", "10.1.0.1"),                             // 0: answered
		arpRequest(t, lanHostMAC, "10.1.0.2", "10.1.0.99"),                            // 1: not ours: dropped
		udpFrame(t, lanHostMAC, lanRouterMAC, "10.1.0.2", "10.2.0.5", 64, 5000, 53),   // 2: → wan, connected
		udpFrame(t, lanHostMAC, lanRouterMAC, "10.1.0.2", "10.20.1.1", 64, 5001, 53),  // 3: → wan, 10.16/12
		udpFrame(t, lanHostMAC, lanRouterMAC, "10.1.0.2", "192.0.2.77", 64, 5002, 53), // 4: → wan, default
		ttlOne,    // 5: ICMP time exceeded back to the LAN host
		badSum,    // 6: dropped
		badIHL,    // 7: dropped
		truncated, // 8: dropped
		martian,   // 9: dropped
		ip6,       // 10: not IPv4: discarded
		tcpFrame(t, lanHostMAC, lanRouterMAC, "10.1.0.2", "10.2.0.9", 30), // 11: → wan
	}
	wanIn := [][]byte{
		udpFrame(t, wanPeerMAC, wanRouterMAC, "10.2.0.2", "10.1.0.7", 50, 53, 5000), // → lan
		tcpFrame(t, wanPeerMAC, wanRouterMAC, "198.51.100.1", "10.1.0.8", 100),      // → lan (10.1.0.0/24 beats default)
		arpRequest(t, wanPeerMAC, "10.2.0.2", "10.2.0.1"),                           // answered on wan
	}
	pcaptest.Write(t, filepath.Join(dir, "lan-in.pcap"), lanIn)
	pcaptest.Write(t, filepath.Join(dir, "wan-in.pcap"), wanIn)

	r := runGraph(t, "router.toml", dir)
	snap := r.Snapshot()

	lanOut := pcaptest.Read(t, filepath.Join(dir, "lan-out.pcap"))
	wanOut := pcaptest.Read(t, filepath.Join(dir, "wan-out.pcap"))

	// WAN out: lan frames 2, 3, 4, 11 then the wan ARP reply, in that order.
	if len(wanOut) != 5 {
		t.Fatalf("wan-out has %d frames, want 5", len(wanOut))
	}
	wantDst := []string{"10.2.0.5", "10.20.1.1", "192.0.2.77", "10.2.0.9"}
	wantTTL := []uint8{63, 63, 63, 29}
	for i, p := range wanOut[:4] {
		eth := p.Layer(layers.LayerTypeEthernet).(*layers.Ethernet)
		if !bytes.Equal(eth.SrcMAC, wanRouterMAC) || !bytes.Equal(eth.DstMAC, wanPeerMAC) {
			t.Errorf("wan frame %d: MACs %v -> %v", i, eth.SrcMAC, eth.DstMAC)
		}
		ip := p.Layer(layers.LayerTypeIPv4).(*layers.IPv4)
		if ip.DstIP.String() != wantDst[i] || ip.TTL != wantTTL[i] {
			t.Errorf("wan frame %d: dst %v ttl %d, want %s ttl %d", i, ip.DstIP, ip.TTL, wantDst[i], wantTTL[i])
		}
		checksumsValid(t, "wan frame", p)
	}
	if a, ok := wanOut[4].Layer(layers.LayerTypeARP).(*layers.ARP); !ok || a.Operation != layers.ARPReply ||
		net.IP(a.SourceProtAddress).String() != "10.2.0.1" || !bytes.Equal(a.SourceHwAddress, wanRouterMAC) ||
		!bytes.Equal(a.DstHwAddress, wanPeerMAC) {
		t.Errorf("wan frame 4: want an ARP reply from 10.2.0.1 to the peer, got %v", wanOut[4])
	}

	// LAN out: the ARP reply, the ICMP time exceeded, then the two frames from the WAN.
	if len(lanOut) != 4 {
		t.Fatalf("lan-out has %d frames, want 4", len(lanOut))
	}
	a, ok := lanOut[0].Layer(layers.LayerTypeARP).(*layers.ARP)
	if !ok || a.Operation != layers.ARPReply || net.IP(a.SourceProtAddress).String() != "10.1.0.1" ||
		!bytes.Equal(a.SourceHwAddress, lanRouterMAC) || !bytes.Equal(a.DstHwAddress, lanHostMAC) ||
		net.IP(a.DstProtAddress).String() != "10.1.0.2" {
		t.Errorf("lan frame 0: want ARP reply 10.1.0.1 is-at %v, got %v", lanRouterMAC, lanOut[0])
	}
	eth := lanOut[0].Layer(layers.LayerTypeEthernet).(*layers.Ethernet)
	if !bytes.Equal(eth.DstMAC, lanHostMAC) || !bytes.Equal(eth.SrcMAC, lanRouterMAC) {
		t.Errorf("ARP reply Ethernet %v -> %v", eth.SrcMAC, eth.DstMAC)
	}

	icmpPkt := lanOut[1]
	ip := icmpPkt.Layer(layers.LayerTypeIPv4).(*layers.IPv4)
	ic, ok := icmpPkt.Layer(layers.LayerTypeICMPv4).(*layers.ICMPv4)
	if !ok || ic.TypeCode.Type() != layers.ICMPv4TypeTimeExceeded || ic.TypeCode.Code() != 0 {
		t.Fatalf("lan frame 1: want ICMP time exceeded, got %v", icmpPkt)
	}
	if ip.SrcIP.String() != "10.1.0.1" || ip.DstIP.String() != "10.1.0.2" || ip.Protocol != layers.IPProtocolICMPv4 {
		t.Errorf("ICMP error %v -> %v proto %v", ip.SrcIP, ip.DstIP, ip.Protocol)
	}
	// The quote is the original IP header (as received, TTL 1) and 8 bytes.
	if want := ttlOne[14 : 14+28]; !bytes.Equal(ic.Payload, want) {
		t.Errorf("ICMP quote\n got  %x\n want %x", ic.Payload, want)
	}
	checksumsValid(t, "icmp error", icmpPkt)
	if ip.TTL != 63 && ip.TTL != 64 {
		t.Errorf("ICMP error TTL %d", ip.TTL)
	}

	for i, want := range []string{"10.1.0.7", "10.1.0.8"} {
		p := lanOut[2+i]
		ip := p.Layer(layers.LayerTypeIPv4).(*layers.IPv4)
		eth := p.Layer(layers.LayerTypeEthernet).(*layers.Ethernet)
		if ip.DstIP.String() != want || !bytes.Equal(eth.DstMAC, lanHostMAC) || !bytes.Equal(eth.SrcMAC, lanRouterMAC) {
			t.Errorf("lan frame %d: %v -> %v, dst %v", 2+i, eth.SrcMAC, eth.DstMAC, ip.DstIP)
		}
		checksumsValid(t, "lan frame", p)
	}

	// Drops, each counted once on the element that made it; reasons (drop
	// reasons and the checker's per-cause counters) by element. What the
	// graph ends by design (an ARP request for another host, IPv6 into
	// Discard) is consumed, not dropped.
	counters := map[string]uint64{}
	var total, consumed uint64
	for _, e := range snap.Elements {
		total += e.Drops
		consumed += e.Consumed
		for _, c := range e.Counters {
			if c.Value > 0 {
				counters[e.Element+": "+c.Name] += c.Value
			}
		}
	}
	t.Logf("counters: %v", counters)
	if total != 4 {
		t.Errorf("total drops %d, want 4 (bad checksum, bad IHL, truncated, martian)", total)
	}
	if consumed != 2 || snap.Totals.Consumed != 2 {
		t.Errorf("consumed %d (totals %d), want 2 (arp not for us, ipv6)", consumed, snap.Totals.Consumed)
	}
	for _, want := range []string{"lchk: bad checksum", "lchk: martian source", "Discard@1: unclassified", "ARPResponder@1: not for us"} {
		if counters[want] != 1 {
			t.Errorf("counter %q = %d, want 1", want, counters[want])
		}
	}
	if r.Snapshot().Totals.RX != uint64(len(lanIn)+len(wanIn)) {
		t.Errorf("rx total %d, want %d", r.Snapshot().Totals.RX, len(lanIn)+len(wanIn))
	}
}
