package nat_test

import (
	"bytes"
	"encoding/binary"
	"math/rand/v2"
	"testing"

	"github.com/junction-dataplane/junction/elements/nat"
	"github.com/junction-dataplane/junction/packet"
)

// stepwiseEndpoint is the rewrite patched one field at a time: the IP
// header checksum for the address, then the L4 checksum for the address
// (UpdateChecksum32) and for the port (UpdateChecksum16).
func stepwiseEndpoint(h []byte, aoff, poff int, addr uint32, port uint16) {
	old := binary.BigEndian.Uint32(h[aoff:])
	l4 := h[20:]
	if old != addr {
		binary.BigEndian.PutUint32(h[aoff:], addr)
		binary.BigEndian.PutUint16(h[10:], packet.UpdateChecksum32(binary.BigEndian.Uint16(h[10:]), old, addr))
	}
	csOff := 16
	if h[9] == packet.ProtoUDP {
		csOff = 6
	}
	cs := binary.BigEndian.Uint16(l4[csOff:])
	op := binary.BigEndian.Uint16(l4[poff:])
	binary.BigEndian.PutUint16(l4[poff:], port)
	if h[9] == packet.ProtoUDP && cs == 0 {
		return
	}
	cs = packet.UpdateChecksum32(cs, old, addr)
	cs = packet.UpdateChecksum16(cs, op, port)
	if h[9] == packet.ProtoUDP && cs == 0 {
		cs = 0xffff
	}
	binary.BigEndian.PutUint16(l4[csOff:], cs)
}

// TestSetEndpointStepwise checks that SetSrc and SetDst, which fold the
// address's and the port's checksum differences together, write exactly
// the bytes of patching them one after the other, for TCP and UDP, with
// checksums, addresses and ports at the edges of one's complement
// arithmetic (0, 0xffff, unchanged fields) and random ones.
func TestSetEndpointStepwise(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	edge16 := []uint16{0, 1, 0xfffe, 0xffff, 0x8000}
	edge32 := []uint32{0, 1, 0xffffffff, 0xffff0000, 0x0000ffff, 0xfffeffff}
	pick16 := func() uint16 {
		if r.IntN(2) == 0 {
			return edge16[r.IntN(len(edge16))]
		}
		return uint16(r.Uint32())
	}
	pick32 := func() uint32 {
		if r.IntN(2) == 0 {
			return edge32[r.IntN(len(edge32))]
		}
		return r.Uint32()
	}
	for i := range 200000 {
		h := make([]byte, 20+20)
		h[0] = 0x45
		binary.BigEndian.PutUint16(h[2:], uint16(len(h)))
		h[9] = packet.ProtoUDP
		if i&1 == 0 {
			h[9] = packet.ProtoTCP
		}
		binary.BigEndian.PutUint16(h[10:], pick16())
		binary.BigEndian.PutUint32(h[12:], pick32())
		binary.BigEndian.PutUint32(h[16:], pick32())
		binary.BigEndian.PutUint16(h[20:], pick16())
		binary.BigEndian.PutUint16(h[22:], pick16())
		binary.BigEndian.PutUint16(h[26:], pick16()) // UDP checksum
		binary.BigEndian.PutUint16(h[36:], pick16()) // TCP checksum
		addr, port := pick32(), pick16()
		switch r.IntN(4) {
		case 0: // the address unchanged
			addr = binary.BigEndian.Uint32(h[12:])
		case 1: // the port unchanged
			port = binary.BigEndian.Uint16(h[20:])
		}
		dst := i&2 != 0
		want := bytes.Clone(h)
		if dst {
			stepwiseEndpoint(want, 16, 2, addr, port)
			nat.SetDst(h, addr, port)
		} else {
			stepwiseEndpoint(want, 12, 0, addr, port)
			nat.SetSrc(h, addr, port)
		}
		if !bytes.Equal(h, want) {
			t.Fatalf("proto %d dst %v to %08x:%d:\n got % x\nwant % x", h[9], dst, addr, port, h, want)
		}
	}
}
