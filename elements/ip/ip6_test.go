package ip

import (
	"fmt"
	"net"
	"net/netip"
	"testing"

	"github.com/google/gopacket"
	"github.com/google/gopacket/layers"
	"github.com/junction-dataplane/junction/elements/elementtest"
	"github.com/junction-dataplane/junction/elements/ip/route"
)

// mkFrame6 serializes Ethernet/IPv6/UDP with gopacket (an independent
// encoder).
func mkFrame6(t testing.TB, src, dst string, hop uint8, sport uint16, pad int) []byte {
	t.Helper()
	eth := &layers.Ethernet{SrcMAC: macA, DstMAC: macB, EthernetType: layers.EthernetTypeIPv6}
	ip := &layers.IPv6{Version: 6, HopLimit: hop, NextHeader: layers.IPProtocolUDP,
		SrcIP: net.ParseIP(src), DstIP: net.ParseIP(dst)}
	u := &layers.UDP{SrcPort: layers.UDPPort(sport), DstPort: 53}
	u.SetNetworkLayerForChecksum(ip)
	buf := gopacket.NewSerializeBuffer()
	if err := gopacket.SerializeLayers(buf, gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true},
		eth, ip, u, gopacket.Payload(make([]byte, 10))); err != nil {
		t.Fatal(err)
	}
	return append(append([]byte(nil), buf.Bytes()...), make([]byte, pad)...)
}

func TestCheckIP6Header(t *testing.T) {
	good := mkFrame6(t, "2001:db8::1", "2001:db8:1::2", 64, 4000, 0)
	cfg := &CheckIP6HeaderConfig{BadSrc: []string{"2001:db8:bad::/48"}}
	tests := []struct {
		name   string
		frame  []byte
		reason string // "" = passes
	}{
		{"good", good, ""},
		{"padded", mkFrame6(t, "2001:db8::1", "2001:db8:1::2", 64, 4000, 12), ""},
		{"too short", good[:14+39], "too short"},
		{"empty", nil, "too short"},
		{"version 4", edit(good, func(f []byte) []byte { f[14] = 0x45; return f }), "bad version"},
		{"payload beyond frame", good[:len(good)-1], "payload length beyond frame"},
		{"multicast src", mkFrame6(t, "ff02::1", "2001:db8::2", 64, 1, 0), "martian source"},
		{"link-local src", mkFrame6(t, "fe80::1", "2001:db8::2", 64, 1, 0), "martian source"},
		{"unspecified src", mkFrame6(t, "::", "2001:db8::2", 64, 1, 0), "martian source"},
		{"loopback src", mkFrame6(t, "::1", "2001:db8::2", 64, 1, 0), "martian source"},
		{"mapped src", mkFrame6(t, "::ffff:10.0.0.1", "2001:db8::2", 64, 1, 0), "martian source"},
		{"badsrc", mkFrame6(t, "2001:db8:bad::7", "2001:db8::2", 64, 1, 0), "martian source"},
		{"link-local dst", mkFrame6(t, "2001:db8::1", "fe80::2", 64, 1, 0), "bad destination"},
		{"loopback dst", mkFrame6(t, "2001:db8::1", "::1", 64, 1, 0), "bad destination"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := *cfg
			if err := c.Validate(); err != nil {
				t.Fatal(err)
			}
			h := elementtest.New(t, "CheckIP6Header", &c, nil)
			h.Push(0, tc.frame)
			if tc.reason == "" {
				if len(h.Outs[0].Pkts) != 1 {
					t.Fatalf("good packet not passed: out0 %d out1 %d", len(h.Outs[0].Pkts), len(h.Outs[1].Pkts))
				}
				if got := len(h.Outs[0].Pkts[0].Data); got != len(good) {
					t.Errorf("length %d, want %d (padding trimmed)", got, len(good))
				}
			} else if len(h.Outs[1].Pkts) != 1 || h.Counter(tc.reason) != 1 {
				t.Errorf("out1 %d, %q = %d", len(h.Outs[1].Pkts), tc.reason, h.Counter(tc.reason))
			}
			h.CheckNoLeak()
		})
	}
	bad := &CheckIP6HeaderConfig{BadSrc: []string{"10.0.0.0/8"}}
	if err := bad.Validate(); err == nil {
		t.Errorf("IPv4 badsrc accepted")
	}
	bad = &CheckIP6HeaderConfig{BadSrc: []string{"2001:db8::1/32"}}
	if err := bad.Validate(); err == nil {
		t.Errorf("badsrc with host bits accepted")
	}
}

