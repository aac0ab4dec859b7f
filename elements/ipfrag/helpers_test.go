package ipfrag

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/junction-dataplane/junction/elements/elementtest"
	"github.com/junction-dataplane/junction/packet"
)

// udpFrame builds an Ethernet frame holding an IPv4 UDP datagram of n
// payload bytes (a pattern that differs at every offset), with IP options
// opts (a multiple of 4 bytes) and the identification id.
func udpFrame(src, dst uint32, sport, dport uint16, id uint16, n int, opts []byte) []byte {
	ihl := packet.IPv4MinLen + len(opts)
	f := make([]byte, packet.EthernetLen+ihl+packet.UDPLen+n)
	copy(f, []byte{2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 0x08, 0x00})
	h := f[packet.EthernetLen:]
	h[0] = 4<<4 | byte(ihl/4)
	binary.BigEndian.PutUint16(h[2:], uint16(ihl+packet.UDPLen+n))
	binary.BigEndian.PutUint16(h[4:], id)
	h[8], h[9] = 64, packet.ProtoUDP
	binary.BigEndian.PutUint32(h[12:], src)
	binary.BigEndian.PutUint32(h[16:], dst)
	copy(h[packet.IPv4MinLen:], opts)
	binary.BigEndian.PutUint16(h[10:], packet.Checksum(h[:ihl]))
	u := h[ihl:]
	binary.BigEndian.PutUint16(u, sport)
	binary.BigEndian.PutUint16(u[2:], dport)
	binary.BigEndian.PutUint16(u[4:], uint16(packet.UDPLen+n))
	for i := range n {
		u[packet.UDPLen+i] = byte(i*7 + i>>8)
	}
	sum := packet.Sum(h[12:20], uint64(packet.ProtoUDP)+uint64(packet.UDPLen+n))
	binary.BigEndian.PutUint16(u[6:], ^packet.Fold(packet.Sum(u, sum)))
	return f
}

// split cuts an Ethernet+IPv4 frame into fragments of at most size payload
// bytes (a multiple of 8), every fragment with the whole header (as a
// test needs, not as RFC 791's copy rules say: IPFragmenter's tests check
// those).
func split(f []byte, size int) [][]byte {
	h := f[packet.EthernetLen:]
	ihl := int(h[0]&0x0f) * 4
	payload := h[ihl:]
	var out [][]byte
	for off := 0; off < len(payload); off += size {
		end := min(off+size, len(payload))
		out = append(out, fragment(f, off, end, end < len(payload)))
	}
	return out
}

// fragment is the fragment of frame f holding payload bytes [off, end),
// with MF as given.
func fragment(f []byte, off, end int, mf bool) []byte {
	h := f[packet.EthernetLen:]
	ihl := int(h[0]&0x0f) * 4
	g := append([]byte(nil), f[:packet.EthernetLen+ihl]...)
	g = append(g, h[ihl+off:ihl+end]...)
	q := g[packet.EthernetLen:]
	binary.BigEndian.PutUint16(q[2:], uint16(ihl+end-off))
	ff := uint16(off / 8)
	if mf {
		ff |= packet.IPv4FlagMF
	}
	binary.BigEndian.PutUint16(q[6:], ff)
	binary.BigEndian.PutUint16(q[10:], 0)
	binary.BigEndian.PutUint16(q[10:], packet.Checksum(q[:ihl]))
	return g
}

// reassembler builds an IPReassembler harness (one worker unless o says).
func reassembler(t testing.TB, cfg *ReassemblerConfig, o *elementtest.Options) (*elementtest.Harness, *Reassembler) {
	t.Helper()
	if cfg == nil {
		cfg = &ReassemblerConfig{Capacity: 64, Timeout: 30e9, MaxFragments: 64}
	}
	if o == nil {
		o = &elementtest.Options{PoolSize: 1024}
	}
	h := elementtest.New(t, "IPReassembler", cfg, o)
	return h, h.Element.(*Reassembler)
}

// sameFrame fails unless got is want (the whole frame, headers included).
func sameFrame(t *testing.T, got, want []byte) {
	t.Helper()
	if !bytes.Equal(got, want) {
		n := 0
		for n < min(len(got), len(want)) && got[n] == want[n] {
			n++
		}
		t.Fatalf("frame differs (len %d, want %d) from byte %d", len(got), len(want), n)
	}
}

// frames returns what output port out of h recorded.
func frames(h *elementtest.Harness, out int) [][]byte { return h.Outs[out].Frames() }
