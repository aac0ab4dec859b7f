package packet

import (
	"bytes"
	"math/rand/v2"
	"net/netip"
	"testing"

	"github.com/google/gopacket"
	"github.com/google/gopacket/layers"
)

type ipv4Case struct {
	name       string
	tos        uint8
	id         uint16
	flags      layers.IPv4Flag
	frag       uint16 // in 8-byte units, as on the wire
	ttl        uint8
	proto      layers.IPProtocol
	src, dst   string
	options    []layers.IPv4Option
	payloadLen int
}

var ipv4Cases = []ipv4Case{
	{"udp", 0, 1, 0, 0, 64, layers.IPProtocolUDP, "10.0.0.1", "10.0.0.2", nil, 26},
	{"tcp df", 0x10, 0xbeef, layers.IPv4DontFragment, 0, 128, layers.IPProtocolTCP, "192.168.1.100", "8.8.8.8", nil, 40},
	{"icmp ttl1", 0xb8, 0xffff, 0, 0, 1, layers.IPProtocolICMPv4, "172.16.5.4", "224.0.0.1", nil, 8},
	{"first fragment", 0, 77, layers.IPv4MoreFragments, 0, 255, layers.IPProtocolUDP, "1.2.3.4", "5.6.7.8", nil, 1480},
	{"middle fragment", 0, 77, layers.IPv4MoreFragments, 185, 255, layers.IPProtocolUDP, "1.2.3.4", "5.6.7.8", nil, 1480},
	{"last fragment", 0, 77, 0, 0x1fff, 2, layers.IPProtocolUDP, "1.2.3.4", "5.6.7.8", nil, 3},
	{"zero ttl", 0xff, 0, layers.IPv4EvilBit, 0, 0, layers.IPProtocol(253), "0.0.0.0", "255.255.255.255", nil, 0},
	{"options ihl6", 0, 9, layers.IPv4DontFragment, 0, 64, layers.IPProtocolUDP, "10.1.2.3", "10.3.2.1",
		[]layers.IPv4Option{{OptionType: 148, OptionLength: 4, OptionData: []byte{0, 0}}}, 12}, // router alert
	{"options ihl15", 0, 10, 0, 0, 64, layers.IPProtocolTCP, "10.1.2.3", "10.3.2.1",
		[]layers.IPv4Option{{OptionType: 7, OptionLength: 39, OptionData: append([]byte{4}, make([]byte, 36)...)}, {OptionType: 1}}, 20}, // record route + NOP
}

func (c ipv4Case) layer() *layers.IPv4 {
	return &layers.IPv4{Version: 4, TOS: c.tos, Id: c.id, Flags: c.flags, FragOffset: c.frag, TTL: c.ttl,
		Protocol: c.proto, SrcIP: ip4(c.src), DstIP: ip4(c.dst), Options: c.options}
}

func payloadBytes(n int) []byte {
	p := make([]byte, n)
	for i := range p {
		p[i] = byte(i*13 + 7)
	}
	return p
}

