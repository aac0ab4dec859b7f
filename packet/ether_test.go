package packet

import (
	"bytes"
	"net"
	"net/netip"
	"strings"
	"testing"

	"github.com/google/gopacket"
	"github.com/google/gopacket/layers"
)

func TestParseMAC(t *testing.T) {
	tests := []struct {
		in   string
		want string // canonical form; "" when invalid
	}{
		{"00:11:22:33:44:55", "00:11:22:33:44:55"},
		{"aa:bb:cc:dd:ee:ff", "aa:bb:cc:dd:ee:ff"},
		{"AA:BB:CC:DD:EE:FF", "aa:bb:cc:dd:ee:ff"},
		{"0a-1B-2c-3D-4e-5F", "0a:1b:2c:3d:4e:5f"},
		{"ff:ff:ff:ff:ff:ff", "ff:ff:ff:ff:ff:ff"},
		{"00:00:00:00:00:00", "00:00:00:00:00:00"},
		{"", ""},
		{"00:11:22:33:44:5", ""},
		{"00:11:22:33:44:555", ""},
		{"00:11:22:33:44:55:", ""},
		{"0:11:22:33:44:55:6", ""},
		{"00.11.22.33.44.55", ""},
		{"00:11:22:33:44 55", ""},
		{"g0:11:22:33:44:55", ""},
		{"00:11:22:33:44:5g", ""},
		{"001122334455aabbc", ""},
		{"00:11:22:33:44:55\n", ""},
		{"0011.2233.4455", ""},
		{"00:11-22:33:44:55", ""}, // mixed separators
		{"00-11-22-33-44:55", ""},
	}
	for _, tt := range tests {
		m, ok := ParseMAC(tt.in)
		if ok != (tt.want != "") {
			t.Errorf("ParseMAC(%q) ok = %v, want %v", tt.in, ok, tt.want != "")
			continue
		}
		if !ok {
			if m != (MAC{}) {
				t.Errorf("ParseMAC(%q) failed but returned %v", tt.in, m)
			}
			continue
		}
		if got := m.String(); got != tt.want {
			t.Errorf("ParseMAC(%q).String() = %q, want %q", tt.in, got, tt.want)
		}
		// The standard library is the independent reference.
		std, err := net.ParseMAC(tt.in)
		if err != nil {
			t.Fatalf("net.ParseMAC(%q): %v", tt.in, err)
		}
		if !bytes.Equal(m[:], std) || m.String() != std.String() {
			t.Errorf("ParseMAC(%q) = %v, net.ParseMAC = %v", tt.in, m, std)
		}
	}
}

func TestMACStringRoundTrip(t *testing.T) {
	for i := range 1000 {
		var m MAC
		for j := range m {
			m[j] = byte(i*7 + j*31 + i>>3)
		}
		s := m.String()
		if s != net.HardwareAddr(m[:]).String() {
			t.Fatalf("%v: String %q, net %q", m[:], s, net.HardwareAddr(m[:]).String())
		}
		back, ok := ParseMAC(strings.ToUpper(s))
		if !ok || back != m {
			t.Fatalf("ParseMAC(String(%v)) = %v, %v", m[:], back, ok)
		}
	}
	if BroadcastMAC.String() != "ff:ff:ff:ff:ff:ff" {
		t.Errorf("BroadcastMAC = %v", BroadcastMAC)
	}
}

