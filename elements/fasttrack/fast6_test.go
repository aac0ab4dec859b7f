package fasttrack_test

import (
	"bytes"
	"net"
	"testing"

	"github.com/google/gopacket"
	"github.com/google/gopacket/layers"

	"github.com/junction-dataplane/junction/elements/conntrack"
	"github.com/junction-dataplane/junction/elements/elementtest"
	"github.com/junction-dataplane/junction/elements/fasttrack"
	"github.com/junction-dataplane/junction/packet"
)

// udp6 is an Ethernet/IPv6/UDP frame.
func udp6(t testing.TB, src, dst string, sport, dport uint16, hop uint8) []byte {
	eth := &layers.Ethernet{SrcMAC: net.HardwareAddr{2, 0, 0, 0, 0, 1}, DstMAC: net.HardwareAddr{2, 0, 0, 0, 0, 2}, EthernetType: layers.EthernetTypeIPv6}
	ip := &layers.IPv6{Version: 6, NextHeader: layers.IPProtocolUDP, HopLimit: hop, SrcIP: net.ParseIP(src), DstIP: net.ParseIP(dst)}
	u := &layers.UDP{SrcPort: layers.UDPPort(sport), DstPort: layers.UDPPort(dport)}
	u.SetNetworkLayerForChecksum(ip)
	buf := gopacket.NewSerializeBuffer()
	if err := gopacket.SerializeLayers(buf, gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true}, eth, ip, u, gopacket.Payload("ipv6 payload")); err != nil {
		t.Fatal(err)
	}
	return append([]byte(nil), buf.Bytes()...)
}

// TestIPv6FastTrack: IPv6 flows are learned by FastTrackLearn and then
// forwarded by FastTrack with the slow path's bytes (hop limit, Ethernet),
// counted against the flow; a generation change sends them back once;
// a batch mixing IPv4 misses and IPv6 hits is split.
func TestIPv6FastTrack(t *testing.T) {
	pool := packet.NewPool(512)
	slowOut := &elementtest.Recorder{}
	learn, lst, _ := build(t, pool, "FastTrackLearn", &fasttrack.LearnConfig{Outputs: 1}, slowOut)
	hl, _, _ := build(t, pool, "DecHopLimit", nil, learn)
	ctk, _, _ := build(t, pool, "Conntrack", &conntrack.Config{Capacity: 1024}, hl)
	fastOut := &elementtest.Recorder{}
	ft, fst, _ := build(t, pool, "FastTrack", &fasttrack.Config{After: 2, Policy: "either-direction", Outputs: 1}, ctk, fastOut)
	var frames [][]byte
	for i := range 8 {
		frames = append(frames, udp6(t, "2001:db8:1::10", "2001:db8:2::2", uint16(40000+i), 53, 64))
	}
	b := packet.NewBatch(64)
	push := func(fs ...[]byte) {
		b.Reset()
		for _, f := range fs {
			p := pool.Get()
			p.SetFrame(f)
			b.Add(p)
		}
		ft.Push(0, b)
	}
	var ref [][]byte
	for round := range 5 {
		for _, f := range frames {
			push(f)
		}
		if round == 0 {
			for _, p := range slowOut.Pkts {
				ref = append(ref, append([]byte(nil), p.Data...))
			}
		}
	}
	if got, want := counter(fst, "fasttracked packets"), uint64(8*3); got != want {
		t.Fatalf("fasttracked %d, want %d (learned %d, not learnable %d)", got, want, counter(lst, "learned"), counter(lst, "not learnable"))
	}
	for i, p := range fastOut.Pkts {
		if !bytes.Equal(p.Data, ref[i%8]) {
			t.Fatalf("fast frame %d differs from the slow path's:\n%x\n%x", i, p.Data, ref[i%8])
		}
		if p.Data[14+7] != 63 {
			t.Fatalf("hop limit %d, want 63", p.Data[14+7])
		}
		if p.Ct.State != packet.CtNew {
			t.Fatalf("annotation %+v", p.Ct)
		}
	}
	t6, c := conntrack.FlowOf6(fastOut.Pkts[0])
	if c == nil || c.Packets[0] != 5 {
		t.Fatalf("flow not counted: %v %+v", t6, c)
	}
	// A batch of IPv4 (no flow: slow path) and IPv6 (fast) is split.
	n := len(fastOut.Pkts)
	v4 := make([]byte, 60)
	v4[12], v4[13], v4[14] = 0x08, 0x00, 0x45
	push(v4, frames[0], frames[1])
	if len(fastOut.Pkts) != n+2 {
		t.Errorf("mixed batch: %d fast, want 2", len(fastOut.Pkts)-n)
	}
	// A generation change sends the flows back to the slow path.
	genOf(pool).Invalidate()
	n = len(fastOut.Pkts)
	push(frames[0])
	if len(fastOut.Pkts) != n {
		t.Error("a stale IPv6 fast path was used after Invalidate")
	}
}

func TestIPv6FastTrackAllocs(t *testing.T) {
	pool := packet.NewPool(512)
	learn, _, _ := build(t, pool, "FastTrackLearn", &fasttrack.LearnConfig{Outputs: 1}, &elementtest.Sink{})
	hl, _, _ := build(t, pool, "DecHopLimit", nil, learn)
	ctk, _, _ := build(t, pool, "Conntrack", &conntrack.Config{Capacity: 1024}, hl)
	ft, fst, _ := build(t, pool, "FastTrack", &fasttrack.Config{After: 2, Policy: "either-direction", Outputs: 1}, ctk, &elementtest.Sink{})
	f := udp6(t, "2001:db8:1::10", "2001:db8:2::2", 40000, 53, 64)
	b := packet.NewBatch(64)
	run := func() {
		b.Reset()
		for range 32 {
			p := pool.Get()
			p.SetFrame(f)
			b.Add(p)
		}
		ft.Push(0, b)
	}
	run()
	if a := testing.AllocsPerRun(100, run); a != 0 {
		t.Fatalf("%v allocations per batch", a)
	}
	if counter(fst, "fasttracked packets") == 0 {
		t.Fatal("never engaged")
	}
}

// BenchmarkIPv6FastTrack: FastTrack's IPv6 hits over 1024 learned flows.
func BenchmarkIPv6FastTrack(b *testing.B) {
	pool := packet.NewPool(1024)
	learn, _, _ := build(b, pool, "FastTrackLearn", &fasttrack.LearnConfig{Outputs: 1}, &elementtest.Sink{})
	hl, _, _ := build(b, pool, "DecHopLimit", nil, learn)
	ctk, _, _ := build(b, pool, "Conntrack", &conntrack.Config{Capacity: 4096}, hl)
	ft, _, _ := build(b, pool, "FastTrack", &fasttrack.Config{After: 2, Policy: "either-direction", Outputs: 1}, ctk, &elementtest.Sink{})
	var frames [][]byte
	for i := range 1024 {
		frames = append(frames, udp6(b, "2001:db8:1::10", "2001:db8:2::2", uint16(10000+i), 53, 64))
	}
	bt := packet.NewBatch(64)
	push := func(off int) {
		bt.Reset()
		for i := range 64 {
			p := pool.Get()
			p.SetFrame(frames[(off+i*17)%len(frames)])
			bt.Add(p)
		}
		ft.Push(0, bt)
	}
	for r := range 3 * len(frames) / 64 {
		push(r * 64)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		push(i * 64)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*64), "ns/pkt")
}