func TestIPv4ReadGopacket(t *testing.T) {
	for _, c := range ipv4Cases {
		t.Run(c.name, func(t *testing.T) {
			g := c.layer()
			payload := payloadBytes(c.payloadLen)
			frame := serialize(t, &layers.Ethernet{SrcMAC: hw("00:00:00:00:00:01"), DstMAC: hw("00:00:00:00:00:02"), EthernetType: layers.EthernetTypeIPv4}, g, gopacket.Payload(payload))
			h, ok := AsIPv4(frame[EthernetLen:])
			if !ok {
				t.Fatal("AsIPv4 failed")
			}
			checks := []struct {
				name      string
				got, want any
			}{
				{"Version", h.Version(), uint8(4)},
				{"IHL", h.IHL(), int(g.IHL) * 4},
				{"TOS", h.TOS(), c.tos},
				{"TotalLen", h.TotalLen(), int(g.Length)},
				{"ID", h.ID(), c.id},
				{"FlagsFrag", h.FlagsFrag(), uint16(c.flags)<<13 | c.frag},
				{"FragOffset", h.FragOffset(), int(c.frag) * 8},
				{"MoreFragments", h.MoreFragments(), c.flags&layers.IPv4MoreFragments != 0},
				{"TTL", h.TTL(), c.ttl},
				{"Protocol", h.Protocol(), uint8(c.proto)},
				{"Checksum", h.Checksum(), g.Checksum},
				{"ComputeChecksum", h.ComputeChecksum(), g.Checksum},
				{"ChecksumValid", h.ChecksumValid(), true},
				{"Src", h.Src(), netip.MustParseAddr(c.src)},
				{"Dst", h.Dst(), netip.MustParseAddr(c.dst)},
				{"Src4", h.Src4(), netip.MustParseAddr(c.src).As4()},
				{"Dst4", h.Dst4(), netip.MustParseAddr(c.dst).As4()},
				{"SrcU32", h.SrcU32(), be32(ip4(c.src))},
				{"DstU32", h.DstU32(), be32(ip4(c.dst))},
			}
			for _, ch := range checks {
				if ch.got != ch.want {
					t.Errorf("%s = %v, want %v", ch.name, ch.got, ch.want)
				}
			}
			// Payload is exactly the bytes gopacket put after the header,
			// without the Ethernet padding a short frame gets.
			if p := h.Payload(); !bytes.Equal(p, payload) {
				t.Errorf("Payload = %d bytes, want %d", len(p), len(payload))
			}
			// The header checksum must break when any header byte does.
			for i := 0; i < h.IHL(); i++ {
				h[i] ^= 0x40
				if h.ChecksumValid() {
					t.Errorf("checksum still valid with byte %d flipped", i)
				}
				h[i] ^= 0x40
			}
		})
	}
}

func be32(b []byte) uint32 {
	return uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
}

func TestIPv4WriteGopacket(t *testing.T) {
	for _, c := range ipv4Cases {
		if c.options != nil {
			continue // the setters write the fixed header only
		}
		t.Run(c.name, func(t *testing.T) {
			payload := payloadBytes(c.payloadLen)
			b := bytes.Repeat([]byte{0xa5}, IPv4MinLen+len(payload))
			copy(b[IPv4MinLen:], payload)
			h := IPv4(b)
			h.SetVersionIHL(IPv4MinLen)
			h.SetTOS(c.tos)
			h.SetTotalLen(len(b))
			h.SetID(c.id)
			h.SetFlagsFrag(uint16(c.flags)<<13 | c.frag)
			h.SetTTL(c.ttl)
			h.SetProtocol(uint8(c.proto))
			h.SetSrc(netip.MustParseAddr(c.src))
			h.SetDst4(netip.MustParseAddr(c.dst).As4())
			h.SetChecksum(0)
			h.SetChecksum(h.ComputeChecksum())

			var g layers.IPv4
			if err := g.DecodeFromBytes(b, nopFeedback{}); err != nil {
				t.Fatal(err)
			}
			if g.Version != 4 || g.IHL != 5 || g.TOS != c.tos || int(g.Length) != len(b) || g.Id != c.id || g.Flags != c.flags ||
				g.FragOffset != c.frag || g.TTL != c.ttl || g.Protocol != c.proto || !g.SrcIP.Equal(ip4(c.src)) || !g.DstIP.Equal(ip4(c.dst)) {
				t.Errorf("gopacket decoded %+v", g)
			}
			if !bytes.Equal(g.Payload, payload) {
				t.Errorf("gopacket payload differs")
			}
			// gopacket re-encodes what it decoded and computes the checksum
			// itself: the bytes must be ours.
			g.Checksum = 0
			again := serialize(t, &g, gopacket.Payload(payload))
			if !bytes.Equal(again, b) {
				t.Errorf("gopacket re-encoding\n%x\nours\n%x", again, b)
			}

			// SetSrc4 / SetDst (the other variants) agree.
			h.SetSrc4(netip.MustParseAddr(c.dst).As4())
			h.SetDst(netip.MustParseAddr(c.src))
			if h.Src() != netip.MustParseAddr(c.dst) || h.Dst() != netip.MustParseAddr(c.src) {
				t.Errorf("SetSrc4/SetDst: got %v -> %v", h.Src(), h.Dst())
			}
		})
	}
}

