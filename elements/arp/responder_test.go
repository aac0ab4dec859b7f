package arp_test

import (
	"bytes"
	"net"
	"net/netip"
	"strings"
	"testing"

	"github.com/google/gopacket"
	"github.com/google/gopacket/layers"

	"github.com/junction-dataplane/junction/drivers"
	"github.com/junction-dataplane/junction/elements"
	"github.com/junction-dataplane/junction/elements/arp"
	"github.com/junction-dataplane/junction/elements/elementtest"
	"github.com/junction-dataplane/junction/packet"
)

var (
	ourMAC   = net.HardwareAddr{0x00, 0x11, 0x22, 0x33, 0x44, 0x55}
	ourMAC2  = net.HardwareAddr{0x02, 0x00, 0x00, 0x00, 0x00, 0x02}
	hostMAC  = net.HardwareAddr{0x52, 0x54, 0x00, 0xaa, 0xbb, 0xcc}
	bcastMAC = net.HardwareAddr{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}
)

type arpFrame struct {
	op         uint16
	ethType    layers.EthernetType
	htype      layers.LinkType
	sha        net.HardwareAddr
	spa, tpa   string
	pad        int // serialize with padding to at least this length
	truncateTo int // cut the serialized frame to this length (0: no)
}

func (a arpFrame) bytes(t testing.TB) []byte {
	if a.op == 0 {
		a.op = layers.ARPRequest
	}
	if a.ethType == 0 {
		a.ethType = layers.EthernetTypeARP
	}
	if a.htype == 0 {
		a.htype = layers.LinkTypeEthernet
	}
	if a.sha == nil {
		a.sha = hostMAC
	}
	eth := &layers.Ethernet{SrcMAC: a.sha, DstMAC: bcastMAC, EthernetType: a.ethType}
	req := &layers.ARP{AddrType: a.htype, Protocol: layers.EthernetTypeIPv4, HwAddressSize: 6,
		ProtAddressSize: 4, Operation: a.op, SourceHwAddress: a.sha,
		SourceProtAddress: ip4(a.spa), DstHwAddress: make([]byte, 6), DstProtAddress: ip4(a.tpa)}
	buf := gopacket.NewSerializeBuffer()
	if err := gopacket.SerializeLayers(buf, gopacket.SerializeOptions{}, eth, req); err != nil {
		t.Fatal(err)
	}
	f := buf.Bytes()
	if len(f) < a.pad {
		f = append(f, make([]byte, a.pad-len(f))...)
	}
	if a.truncateTo > 0 {
		f = f[:a.truncateTo]
	}
	return f
}

func ip4(s string) []byte { a := netip.MustParseAddr(s).As4(); return a[:] }

var config = &arp.ResponderConfig{Addresses: []string{
	"10.1.0.1 00:11:22:33:44:55",
	"192.0.2.7/24 02:00:00:00:00:02",
}}

func newResponder(t testing.TB, cfg *arp.ResponderConfig, o *elementtest.Options) *elementtest.Harness {
	c := *cfg // Validate fills private state: give each harness its own
	return elementtest.New(t, "ARPResponder", &c, o)
}

// consumedReasons are ARPResponder's reasons for ARP that needs no answer
// from it (a reply Tee'd to it beside an ARPQuerier, a request for another
// host, an announcement): consumed by design, not drops.
var consumedReasons = map[string]bool{"not a request": true, "not for us": true, "gratuitous": true}

