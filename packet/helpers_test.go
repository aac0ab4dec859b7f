package packet

import (
	"math/rand/v2"
	"net"
	"testing"

	"github.com/google/gopacket"
	"github.com/google/gopacket/layers"
)

// serialize builds a frame with gopacket, the independent encoder these
// tests check the views against: lengths and checksums are filled in by
// gopacket, never by the code under test.
func serialize(t testing.TB, ls ...gopacket.SerializableLayer) []byte {
	t.Helper()
	// A network layer, if any, feeds the TCP/UDP pseudo-header.
	var nl gopacket.NetworkLayer
	for _, l := range ls {
		if n, ok := l.(gopacket.NetworkLayer); ok {
			nl = n
		}
	}
	for _, l := range ls {
		switch l4 := l.(type) {
		case *layers.TCP:
			if err := l4.SetNetworkLayerForChecksum(nl); err != nil {
				t.Fatal(err)
			}
		case *layers.UDP:
			if err := l4.SetNetworkLayerForChecksum(nl); err != nil {
				t.Fatal(err)
			}
		}
	}
	buf := gopacket.NewSerializeBuffer()
	if err := gopacket.SerializeLayers(buf, gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true}, ls...); err != nil {
		t.Fatal(err)
	}
	return append([]byte(nil), buf.Bytes()...)
}

func ip4(s string) net.IP { return net.ParseIP(s).To4() }
func ip6(s string) net.IP { return net.ParseIP(s).To16() }

func hw(s string) net.HardwareAddr {
	m, err := net.ParseMAC(s)
	if err != nil {
		panic(err)
	}
	return m
}

func macOf(h net.HardwareAddr) (m MAC) { copy(m[:], h); return }

// naiveSum is the textbook RFC 1071 sum, two bytes at a time with an
// end-around carry after every addition: a reference independent of Sum's
// eight-bytes-at-a-time loop.
func naiveSum(b []byte) uint16 {
	var s uint32
	for i := 0; i < len(b); i += 2 {
		w := uint32(b[i]) << 8
		if i+1 < len(b) {
			w |= uint32(b[i+1])
		}
		s += w
		if s > 0xffff {
			s = s&0xffff + 1
		}
	}
	return uint16(s)
}

// randIPv4Header returns a random 20-byte IPv4 header with version 4, IHL 5
// and a correct checksum.
func randIPv4Header(r *rand.Rand) IPv4 {
	h := make(IPv4, IPv4MinLen)
	for i := range h {
		h[i] = byte(r.Uint32())
	}
	h.SetVersionIHL(IPv4MinLen)
	h.SetChecksum(0)
	h.SetChecksum(h.ComputeChecksum())
	return h
}
