package icmp_test

import (
	"testing"

	"github.com/junction-dataplane/junction/elements/elementtest"
	"github.com/junction-dataplane/junction/elements/icmp"
	"github.com/junction-dataplane/junction/packet"
)

// FuzzPing6 feeds arbitrary frames to ICMP6PingResponder (echo requests
// cut short, behind extension headers, with lying lengths): no panic, no
// leaked buffer, and every reply it builds carries a valid ICMPv6
// checksum over the pseudo-header.
func FuzzPing6(f *testing.F) {
	f.Add(echo6(f, "2001:db8::5", "2001:db8::1", 128, false))
	f.Add(echo6(f, "2001:db8::5", "2001:db8::1", 129, false))
	f.Add(echo6(f, "2001:db8::5", "2001:db8::1", 0, true))
	f.Add(echo6(f, "ff02::1", "2001:db8::1", 128, false))
	h := elementtest.New(f, "ICMP6PingResponder", &icmp.Config6{Addresses: []string{"v6"}, HopLimit: 64},
		&elementtest.Options{Devices: devs})
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) > 1900 {
			return
		}
		h.Push(0, b)
		for _, out := range h.Outs[0].Frames() {
			if len(out) < 14+40+8 {
				t.Fatalf("reply of %d bytes", len(out))
			}
			ip := out[14:]
			plen := int(ip[4])<<8 | int(ip[5])
			if 40+plen > len(ip) {
				t.Fatalf("reply payload length %d beyond the frame (%d)", plen, len(ip))
			}
			var src, dst [16]byte
			copy(src[:], ip[8:24])
			copy(dst[:], ip[24:40])
			if packet.Fold(packet.Sum(ip[40:40+plen], packet.PseudoHeaderSumV6(src, dst, 58, plen))) != 0xffff {
				t.Fatalf("reply with a bad ICMPv6 checksum: %x", out)
			}
		}
		h.Reset()
		if n := h.Pool.Outstanding(); n != 0 {
			t.Fatalf("%d buffers outstanding", n)
		}
	})
}