// TestCheckIP6HeaderAllocs backs the allocation-free claim of check (badsrc
// configured, so the netip.Prefix path runs too), good and bad packets mixed.
func TestCheckIP6HeaderAllocs(t *testing.T) {
	c := &CheckIP6HeaderConfig{BadSrc: []string{"2001:db8:bad::/48"}}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	h := elementtest.New(t, "CheckIP6Header", c, &elementtest.Options{Sink: true})
	good := mkFrame6(t, "2001:db8::1", "2001:db8:1::2", 64, 4000, 0)
	if a := h.AllocsPerBatch(100, good, mkFrame6(t, "2001:db8:bad::7", "2001:db8::2", 64, 1, 0), good[:30], good); a != 0 {
		t.Errorf("allocs per batch = %v, want 0", a)
	}
}

func BenchmarkCheckIP6Header(b *testing.B) {
	c := &CheckIP6HeaderConfig{BadSrc: []string{"2001:db8:bad::/48"}}
	if err := c.Validate(); err != nil {
		b.Fatal(err)
	}
	h := elementtest.New(b, "CheckIP6Header", c, &elementtest.Options{Sink: true})
	h.Bench(b, mkFrame6(b, "2001:db8::1", "2001:db8:1::2", 64, 4000, 0))
}

func TestDecHopLimit(t *testing.T) {
	h := elementtest.New(t, "DecHopLimit", nil, nil)
	f := mkFrame6(t, "2001:db8::1", "2001:db8:1::2", 64, 4000, 0)
	h.Push(0, f, mkFrame6(t, "2001:db8::1", "2001:db8:1::2", 1, 4000, 0), mkFrame6(t, "2001:db8::1", "2001:db8:1::2", 0, 4000, 0),
		f[:30], edit(f, func(b []byte) []byte { b[14] = 0x45; return b }))
	if len(h.Outs[0].Pkts) != 1 || len(h.Outs[1].Pkts) != 2 {
		t.Fatalf("out0 %d, out1 %d; want 1, 2", len(h.Outs[0].Pkts), len(h.Outs[1].Pkts))
	}
	pk := gopacket.NewPacket(h.Outs[0].Pkts[0].Data, layers.LayerTypeEthernet, gopacket.Default)
	ip6 := pk.Layer(layers.LayerTypeIPv6).(*layers.IPv6)
	if ip6.HopLimit != 63 {
		t.Errorf("hop limit %d, want 63", ip6.HopLimit)
	}
	if h.Counter("hop limit expired") != 2 || h.Counter("too short") != 1 || h.Counter("not ipv6") != 1 {
		t.Errorf("counters: expired %d, too short %d, not ipv6 %d", h.Counter("hop limit expired"), h.Counter("too short"), h.Counter("not ipv6"))
	}
	h.CheckNoLeak()
	hs := elementtest.New(t, "DecHopLimit", nil, &elementtest.Options{Sink: true})
	if n := hs.AllocsPerBatch(100, f, f, f); n != 0 {
		t.Errorf("allocs %v", n)
	}
}

