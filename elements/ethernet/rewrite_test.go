package ethernet_test

import (
	"bytes"
	"net"
	"strings"
	"testing"

	"github.com/google/gopacket"
	"github.com/google/gopacket/layers"

	"github.com/junction-dataplane/junction/elements/elementtest"
	"github.com/junction-dataplane/junction/elements/ethernet"
)

var (
	src = net.HardwareAddr{0x02, 0, 0, 0, 0, 0x01}
	dst = net.HardwareAddr{0x52, 0x54, 0, 0x12, 0x34, 0x56}
	cfg = ethernet.RewriteConfig{Src: "02:00:00:00:00:01", Dst: "52:54:00:12:34:56"}
)

func udpFrame(t testing.TB, payload int) []byte {
	eth := &layers.Ethernet{SrcMAC: net.HardwareAddr{1, 2, 3, 4, 5, 6}, DstMAC: net.HardwareAddr{6, 5, 4, 3, 2, 1},
		EthernetType: layers.EthernetTypeIPv4}
	ip := &layers.IPv4{Version: 4, TTL: 64, Protocol: layers.IPProtocolUDP,
		SrcIP: net.IP{10, 0, 0, 1}, DstIP: net.IP{10, 0, 0, 2}}
	udp := &layers.UDP{SrcPort: 1000, DstPort: 2000}
	udp.SetNetworkLayerForChecksum(ip)
	buf := gopacket.NewSerializeBuffer()
	err := gopacket.SerializeLayers(buf, gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true},
		eth, ip, udp, gopacket.Payload(make([]byte, payload)))
	if err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestEtherRewrite(t *testing.T) {
	tests := []struct {
		name      string
		frame     []byte
		truncated bool
	}{
		{"udp", udpFrame(t, 18), false},
		{"large", udpFrame(t, 1400), false},
		{"header only", []byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 0x88, 0xb5}, false},
		{"13 bytes", make([]byte, 13), true},
		{"empty", nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := cfg
			h := elementtest.New(t, "EtherRewrite", &c, nil)
			h.Push(0, tt.frame)
			out := h.Outs[0].Frames()
			if tt.truncated {
				if len(out) != 0 || h.Counter("truncated") != 1 {
					t.Fatalf("%d out, counters %v", len(out), h.Stats.Counters())
				}
				h.CheckNoLeak()
				return
			}
			if len(out) != 1 {
				t.Fatalf("%d out, counters %v", len(out), h.Stats.Counters())
			}
			f := out[0]
			if !bytes.Equal(f[12:], tt.frame[12:]) {
				t.Errorf("type or payload changed")
			}
			pk := gopacket.NewPacket(f, layers.LayerTypeEthernet, gopacket.Default)
			eth := pk.Layer(layers.LayerTypeEthernet).(*layers.Ethernet)
			if !bytes.Equal(eth.SrcMAC, src) || !bytes.Equal(eth.DstMAC, dst) {
				t.Errorf("Ethernet %v -> %v, want %v -> %v", eth.SrcMAC, eth.DstMAC, src, dst)
			}
			h.CheckNoLeak()
		})
	}
}

func TestEtherRewriteBatch(t *testing.T) {
	c := cfg
	h := elementtest.New(t, "EtherRewrite", &c, nil)
	good := udpFrame(t, 18)
	var frames [][]byte
	for i := 0; i < 64; i++ {
		if i%3 == 0 {
			frames = append(frames, good[:i%14])
		} else {
			frames = append(frames, good)
		}
	}
	h.Push(0, frames...)
	if n := len(h.Outs[0].Pkts); n != 42 || h.Counter("truncated") != 22 {
		t.Fatalf("%d out, counters %v", n, h.Stats.Counters())
	}
	h.CheckNoLeak()
}

func TestEtherRewriteConfig(t *testing.T) {
	tests := []struct {
		cfg ethernet.RewriteConfig
		err string
	}{
		{cfg, ""},
		{ethernet.RewriteConfig{Dst: "52:54:00:12:34:56"}, `key "src": required`},
		{ethernet.RewriteConfig{Src: "02:00:00:00:00:01"}, `key "dst": required`},
		{ethernet.RewriteConfig{Src: "02:00:00:00:00", Dst: "52:54:00:12:34:56"}, `key "src": bad MAC`},
		{ethernet.RewriteConfig{Src: "02:00:00:00:00:01", Dst: "52:54:00:12:34:5g"}, `key "dst": bad MAC`},
	}
	for _, tt := range tests {
		err := tt.cfg.Validate()
		if (err == nil) != (tt.err == "") || (err != nil && !strings.Contains(err.Error(), tt.err)) {
			t.Errorf("%+v: Validate = %v, want %q", tt.cfg, err, tt.err)
		}
	}
}

func TestEtherRewriteAllocs(t *testing.T) {
	c := cfg
	h := elementtest.New(t, "EtherRewrite", &c, &elementtest.Options{Sink: true})
	if a := h.AllocsPerBatch(100, udpFrame(t, 18), []byte{1}); a != 0 {
		t.Fatalf("%v allocs per batch", a)
	}
}

func BenchmarkEtherRewrite(b *testing.B) {
	c := cfg
	h := elementtest.New(b, "EtherRewrite", &c, &elementtest.Options{Sink: true})
	h.Bench(b, udpFrame(b, 18))
}