func TestEthernetGopacket(t *testing.T) {
	tests := []struct {
		src, dst string
		typ      layers.EthernetType
		payload  []byte
	}{
		{"00:11:22:33:44:55", "66:77:88:99:aa:bb", layers.EthernetTypeIPv4, []byte("hello, ipv4 payload, long enough for 46")},
		{"02:00:00:00:00:01", "ff:ff:ff:ff:ff:ff", layers.EthernetTypeARP, make([]byte, 46)},
		{"fe:dc:ba:98:76:54", "33:33:00:00:00:01", layers.EthernetTypeIPv6, bytes.Repeat([]byte{0xab}, 100)},
		{"00:00:00:00:00:00", "00:00:00:00:00:00", layers.EthernetType(0x88cc), []byte{1, 2, 3}},
	}
	for _, tt := range tests {
		// gopacket writes, we read.
		frame := serialize(t, &layers.Ethernet{SrcMAC: hw(tt.src), DstMAC: hw(tt.dst), EthernetType: tt.typ}, gopacket.Payload(tt.payload))
		e, ok := AsEthernet(frame)
		if !ok {
			t.Fatalf("AsEthernet(%d bytes) failed", len(frame))
		}
		if e.Src().String() != tt.src || e.Dst().String() != tt.dst || e.Type() != uint16(tt.typ) {
			t.Errorf("read src %v dst %v type %#x, want %s %s %#x", e.Src(), e.Dst(), e.Type(), tt.src, tt.dst, uint16(tt.typ))
		}
		// gopacket pads short frames to 60 bytes; the payload is the rest of the frame.
		if p := e.Payload(); len(p) != len(frame)-EthernetLen || !bytes.HasPrefix(p, tt.payload) || &p[0] != &frame[EthernetLen] {
			t.Errorf("Payload = %x, want %x then padding, aliasing the frame", p, tt.payload)
		}

		// We write, gopacket reads.
		buf := make([]byte, EthernetLen+len(tt.payload))
		copy(buf[EthernetLen:], tt.payload)
		w := Ethernet(buf)
		w.SetSrc(macOf(hw(tt.src)))
		w.SetDst(macOf(hw(tt.dst)))
		w.SetType(uint16(tt.typ))
		var ge layers.Ethernet
		if err := ge.DecodeFromBytes(buf, nopFeedback{}); err != nil {
			t.Fatal(err)
		}
		if ge.SrcMAC.String() != tt.src || ge.DstMAC.String() != tt.dst || ge.EthernetType != tt.typ {
			t.Errorf("gopacket read %v %v %v", ge.SrcMAC, ge.DstMAC, ge.EthernetType)
		}
		if !bytes.Equal(buf, frame[:len(buf)]) {
			t.Errorf("setters wrote %x, gopacket %x", buf, frame[:len(buf)])
		}
	}
}

func TestARPGopacket(t *testing.T) {
	tests := []struct {
		op       uint16
		sha, tha string
		spa, tpa string
	}{
		{ARPRequest, "00:11:22:33:44:55", "00:00:00:00:00:00", "10.0.0.1", "10.0.0.2"},
		{ARPReply, "02:aa:bb:cc:dd:ee", "00:11:22:33:44:55", "192.168.1.254", "192.168.1.1"},
		{ARPRequest, "fe:ff:ff:ff:ff:ff", "ff:ff:ff:ff:ff:ff", "0.0.0.0", "255.255.255.255"},
	}
	for _, tt := range tests {
		frame := serialize(t,
			&layers.Ethernet{SrcMAC: hw(tt.sha), DstMAC: BroadcastMAC[:], EthernetType: layers.EthernetTypeARP},
			&layers.ARP{AddrType: layers.LinkTypeEthernet, Protocol: layers.EthernetTypeIPv4, HwAddressSize: 6, ProtAddressSize: 4,
				Operation: tt.op, SourceHwAddress: hw(tt.sha), SourceProtAddress: ip4(tt.spa), DstHwAddress: hw(tt.tha), DstProtAddress: ip4(tt.tpa)})
		a, ok := AsARP(frame[EthernetLen:])
		if !ok {
			t.Fatalf("AsARP rejected a gopacket ARP: %x", frame)
		}
		if a.Op() != tt.op || a.SenderMAC().String() != tt.sha || a.TargetMAC().String() != tt.tha ||
			a.SenderIP() != netip.MustParseAddr(tt.spa) || a.TargetIP() != netip.MustParseAddr(tt.tpa) {
			t.Errorf("read op %d %v %v %v %v, want %+v", a.Op(), a.SenderMAC(), a.TargetMAC(), a.SenderIP(), a.TargetIP(), tt)
		}

		// We write (InitARP + setters over garbage), gopacket reads.
		buf := bytes.Repeat([]byte{0x5a}, ARPLen+4)
		w := InitARP(buf, tt.op)
		if len(w) != ARPLen {
			t.Errorf("InitARP view is %d bytes", len(w))
		}
		w.SetSenderMAC(macOf(hw(tt.sha)))
		w.SetTargetMAC(macOf(hw(tt.tha)))
		w.SetSenderIP(netip.MustParseAddr(tt.spa))
		w.SetTargetIP(netip.MustParseAddr(tt.tpa))
		if _, ok := AsARP(buf); !ok {
			t.Errorf("AsARP rejects what InitARP wrote")
		}
		var ga layers.ARP
		if err := ga.DecodeFromBytes(buf, nopFeedback{}); err != nil {
			t.Fatal(err)
		}
		if ga.AddrType != layers.LinkTypeEthernet || ga.Protocol != layers.EthernetTypeIPv4 || ga.HwAddressSize != 6 || ga.ProtAddressSize != 4 ||
			ga.Operation != tt.op || net.HardwareAddr(ga.SourceHwAddress).String() != tt.sha || net.HardwareAddr(ga.DstHwAddress).String() != tt.tha ||
			!net.IP(ga.SourceProtAddress).Equal(ip4(tt.spa)) || !net.IP(ga.DstProtAddress).Equal(ip4(tt.tpa)) {
			t.Errorf("gopacket read %+v", ga)
		}
		if !bytes.Equal(buf[:ARPLen], frame[EthernetLen:EthernetLen+ARPLen]) {
			t.Errorf("setters wrote %x, gopacket %x", buf[:ARPLen], frame[EthernetLen:EthernetLen+ARPLen])
		}
	}
}