func TestARPResponder(t *testing.T) {
	tests := []struct {
		name   string
		in     arpFrame
		drop   string           // expected drop reason, "" for a reply
		mac    net.HardwareAddr // our MAC in the reply
		length int              // expected reply length (0: 60, gopacket pads to the minimum frame)
	}{
		{name: "request", in: arpFrame{spa: "10.1.0.9", tpa: "10.1.0.1"}, mac: ourMAC},
		{name: "second address from IP/len", in: arpFrame{spa: "192.0.2.1", tpa: "192.0.2.7"}, mac: ourMAC2},
		{name: "unpadded 42-byte request", in: arpFrame{spa: "10.1.0.9", tpa: "10.1.0.1", truncateTo: 42}, mac: ourMAC, length: 42},
		{name: "long padding kept", in: arpFrame{spa: "10.1.0.9", tpa: "10.1.0.1", pad: 100}, mac: ourMAC, length: 100},
		{name: "probe (sender 0.0.0.0) is answered", in: arpFrame{spa: "0.0.0.0", tpa: "10.1.0.1"}, mac: ourMAC},
		{name: "reply", in: arpFrame{op: layers.ARPReply, spa: "10.1.0.9", tpa: "10.1.0.1"}, drop: "not a request"},
		{name: "other opcode", in: arpFrame{op: 3, spa: "10.1.0.9", tpa: "10.1.0.1"}, drop: "not a request"},
		{name: "someone else's address", in: arpFrame{spa: "10.1.0.9", tpa: "10.1.0.2"}, drop: "not for us"},
		{name: "gratuitous for our address", in: arpFrame{spa: "10.1.0.1", tpa: "10.1.0.1"}, drop: "gratuitous"},
		{name: "gratuitous for another", in: arpFrame{spa: "10.1.0.9", tpa: "10.1.0.9"}, drop: "not for us"},
		{name: "broadcast sender MAC", in: arpFrame{sha: bcastMAC, spa: "10.1.0.9", tpa: "10.1.0.1"}, drop: "bad sender"},
		{name: "zero sender MAC", in: arpFrame{sha: make(net.HardwareAddr, 6), spa: "10.1.0.9", tpa: "10.1.0.1"}, drop: "bad sender"},
		{name: "our own request looped back", in: arpFrame{sha: ourMAC2, spa: "10.1.0.9", tpa: "10.1.0.1"}, drop: "bad sender"},
		{name: "multicast sender IP", in: arpFrame{spa: "224.0.0.1", tpa: "10.1.0.1"}, drop: "bad sender"},
		{name: "broadcast sender IP", in: arpFrame{spa: "255.255.255.255", tpa: "10.1.0.1"}, drop: "bad sender"},
		{name: "loopback sender IP", in: arpFrame{spa: "127.0.0.1", tpa: "10.1.0.1"}, drop: "bad sender"},
		{name: "IPv4 ethertype", in: arpFrame{ethType: layers.EthernetTypeIPv4, spa: "10.1.0.9", tpa: "10.1.0.1"}, drop: "not arp"},
		{name: "short non-ARP frame", in: arpFrame{ethType: layers.EthernetTypeIPv6, spa: "10.1.0.9", tpa: "10.1.0.1", truncateTo: 20}, drop: "not arp"},
		{name: "hardware type not Ethernet", in: arpFrame{htype: layers.LinkTypeTokenRing, spa: "10.1.0.9", tpa: "10.1.0.1"}, drop: "not arp"},
		{name: "ARP cut short", in: arpFrame{spa: "10.1.0.9", tpa: "10.1.0.1", truncateTo: 41}, drop: "truncated"},
		{name: "Ethernet header only", in: arpFrame{spa: "10.1.0.9", tpa: "10.1.0.1", truncateTo: 14}, drop: "truncated"},
		{name: "runt", in: arpFrame{spa: "10.1.0.9", tpa: "10.1.0.1", truncateTo: 5}, drop: "truncated"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newResponder(t, config, nil)
			in := tt.in.bytes(t)
			h.Push(0, in)
			out := h.Outs[0].Frames()
			if tt.drop != "" {
				if len(out) != 0 {
					t.Fatalf("answered; want drop %q", tt.drop)
				}
				if got := h.Counter(tt.drop); got != 1 {
					t.Fatalf("drop %q = %d, want 1 (counters %v)", tt.drop, got, h.Stats.Counters())
				}
				// ARP that needs no answer from us is consumed, not
				// lost; only malformed frames are drops.
				wantDrops, wantConsumed := uint64(1), uint64(0)
				if consumedReasons[tt.drop] {
					wantDrops, wantConsumed = 0, 1
				}
				if d, c := h.Stats.Drops(), h.Stats.Consumed(); d != wantDrops || c != wantConsumed {
					t.Fatalf("%q: drops %d consumed %d, want %d %d", tt.drop, d, c, wantDrops, wantConsumed)
				}
				h.CheckNoLeak()
				return
			}
			if len(out) != 1 {
				t.Fatalf("got %d replies, want 1 (counters %v)", len(out), h.Stats.Counters())
			}
			if h.Counter("replies") != 1 || h.Stats.Drops() != 0 {
				t.Fatalf("counters %v", h.Stats.Counters())
			}
			want := tt.length
			if want == 0 {
				want = 60
			}
			if len(out[0]) != want {
				t.Fatalf("reply is %d bytes, want %d", len(out[0]), want)
			}
			checkReply(t, out[0], tt.mac, tt.in.tpa, tt.in.spa)
			h.CheckNoLeak()
		})
	}
}

