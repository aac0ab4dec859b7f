package ipfrag

import (
	"encoding/binary"
	"testing"

	"github.com/junction-dataplane/junction/packet"
)

// FuzzReassembler: any sequence of IPv4 fragments (headers from the
// fuzzer's bytes: offsets, flags, lengths, identifiers, header lengths)
// never crashes the reassembler; after the timeout every fragment it took
// is counted once (reassembled or dropped by reason) and no buffer or
// frame is held; a datagram that comes out says its own length. The
// fragmenter then splits what came out without a crash or a leak.
func FuzzReassembler(f *testing.F) {
	d := udpFrame(inside, outside, 1, 2, 7, 3000, nil)
	var seed []byte
	for _, fr := range split(d, 1480) {
		seed = append(seed, fr[14:34]...)
	}
	f.Add(seed)
	f.Add([]byte{0x46, 0, 0, 40, 0, 1, 0x20, 0, 64, 6, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8})
	f.Fuzz(func(t *testing.T, b []byte) {
		h, e := reassembler(t, &ReassemblerConfig{Capacity: 4, Timeout: 30e9, MaxFragments: 8}, nil)
		fg := fragmenter(t, 576, true, nil)
		in := 0
		for len(b) >= packet.IPv4MinLen {
			hdr := b[:packet.IPv4MinLen]
			b = b[packet.IPv4MinLen:]
			n := int(binary.BigEndian.Uint16(hdr[2:])) % 1600
			frame := make([]byte, packet.EthernetLen+packet.IPv4MinLen+n)
			copy(frame, d[:packet.EthernetLen])
			copy(frame[packet.EthernetLen:], hdr)
			frame[packet.EthernetLen] = 0x40 | hdr[0]&0x0f
			if hdr[0]&0x80 == 0 { // else the length field as the fuzzer wrote it
				binary.BigEndian.PutUint16(frame[packet.EthernetLen+2:], uint16(packet.IPv4MinLen+n))
			}
			if isFragment(&packet.Packet{Data: frame, L3: packet.EthernetLen}) {
				in++
			}
			h.Push(0, frame)
			for _, p := range h.Outs[0].Pkts {
				if q := p.Data[p.L3:]; p.Pool() == e.pool && int(binary.BigEndian.Uint16(q[2:])) != len(q) {
					t.Fatalf("a datagram of %d bytes says %d", len(q), binary.BigEndian.Uint16(q[2:]))
				}
			}
			fg.PushBatch(0, h.Outs[0].Pkts...) // the fragmenter owns them now
			h.Outs[0].Pkts = h.Outs[0].Pkts[:0]
			fg.Reset()
		}
		e.Tick(e.now() + 31e9)
		var counted uint64
		for _, c := range h.Stats.Counters() {
			if c.Drop || c.Consumed {
				counted += c.Value
			}
		}
		if counted != uint64(in) || e.t.live != 0 {
			t.Fatalf("%d fragments in, %d counted, %d datagrams left", in, counted, e.t.live)
		}
		if e.pool.Outstanding() != 0 || h.Pool.Outstanding() != 0 || fg.Pool.Outstanding() != 0 {
			t.Fatalf("held: %d datagram buffers, %d frames, %d fragmenter inputs", e.pool.Outstanding(), h.Pool.Outstanding(), fg.Pool.Outstanding())
		}
	})
}

// FuzzReassembler6 is FuzzReassembler for IP6Reassembler: any sequence of
// IPv6 packets (fixed header and the 8 bytes after it from the fuzzer's
// bytes: next headers, fragment offsets, M flags, identifiers, payload
// lengths) never crashes it; every fragment it took is counted once
// after the timeout (atomic fragments pass on, counted as such); a
// datagram that comes out says its own length; IPFragmenter splits it
// again without a crash or a leak.
func FuzzReassembler6(f *testing.F) {
	d := udp6Frame(inside6, outside6, 1, 2, 2992)
	var seed []byte
	for _, fr := range split6(d, 1448, 9) {
		seed = append(seed, fr[14:62]...)
	}
	f.Add(seed)
	f.Add(fragment6(udp6Frame(inside6, outside6, 1, 2, 16), 0, 24, false, 1)[14:62])
	f.Fuzz(func(t *testing.T, b []byte) {
		h, e := reassembler6(t, &ReassemblerConfig{Capacity: 4, Timeout: 60e9, MaxFragments: 8}, nil)
		fg := fragmenter(t, 1280, true, nil)
		in := 0
		const rec = packet.IPv6Len + 8
		for len(b) >= rec {
			hdr := b[:rec]
			b = b[rec:]
			n := int(binary.BigEndian.Uint16(hdr[4:])) % 1600
			frame := make([]byte, packet.EthernetLen+rec+n)
			copy(frame, d[:packet.EthernetLen])
			copy(frame[packet.EthernetLen:], hdr)
			frame[packet.EthernetLen] = 0x60 | hdr[0]&0x0f
			if hdr[0]&0x80 == 0 { // else the length field as the fuzzer wrote it
				binary.BigEndian.PutUint16(frame[packet.EthernetLen+4:], uint16(8+n))
			}
			if isFragment6(&packet.Packet{Data: frame, L3: packet.EthernetLen}) {
				in++
			}
			h.Push(0, frame)
			for _, p := range h.Outs[0].Pkts {
				if q := p.Data[p.L3:]; p.Pool() == e.pool && packet.IPv6Len+int(binary.BigEndian.Uint16(q[4:])) != len(q) {
					t.Fatalf("a datagram of %d bytes says %d", len(q), packet.IPv6Len+int(binary.BigEndian.Uint16(q[4:])))
				}
			}
			fg.PushBatch(0, h.Outs[0].Pkts...)
			h.Outs[0].Pkts = h.Outs[0].Pkts[:0]
			fg.Reset()
		}
		e.Tick(e.now() + 61e9)
		counted := h.Counter("atomic fragments")
		for _, c := range h.Stats.Counters() {
			if c.Drop || c.Consumed {
				counted += c.Value
			}
		}
		if counted != uint64(in) || e.t.live != 0 {
			t.Fatalf("%d fragments in, %d counted, %d datagrams left", in, counted, e.t.live)
		}
		if e.pool.Outstanding() != 0 || h.Pool.Outstanding() != 0 || fg.Pool.Outstanding() != 0 {
			t.Fatalf("held: %d datagram buffers, %d frames, %d fragmenter inputs", e.pool.Outstanding(), h.Pool.Outstanding(), fg.Pool.Outstanding())
		}
	})
}
