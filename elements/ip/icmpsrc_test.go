package ip

import (
	"net/netip"
	"testing"

	"github.com/junction-dataplane/junction/drivers"
	"github.com/junction-dataplane/junction/elements"
	"github.com/junction-dataplane/junction/elements/elementtest"
	"github.com/junction-dataplane/junction/packet"
)

// routerDevices are configs/router-veth.toml's two devices, with their
// indexes (elements.DeviceLister, as the pipeline's set is).
type routerDevices []elementtest.Device

func (s routerDevices) Device(name string) (drivers.Device, int, bool) {
	for i, d := range s {
		if d.DevInfo.Name == name {
			return d, i, true
		}
	}
	return nil, 0, false
}
func (s routerDevices) Queues(string, int) []int { return nil }
func (s routerDevices) DeviceNames() []string {
	var ns []string
	for _, d := range s {
		ns = append(ns, d.DevInfo.Name)
	}
	return ns
}

func mkDevices(addrs ...[]string) routerDevices {
	var s routerDevices
	for i, as := range addrs {
		d := elementtest.Device{DevInfo: drivers.Info{Name: []string{"lan", "wan", "dmz"}[i]}}
		for _, a := range as {
			d.DevInfo.Addresses = append(d.DevInfo.Addresses, netip.MustParsePrefix(a))
		}
		s = append(s, d)
	}
	return s
}

var veth = mkDevices([]string{"10.1.0.1/24", "2001:db8:1::1/64"}, []string{"10.2.0.1/24", "2001:db8:2::1/64"})

// TestICMPErrorAutoSource: with src = "auto" an error comes from the
// address of the interface it leaves by (RFC 1812 4.3.2.4): the router's
// address on the link of the packet's source; for a source beyond a next
// hop, the address of the device the packet came in on (the way back);
// for a packet addressed to the router itself, that address. One
// element answering packets from both sides (a DecTTL's expiries, a
// CheckMTU's refusals) gets each right.
func TestICMPErrorAutoSource(t *testing.T) {
	tests := []struct {
		name, src, dst string
		inDev          uint16
		want           string
	}{
		{"from the lan host, to beyond the wan", "10.1.0.2", "10.16.0.2", 0, "10.1.0.1"},
		{"from the wan host, to the lan", "10.2.0.2", "10.1.0.2", 1, "10.2.0.1"},
		{"from beyond the wan (routed), arrived on wan", "10.16.0.2", "10.1.0.2", 1, "10.2.0.1"},
		{"from beyond the lan (routed), arrived on lan", "172.16.5.5", "10.16.0.2", 0, "10.1.0.1"},
		{"to the router's wan address, from the lan", "10.1.0.2", "10.2.0.1", 0, "10.1.0.1"},
		{"a lan source arriving on wan (spoofed): the link wins", "10.1.0.7", "10.1.0.2", 1, "10.1.0.1"},
	}
	cfg := icmpCfg("unreachable", "needfrag")
	cfg.MTU = 1400
	cfg.Src = "auto"
	h := elementtest.New(t, "ICMPError", cfg, &elementtest.Options{Devices: veth})
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := h.Packet(mkFrame(t, frameOpts{src: tc.src, dst: tc.dst, payload: 20}))
			p.InDevice = tc.inDev
			h.PushBatch(0, p)
			if len(h.Outs[0].Pkts) != 1 {
				t.Fatalf("no ICMP error: %v", h.Stats.Counters())
			}
			q := h.Outs[0].Pkts[0]
			ip := packet.IPv4(q.Data[q.L3:])
			if got := netip.AddrFrom4(ip.Src4()); got.String() != tc.want {
				t.Errorf("source %v, want %s", got, tc.want)
			}
			if refChecksum(ip[:packet.IPv4MinLen]) != 0 || refChecksum(ip[packet.IPv4MinLen:]) != 0 {
				t.Errorf("checksums do not verify")
			}
			h.Outs[0].Reset()
		})
	}
	h.CheckNoLeak()
}

// TestICMPErrorAutoNoAddress: "auto" in a graph none of whose devices has
// an IPv4 address is refused when the element is built, naming src.
func TestICMPErrorAutoNoAddress(t *testing.T) {
	cfg := icmpCfg("timeexceeded", 0)
	cfg.Src = "auto"
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	typ, _ := lookupType(t, "ICMPError")
	ctx := newTestContext(mkDevices([]string{"2001:db8:1::1/64"}))
	if _, err := typ.New(cfg, ctx); err == nil {
		t.Errorf("auto with no IPv4 address accepted")
	}
	cfg6 := icmp6Cfg("timeexceeded", 0, 0)
	cfg6.Src = "auto"
	if err := cfg6.Validate(); err != nil {
		t.Fatal(err)
	}
	typ6, _ := lookupType(t, "ICMP6Error")
	if _, err := typ6.New(cfg6, newTestContext(mkDevices([]string{"10.1.0.1/24", "fe80::1/64"}))); err == nil {
		t.Errorf("auto with no global IPv6 address accepted")
	}
}