func TestAsARPRejects(t *testing.T) {
	good := make([]byte, ARPLen)
	InitARP(good, ARPRequest)
	if _, ok := AsARP(good); !ok {
		t.Fatal("AsARP rejects a good header")
	}
	for _, c := range []struct {
		name string
		off  int
		val  byte
	}{
		{"htype 6 (IEEE 802)", arpHType + 1, 6},
		{"htype high byte", arpHType, 1},
		{"ptype IPv6", arpPType, 0x86},
		{"ptype low byte", arpPType + 1, 0x06},
		{"hlen 8", arpHLen, 8},
		{"plen 16", arpPLen, 16},
	} {
		b := append([]byte(nil), good...)
		b[c.off] = c.val
		if _, ok := AsARP(b); ok {
			t.Errorf("%s: AsARP accepted %x", c.name, b)
		}
	}
}

// TestAsShort checks every AsXxx at every length below its minimum (rejected,
// nil view) and at the minimum (accepted, whole input).
func TestAsShort(t *testing.T) {
	arp := make([]byte, ARPLen)
	InitARP(arp, ARPReply)
	buf := make([]byte, 64)
	copy(buf, arp)
	views := []struct {
		name string
		min  int
		as   func([]byte) (int, bool)
	}{
		{"Ethernet", EthernetLen, func(b []byte) (int, bool) { v, ok := AsEthernet(b); return len(v), ok }},
		{"ARP", ARPLen, func(b []byte) (int, bool) { v, ok := AsARP(b); return len(v), ok }},
		{"IPv4", IPv4MinLen, func(b []byte) (int, bool) { v, ok := AsIPv4(b); return len(v), ok }},
		{"IPv6", IPv6Len, func(b []byte) (int, bool) { v, ok := AsIPv6(b); return len(v), ok }},
		{"UDP", UDPLen, func(b []byte) (int, bool) { v, ok := AsUDP(b); return len(v), ok }},
		{"TCP", TCPMinLen, func(b []byte) (int, bool) { v, ok := AsTCP(b); return len(v), ok }},
		{"ICMP", ICMPLen, func(b []byte) (int, bool) { v, ok := AsICMP(b); return len(v), ok }},
	}
	for _, v := range views {
		for n := 0; n < v.min; n++ {
			if l, ok := v.as(buf[:n]); ok || l != 0 {
				t.Errorf("As%s(%d bytes) = (%d bytes, %v), want rejection", v.name, n, l, ok)
			}
		}
		for _, n := range []int{v.min, v.min + 1, len(buf)} {
			if l, ok := v.as(buf[:n]); !ok || l != n {
				t.Errorf("As%s(%d bytes) = (%d bytes, %v), want the whole input", v.name, n, l, ok)
			}
		}
	}
}

// nopFeedback satisfies gopacket.DecodeFeedback for DecodeFromBytes.
type nopFeedback struct{}

func (nopFeedback) SetTruncated() {}