// TestIPv4Payload covers the bounds of Payload against IHL and TotalLen.
func TestIPv4Payload(t *testing.T) {
	tests := []struct {
		name          string
		frameLen, ihl int
		totalLen      int
		wantOff, want int // want < 0: nil
	}{
		{"exact", 60, 20, 60, 20, 40},
		{"ethernet padding trimmed", 60, 20, 28, 20, 8},
		{"totallen past frame", 40, 20, 1500, 20, 20},
		{"totallen below ihl", 40, 20, 10, 20, 20},
		{"totallen zero", 40, 20, 0, 20, 20},
		{"options", 60, 24, 60, 24, 36},
		{"header only", 20, 20, 20, 20, 0},
		{"ihl past frame", 40, 60, 40, 0, -1},
		{"ihl past totallen", 60, 48, 40, 48, 12}, // TotalLen < IHL: not sane, the frame bounds it
		{"ihl 0", 40, 0, 40, 0, -1},
		{"ihl 16 (4 words)", 40, 16, 40, 0, -1},
	}
	for _, tt := range tests {
		b := make([]byte, tt.frameLen)
		h := IPv4(b)
		b[0] = 0x40 | byte(tt.ihl/4)
		h.SetTotalLen(tt.totalLen)
		p := h.Payload()
		switch {
		case tt.want < 0:
			if p != nil {
				t.Errorf("%s: Payload = %d bytes, want nil", tt.name, len(p))
			}
		case len(p) != tt.want:
			t.Errorf("%s: Payload = %d bytes, want %d", tt.name, len(p), tt.want)
		case tt.want > 0 && &p[0] != &b[tt.wantOff]:
			t.Errorf("%s: Payload does not start at offset %d", tt.name, tt.wantOff)
		}
	}
}

// TestIPv4ChecksumMalformed checks that the checksum helpers neither panic
// nor accept a header whose IHL is impossible.
func TestIPv4ChecksumMalformed(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for n := IPv4MinLen; n <= 64; n++ {
		for ihl := 0; ihl <= 15; ihl++ {
			b := make([]byte, n)
			for i := range b {
				b[i] = byte(r.Uint32())
			}
			h := IPv4(b)
			b[0] = 0x40 | byte(ihl)
			h.SetChecksum(h.ComputeChecksum())
			valid := h.ChecksumValid()
			if want := ihl >= 5 && ihl*4 <= n; valid != want {
				t.Errorf("len %d IHL %d: ChecksumValid = %v after SetChecksum(ComputeChecksum()), want %v", n, ihl, valid, want)
			}
		}
	}
}