// TestICMP6ErrorAutoSource: TestICMPErrorAutoSource for ICMPv6 errors
// (RFC 4443 2.2: a unicast address of the router; the one of the link
// the error leaves by, as for IPv4).
func TestICMP6ErrorAutoSource(t *testing.T) {
	tests := []struct {
		name, src, dst string
		inDev          uint16
		want           string
	}{
		{"from the lan host", "2001:db8:1::10", "2001:db8:16::5", 0, "2001:db8:1::1"},
		{"from the wan host", "2001:db8:2::2", "2001:db8:1::10", 1, "2001:db8:2::1"},
		{"from beyond the wan, arrived on wan", "2001:db8:16::5", "2001:db8:1::10", 1, "2001:db8:2::1"},
		{"to the router's wan address, from the lan", "2001:db8:1::10", "2001:db8:2::1", 0, "2001:db8:1::1"},
	}
	cfg := icmp6Cfg("toobig", 0, 1400)
	cfg.Src = "auto"
	h := elementtest.New(t, "ICMP6Error", cfg, &elementtest.Options{Devices: veth})
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := h.Packet(frame6{src: tc.src, dst: tc.dst, payload: 1400}.bytes(t))
			p.InDevice = tc.inDev
			h.PushBatch(0, p)
			if len(h.Outs[0].Pkts) != 1 {
				t.Fatalf("no ICMPv6 error: %v", h.Stats.Counters())
			}
			q := h.Outs[0].Pkts[0]
			got := netip.AddrFrom16([16]byte(q.Data[q.L3+8 : q.L3+24]))
			if got.String() != tc.want {
				t.Errorf("source %v, want %s", got, tc.want)
			}
			checkICMP6ErrorFrom(t, q.Data)
			h.Outs[0].Reset()
		})
	}
	h.CheckNoLeak()
}

// TestICMPErrorAutoAllocs: choosing the source per packet allocates
// nothing (both families).
func TestICMPErrorAutoAllocs(t *testing.T) {
	cfg := icmpCfg(11, 0)
	cfg.Src = "auto"
	h := elementtest.New(t, "ICMPError", cfg, &elementtest.Options{Sink: true, Devices: veth})
	f := mkFrame(t, frameOpts{src: "10.16.0.2", ttl: 1, payload: 40})
	if a := h.AllocsPerBatch(100, f, mkFrame(t, frameOpts{src: "10.1.0.2", dst: "10.2.0.1"})); a != 0 {
		t.Errorf("ICMPError auto: allocs per batch = %v, want 0", a)
	}
	cfg6 := icmp6Cfg("timeexceeded", 0, 0)
	cfg6.Src = "auto"
	h6 := elementtest.New(t, "ICMP6Error", cfg6, &elementtest.Options{Sink: true, Devices: veth})
	if a := h6.AllocsPerBatch(100, frame6{payload: 40}.bytes(t), frame6{src: "2001:db8:16::9"}.bytes(t)); a != 0 {
		t.Errorf("ICMP6Error auto: allocs per batch = %v, want 0", a)
	}
}

// checkICMP6ErrorFrom verifies the ICMPv6 checksum of the error frame f
// over its own source (whichever was chosen).
func checkICMP6ErrorFrom(t *testing.T, f []byte) {
	t.Helper()
	ip := f[packet.EthernetLen:]
	ic := ip[packet.IPv6Len:]
	if ^packet.Fold(packet.Sum(ic, packet.PseudoHeaderSumV6([16]byte(ip[8:24]), [16]byte(ip[24:40]), 58, len(ic)))) != 0 {
		t.Errorf("ICMPv6 checksum does not verify over the chosen source")
	}
}

func lookupType(t *testing.T, name string) (*elements.Type, bool) {
	t.Helper()
	typ, ok := elements.Lookup(name)
	if !ok {
		t.Fatalf("%s not registered", name)
	}
	return typ, ok
}

func newTestContext(devs elements.DeviceSet) *elements.Context {
	return elements.NewContext("e", 0, 1, packet.DefaultBatch, []*elements.Output{elements.NewOutput(&elements.Clock{})},
		&elements.Stats{}, packet.NewPool(4), devs, nil)
}
