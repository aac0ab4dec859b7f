package gen

import (
	"testing"

	"github.com/junction-dataplane/junction/packet"
)

// TestPortsAndICMP: sport and dport ranges, a single dport, and ICMP echo
// requests: every frame decodes with valid checksums (verify), carries the
// ports asked for, and a range is covered.
func TestPortsAndICMP(t *testing.T) {
	for _, tt := range []struct {
		name         string
		edit         func(c *Config)
		proto        uint8
		sport, dport [2]uint16 // inclusive ranges every frame's ports must fall in
		wantAll      bool      // every sport and dport of the ranges seen
	}{
		{"tcp to port 23", func(c *Config) { c.Proto = "tcp"; c.Dport = "23"; c.Flows = 100 }, packet.ProtoTCP,
			[2]uint16{1024, 1123}, [2]uint16{23, 23}, true},
		{"udp sport range", func(c *Config) { c.Sport = "5000-5009"; c.Flows = 10 }, packet.ProtoUDP,
			[2]uint16{5000, 5009}, [2]uint16{DstPort, DstPort}, true},
		{"udp dport range", func(c *Config) { c.Dport = "6000-6015"; c.Flows = 50; c.Dst = "10.0.0.0/8" }, packet.ProtoUDP,
			[2]uint16{1024, 1073}, [2]uint16{6000, 6015}, true},
		{"tcp both ranges, high ports", func(c *Config) {
			c.Proto = "tcp"
			c.Sport = "65530-65535"
			c.Dport = "65500-65535"
			c.Src = "10.0.0.0/30"
			c.Flows = 12
		}, packet.ProtoTCP, [2]uint16{65530, 65535}, [2]uint16{65500, 65535}, true},
		{"icmp echo", func(c *Config) { c.Proto = "icmp"; c.Flows = 20; c.Dst = "255.255.0.0/16" }, packet.ProtoICMP,
			[2]uint16{1024, 1043}, [2]uint16{0, 0}, true},
		{"icmp min size", func(c *Config) { c.Proto = "icmp"; c.Size = 42; c.Sport = "1" }, packet.ProtoICMP,
			[2]uint16{1, 1}, [2]uint16{0, 0}, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			d := openGen(t, 1, tt.edit)
			sports, dports := map[uint16]bool{}, map[uint16]bool{}
			drain(t, d, 0, 4000, func(p *packet.Packet) {
				dd := verify(t, p.Data, tt.proto)
				if dd.sport < tt.sport[0] || dd.sport > tt.sport[1] || dd.dport < tt.dport[0] || dd.dport > tt.dport[1] {
					t.Fatalf("ports %d -> %d, want %v -> %v", dd.sport, dd.dport, tt.sport, tt.dport)
				}
				sports[dd.sport], dports[dd.dport] = true, true
			})
			if tt.wantAll {
				if n := int(tt.sport[1]-tt.sport[0]) + 1; len(sports) != n {
					t.Errorf("%d source ports seen, want %d", len(sports), n)
				}
				if n := int(tt.dport[1]-tt.dport[0]) + 1; len(dports) != n {
					t.Errorf("%d destination ports seen, want %d", len(dports), n)
				}
			}
			checkNoLeak(t, d)
		})
	}
}

// TestPortRangeNoAllocs: a dport range and ICMP cost no allocation.
func TestPortRangeNoAllocs(t *testing.T) {
	for _, edit := range []func(c *Config){
		func(c *Config) { c.Dport = "1-1000" },
		func(c *Config) { c.Proto = "icmp"; c.Flows = 100 },
	} {
		d := openGen(t, 1, edit)
		b := packet.NewBatch(64)
		d.Receive(0, b)
		d.Transmit(0, b)
		if allocs := testing.AllocsPerRun(200, func() {
			d.Receive(0, b)
			d.Transmit(0, b)
		}); allocs != 0 {
			t.Errorf("%v allocations per Receive+Transmit", allocs)
		}
		checkNoLeak(t, d)
	}
}