func TestIPv6Gopacket(t *testing.T) {
	tests := []struct {
		tc       uint8
		flow     uint32
		next     layers.IPProtocol
		hop      uint8
		src, dst string
		payload  int
	}{
		{0, 0, layers.IPProtocolUDP, 64, "2001:db8::1", "2001:db8::2", 16},
		{0xb8, 0xfffff, layers.IPProtocolTCP, 255, "fe80::1:2:3:4", "ff02::1", 100},
		{1, 12345, layers.IPProtocolICMPv6, 1, "::", "::1", 4},
		{0, 1, layers.IPProtocolNoNextHeader, 0, "::ffff:10.0.0.1", "2001:db8:ffff:ffff:ffff:ffff:ffff:ffff", 1},
	}
	for _, tt := range tests {
		payload := payloadBytes(tt.payload)
		g := &layers.IPv6{Version: 6, TrafficClass: tt.tc, FlowLabel: tt.flow, NextHeader: tt.next, HopLimit: tt.hop, SrcIP: ip6(tt.src), DstIP: ip6(tt.dst)}
		b := serialize(t, g, gopacket.Payload(payload))
		h, ok := AsIPv6(b)
		if !ok {
			t.Fatal("AsIPv6 failed")
		}
		if h.Version() != 6 || h.PayloadLen() != tt.payload || h.NextHeader() != uint8(tt.next) || h.HopLimit() != tt.hop ||
			h.Src() != netip.MustParseAddr(tt.src) || h.Dst() != netip.MustParseAddr(tt.dst) ||
			h.Src16() != netip.MustParseAddr(tt.src).As16() || h.Dst16() != netip.MustParseAddr(tt.dst).As16() {
			t.Errorf("read v%d len %d next %d hop %d %v -> %v, want %+v", h.Version(), h.PayloadLen(), h.NextHeader(), h.HopLimit(), h.Src(), h.Dst(), tt)
		}
		if !bytes.Equal(h.Payload(), payload) {
			t.Errorf("Payload = %x, want %x", h.Payload(), payload)
		}

		// Write with our setters over garbage, read with gopacket.
		w := bytes.Repeat([]byte{0xee}, IPv6Len+len(payload))
		copy(w[IPv6Len:], payload)
		v := IPv6(w)
		v.Init()
		v.SetPayloadLen(len(payload))
		v.SetNextHeader(uint8(tt.next))
		v.SetHopLimit(tt.hop)
		v.SetSrc(netip.MustParseAddr(tt.src))
		v.SetDst(netip.MustParseAddr(tt.dst))
		var d layers.IPv6
		if err := d.DecodeFromBytes(w, nopFeedback{}); err != nil {
			t.Fatal(err)
		}
		if d.Version != 6 || d.TrafficClass != 0 || d.FlowLabel != 0 || int(d.Length) != len(payload) || d.NextHeader != tt.next ||
			d.HopLimit != tt.hop || !d.SrcIP.Equal(ip6(tt.src)) || !d.DstIP.Equal(ip6(tt.dst)) {
			t.Errorf("gopacket decoded %+v", d)
		}
	}
}

func TestIPv6Payload(t *testing.T) {
	for _, tt := range []struct{ frameLen, payLen, want int }{
		{40, 0, 0}, {40, 100, 0}, {100, 60, 60}, {100, 10, 10}, {100, 0xffff, 60},
	} {
		b := make([]byte, tt.frameLen)
		h := IPv6(b)
		h.SetPayloadLen(tt.payLen)
		if p := h.Payload(); len(p) != tt.want {
			t.Errorf("frame %d PayloadLen %d: Payload = %d bytes, want %d", tt.frameLen, tt.payLen, len(p), tt.want)
		}
	}
}

func TestParseHost4(t *testing.T) {
	for _, c := range []struct {
		in, want string // want "" for an error
	}{
		{"10.1.0.1", "10.1.0.1"}, {"10.1.0.1/24", "10.1.0.1"}, {"192.0.2.255", "192.0.2.255"},
		{"0.0.0.0", ""}, {"255.255.255.255", ""}, {"224.0.0.1", ""}, {"127.0.0.1", ""},
		{"2001:db8::1", ""}, {"10.1.0.1/33", ""}, {"ten", ""},
	} {
		got, err := ParseHost4(c.in)
		if c.want == "" {
			if err == nil {
				t.Errorf("%q: %v, want an error", c.in, got)
			}
			continue
		}
		if err != nil || got.String() != c.want {
			t.Errorf("%q: %v %v, want %s", c.in, got, err, c.want)
		}
	}
}