// checkReply decodes the reply with gopacket, independently of the code
// under test.
func checkReply(t *testing.T, frame []byte, mac net.HardwareAddr, ourIP, theirIP string) {
	t.Helper()
	pk := gopacket.NewPacket(frame, layers.LayerTypeEthernet, gopacket.Default)
	eth, _ := pk.Layer(layers.LayerTypeEthernet).(*layers.Ethernet)
	rep, _ := pk.Layer(layers.LayerTypeARP).(*layers.ARP)
	if eth == nil || rep == nil {
		t.Fatalf("reply does not decode as Ethernet/ARP: %v", pk)
	}
	if !bytes.Equal(eth.DstMAC, hostMAC) || !bytes.Equal(eth.SrcMAC, mac) || eth.EthernetType != layers.EthernetTypeARP {
		t.Errorf("Ethernet %v -> %v type %v, want %v -> %v ARP", eth.SrcMAC, eth.DstMAC, eth.EthernetType, mac, hostMAC)
	}
	if rep.Operation != layers.ARPReply || rep.AddrType != layers.LinkTypeEthernet || rep.Protocol != layers.EthernetTypeIPv4 {
		t.Errorf("op %d htype %v ptype %v", rep.Operation, rep.AddrType, rep.Protocol)
	}
	if !bytes.Equal(rep.SourceHwAddress, mac) || !bytes.Equal(rep.SourceProtAddress, ip4(ourIP)) {
		t.Errorf("sender %v %v, want %v %s", net.HardwareAddr(rep.SourceHwAddress), net.IP(rep.SourceProtAddress), mac, ourIP)
	}
	if !bytes.Equal(rep.DstHwAddress, hostMAC) || !bytes.Equal(rep.DstProtAddress, ip4(theirIP)) {
		t.Errorf("target %v %v, want %v %s", net.HardwareAddr(rep.DstHwAddress), net.IP(rep.DstProtAddress), hostMAC, theirIP)
	}
}

// A mixed batch: replies keep their order, every drop is counted once.
func TestARPResponderBatch(t *testing.T) {
	h := newResponder(t, config, nil)
	var frames [][]byte
	var wantIPs []string
	for i := 0; i < 64; i++ {
		switch i % 4 {
		case 0:
			frames = append(frames, arpFrame{spa: "10.1.0.9", tpa: "10.1.0.1"}.bytes(t))
			wantIPs = append(wantIPs, "10.1.0.1")
		case 1:
			frames = append(frames, arpFrame{spa: "10.1.0.9", tpa: "10.9.9.9"}.bytes(t))
		case 2:
			frames = append(frames, arpFrame{spa: "192.0.2.1", tpa: "192.0.2.7"}.bytes(t))
			wantIPs = append(wantIPs, "192.0.2.7")
		case 3:
			frames = append(frames, []byte{1, 2, 3})
		}
	}
	h.Push(0, frames...)
	out := h.Outs[0].Frames()
	if len(out) != len(wantIPs) {
		t.Fatalf("%d replies, want %d", len(out), len(wantIPs))
	}
	for i, f := range out {
		if got := netip.AddrFrom4([4]byte(f[28:32])).String(); got != wantIPs[i] {
			t.Fatalf("reply %d for %s, want %s", i, got, wantIPs[i])
		}
	}
	if h.Counter("not for us") != 16 || h.Counter("truncated") != 16 || h.Counter("replies") != 32 {
		t.Fatalf("counters %v", h.Stats.Counters())
	}
	h.CheckNoLeak()
}

