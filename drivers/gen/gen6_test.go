package gen

import (
	"net"
	"testing"

	"github.com/google/gopacket"
	"github.com/google/gopacket/layers"

	"github.com/junction-dataplane/junction/drivers"
	"github.com/junction-dataplane/junction/packet"
)

// TestIPv6Frames: IPv6 frames decode with gopacket, their UDP/TCP
// checksums verify, and addresses and ports vary as the keys say.
func TestIPv6Frames(t *testing.T) {
	for _, proto := range []string{"udp", "tcp"} {
		drv, _ := drivers.Lookup("gen")
		cfg := drv.NewConfig().(*Config)
		cfg.Proto, cfg.Src, cfg.Dst, cfg.Flows = proto, "2001:db8:1::/120", "2001:db8:16::/48", 64
		cfg.Size = 64
		if proto == "tcp" {
			cfg.Size = 90
		}
		dev, err := drv.Open(cfg, drivers.OpenContext{Name: "g", Workers: 1})
		if err != nil {
			t.Fatal(err)
		}
		b := packet.NewBatch(64)
		if n := dev.Receive(0, b); n != 64 {
			t.Fatalf("%s: received %d", proto, n)
		}
		dsts := map[string]bool{}
		for _, p := range b.Pkts {
			pk := gopacket.NewPacket(p.Data, layers.LayerTypeEthernet, gopacket.Default)
			ip, _ := pk.Layer(layers.LayerTypeIPv6).(*layers.IPv6)
			if ip == nil || len(p.Data) != cfg.Size || int(ip.Length) != cfg.Size-54 {
				t.Fatalf("%s: not IPv6 of %d bytes: %v", proto, cfg.Size, pk)
			}
			dsts[ip.DstIP.String()] = true
			if !(&net6{ip.SrcIP}).in("2001:db8:1::", 15) || !(&net6{ip.DstIP}).in("2001:db8:16::", 12) {
				t.Errorf("%s: %v -> %v outside src/dst", proto, ip.SrcIP, ip.DstIP)
			}
			l4 := p.Data[54:]
			var s [16]byte
			var d [16]byte
			copy(s[:], ip.SrcIP)
			copy(d[:], ip.DstIP)
			if packet.Fold(packet.Sum(l4, packet.PseudoHeaderSumV6(s, d, uint8(ip.NextHeader), len(l4)))) != 0xffff {
				t.Errorf("%s: L4 checksum does not verify", proto)
			}
		}
		if len(dsts) < 32 {
			t.Errorf("%s: only %d destinations in 64 packets", proto, len(dsts))
		}
		b.FreeAll()
		dev.Close()
	}
}

type net6 struct{ ip net.IP }

// in reports whether the address starts with prefix's first n bytes.
func (a *net6) in(prefix string, n int) bool {
	return string(a.ip.To16()[:n]) == string(net.ParseIP(prefix).To16()[:n])
}