// TestIPLookupIPv6AndECMP: IPv6 packets are routed by the IPv6 table, IPv4
// by the IPv4 one in the same batch; an ECMP route keeps each flow on one
// path and spreads flows over all paths.
func TestIPLookupIPv6AndECMP(t *testing.T) {
	cfg := &IPLookupConfig{Routes: []string{
		"10.0.0.0/8 via 10.1.0.2 via 10.1.0.3 out 0 out 1",
		"2001:db8::/32 via 2001:db8:ffff::1 out 2",
		"2001:db8:1::/48 out 3",
		"::/0 via fe80::1 via fe80::2 out 0 out 1",
	}, Miss: -1}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	h := elementtest.New(t, "IPLookup", cfg, nil)
	h.Push(0, mkFrame6(t, "2001:db8::1", "2001:db8:5::5", 64, 1, 0), mkFrame6(t, "2001:db8::1", "2001:db8:1::9", 64, 1, 0),
		ipFrameTo(t, "10.9.9.9"), mkFrame6(t, "2001:db8::1", "2001:db9::1", 64, 1, 0))
	if len(h.Outs[2].Pkts) != 1 || h.Outs[2].Pkts[0].NextHop != netip.MustParseAddr("2001:db8:ffff::1") {
		t.Errorf("via route: %v", h.Outs[2].Pkts)
	}
	if len(h.Outs[3].Pkts) != 1 || h.Outs[3].Pkts[0].NextHop != netip.MustParseAddr("2001:db8:1::9") {
		t.Errorf("connected route: next hop %v", h.Outs[3].Pkts)
	}
	if n := len(h.Outs[0].Pkts) + len(h.Outs[1].Pkts); n != 2 {
		t.Errorf("ECMP packets: %d", n)
	}
	h.CheckNoLeak()
	h.Reset()
	// Flows: the same 5-tuple always takes the same path, and both paths
	// are used.
	paths := map[uint16]map[uint16]bool{}
	for round := range 3 {
		var frames [][]byte
		for sport := range uint16(60) {
			if round%2 == 0 {
				frames = append(frames, mkFrame(t, frameOpts{dst: "10.1.2.3", src: fmt.Sprintf("192.168.0.%d", sport)}))
			} else {
				frames = append(frames, mkFrame(t, frameOpts{dst: "10.1.2.3", src: fmt.Sprintf("192.168.0.%d", sport)}))
			}
		}
		h.Push(0, frames...)
		for port := range 2 {
			for _, p := range h.Outs[port].Pkts {
				src := uint16(p.Data[14+15])
				if paths[src] == nil {
					paths[src] = map[uint16]bool{}
				}
				paths[src][uint16(port)] = true
				want := netip.MustParseAddr(fmt.Sprintf("10.1.0.%d", 2+port))
				if p.NextHop != want {
					t.Errorf("port %d next hop %v, want %v", port, p.NextHop, want)
				}
				if p.FlowHash == 0 {
					t.Errorf("flow hash not kept")
				}
			}
		}
		h.CheckNoLeak()
		h.Reset()
	}
	used := map[uint16]bool{}
	for src, ps := range paths {
		if len(ps) != 1 {
			t.Errorf("flow from .%d took %d paths", src, len(ps))
		}
		for p := range ps {
			used[p] = true
		}
	}
	if len(used) != 2 {
		t.Errorf("flows used paths %v, want both", used)
	}
	hs := elementtest.New(t, "IPLookup", cfg, &elementtest.Options{Sink: true})
	v6 := mkFrame6(t, "2001:db8::1", "2001:db8:5::5", 64, 1, 0)
	if n := hs.AllocsPerBatch(100, v6, ipFrameTo(t, "10.9.9.9"), v6); n != 0 {
		t.Errorf("mixed batch allocs %v", n)
	}
}

func BenchmarkIPLookupV6(b *testing.B) {
	rs := route.GenerateRoutes(route.GenOptions{Seed: 4, Routes6: 20000, Ports: 1, Default: true})
	var routes []string
	for _, r := range rs {
		routes = append(routes, r.String())
	}
	c := &IPLookupConfig{Routes: routes, Miss: -1}
	if err := c.Validate(); err != nil {
		b.Fatal(err)
	}
	var frames [][]byte
	for i := range 64 {
		p := rs[i*97%len(rs)].Prefix
		frames = append(frames, mkFrame6(b, "2001:db8::1", p.Addr().Next().String(), 64, uint16(i), 0))
	}
	h := elementtest.New(b, "IPLookup", c, &elementtest.Options{Sink: true})
	h.Bench(b, frames...)
}