func TestARPResponderConfig(t *testing.T) {
	tests := []struct {
		name    string
		cfg     arp.ResponderConfig
		wantErr string // substring; "" for valid
		device  string // the device the config resolves to
	}{
		{name: "one entry", cfg: arp.ResponderConfig{Addresses: []string{"10.1.0.1 00:11:22:33:44:55"}}},
		{name: "dash MAC and prefix", cfg: arp.ResponderConfig{Addresses: []string{" 10.1.0.1/24\t00-11-22-33-44-55 "}}},
		{name: "same entry twice", cfg: arp.ResponderConfig{Addresses: []string{"10.1.0.1 00:11:22:33:44:55", "10.1.0.1 00:11:22:33:44:55"}}},
		{name: "neither", cfg: arp.ResponderConfig{}, wantErr: `key "addresses": required`},
		{name: "missing MAC", cfg: arp.ResponderConfig{Addresses: []string{"10.1.0.1"}}, wantErr: `want "IP MAC"`},
		{name: "bad IP", cfg: arp.ResponderConfig{Addresses: []string{"10.1.0 00:11:22:33:44:55"}}, wantErr: `key "addresses"`},
		{name: "IPv6", cfg: arp.ResponderConfig{Addresses: []string{"2001:db8::1 00:11:22:33:44:55"}}, wantErr: "IPv4"},
		{name: "bad MAC", cfg: arp.ResponderConfig{Addresses: []string{"10.1.0.1 00:11:22:33:44"}}, wantErr: "bad MAC"},
		{name: "multicast MAC", cfg: arp.ResponderConfig{Addresses: []string{"10.1.0.1 01:00:5e:00:00:01"}}, wantErr: "unicast"},
		{name: "broadcast IP", cfg: arp.ResponderConfig{Addresses: []string{"255.255.255.255 00:11:22:33:44:55"}}, wantErr: "unicast"},
		{name: "conflict", cfg: arp.ResponderConfig{Addresses: []string{"10.1.0.1 00:11:22:33:44:55", "10.1.0.1 00:11:22:33:44:56"}}, wantErr: "twice"},
		{name: "device key", cfg: arp.ResponderConfig{Device: "lan"}, device: "lan"},
		{name: "inline device name", cfg: arp.ResponderConfig{Addresses: []string{"lan"}}, device: "lan"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.cfg.Validate()
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("Validate: %v", err)
				}
				if tt.cfg.Device != tt.device {
					t.Fatalf("device %q, want %q", tt.cfg.Device, tt.device)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("Validate = %v, want an error containing %q", err, tt.wantErr)
			}
		})
	}
}

func TestARPResponderDevice(t *testing.T) {
	lan := elementtest.Device{DevInfo: drivers.Info{Name: "lan", MAC: packet.MAC(ourMAC), Addresses: []netip.Prefix{
		netip.MustParsePrefix("2001:db8::1/64"), netip.MustParsePrefix("10.1.0.1/24"), netip.MustParsePrefix("10.2.0.1/16")}}}
	h := newResponder(t, &arp.ResponderConfig{Addresses: []string{"lan"}}, &elementtest.Options{Devices: elementtest.Devices{"lan": lan}})
	h.Push(0, arpFrame{spa: "10.2.3.4", tpa: "10.2.0.1"}.bytes(t), arpFrame{spa: "10.2.3.4", tpa: "10.1.0.2"}.bytes(t))
	out := h.Outs[0].Frames()
	if len(out) != 1 || h.Counter("not for us") != 1 {
		t.Fatalf("%d replies, counters %v", len(out), h.Stats.Counters())
	}
	checkReply(t, out[0], ourMAC, "10.2.0.1", "10.2.3.4")

	// Errors from New: an unknown device, a device without IPv4.
	bad := []struct {
		name string
		set  elementtest.Devices
	}{
		{"unknown device", elementtest.Devices{}},
		{"no IPv4 address", elementtest.Devices{"lan": elementtest.Device{DevInfo: drivers.Info{MAC: packet.MAC(ourMAC)}}}},
		{"no MAC", elementtest.Devices{"lan": elementtest.Device{DevInfo: drivers.Info{Addresses: lan.DevInfo.Addresses}}}},
	}
	typ, _ := elements.Lookup("ARPResponder")
	for _, tt := range bad {
		cfg := &arp.ResponderConfig{Device: "lan"}
		if err := cfg.Validate(); err != nil {
			t.Fatal(err)
		}
		ctx := elements.NewContext("a", 0, 1, 64, []*elements.Output{elements.NewOutput(&elements.Clock{})},
			&elements.Stats{}, packet.NewPool(4), tt.set, nil)
		if _, err := typ.New(cfg, ctx); err == nil {
			t.Errorf("%s: New succeeded", tt.name)
		}
	}
}

// Many addresses: the binary search must find each and only those.
func TestARPResponderManyAddresses(t *testing.T) {
	cfg := &arp.ResponderConfig{}
	for i := 40; i > 0; i-- {
		cfg.Addresses = append(cfg.Addresses, netip.AddrFrom4([4]byte{10, 0, byte(i), 1}).String()+" 00:11:22:33:44:55")
	}
	h := newResponder(t, cfg, nil)
	var frames [][]byte
	for i := 0; i <= 41; i++ {
		frames = append(frames, arpFrame{spa: "10.9.9.9", tpa: netip.AddrFrom4([4]byte{10, 0, byte(i), 1}).String()}.bytes(t))
	}
	h.Push(0, frames...)
	if n := len(h.Outs[0].Pkts); n != 40 || h.Counter("not for us") != 2 {
		t.Fatalf("%d replies, counters %v", n, h.Stats.Counters())
	}
}

func TestARPResponderAllocs(t *testing.T) {
	h := newResponder(t, config, &elementtest.Options{Sink: true})
	frames := [][]byte{arpFrame{spa: "10.1.0.9", tpa: "10.1.0.1"}.bytes(t), arpFrame{spa: "10.1.0.9", tpa: "10.1.0.3"}.bytes(t), {1, 2}}
	if a := h.AllocsPerBatch(100, frames...); a != 0 {
		t.Fatalf("%v allocs per batch", a)
	}
}

func BenchmarkARPResponder(b *testing.B) {
	h := newResponder(b, config, &elementtest.Options{Sink: true})
	h.Bench(b, arpFrame{spa: "10.1.0.9", tpa: "10.1.0.1", pad: 60}.bytes(b))
}

func FuzzARPResponder(f *testing.F) {
	f.Add(arpFrame{spa: "10.1.0.9", tpa: "10.1.0.1"}.bytes(f))
	f.Add(arpFrame{spa: "0.0.0.0", tpa: "192.0.2.7", pad: 60}.bytes(f))
	f.Add(arpFrame{op: layers.ARPReply, spa: "10.1.0.9", tpa: "10.1.0.1"}.bytes(f))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, frame []byte) {
		if len(frame) > packet.BufSize-packet.Headroom {
			return
		}
		h := newResponder(t, config, nil)
		h.Push(0, frame)
		if n := len(h.Outs[0].Pkts); uint64(n)+h.Stats.Drops()+h.Stats.Consumed() != 1 {
			t.Fatalf("%d out + %d drops + %d consumed for one packet", n, h.Stats.Drops(), h.Stats.Consumed())
		}
		h.CheckNoLeak()
	})
}
