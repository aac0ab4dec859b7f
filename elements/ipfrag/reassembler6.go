package ipfrag

import (
	"encoding/binary"
	"time"

	"github.com/junction-dataplane/junction/elements"
	"github.com/junction-dataplane/junction/packet"
)

func init() {
	elements.Register(elements.Type{
		Name:      "IP6Reassembler",
		NewConfig: func() any { return &ReassemblerConfig{Capacity: 64, Timeout: 60 * time.Second, MaxFragments: 64} },
		New:       newReassembler6,
		In:        1, Out: 1,
		TakesState: true, // a reload carries the datagrams in reassembly over (reload.go)
		Doc:        iP6ReassemblerManual,
	})
}

func newReassembler6(cfg any, ctx *elements.Context) (elements.Element, error) {
	el, err := newReassembler(cfg, ctx)
	if err != nil {
		return nil, err
	}
	e := el.(*Reassembler)
	e.v6 = true
	e.atomic = ctx.Stats.Counter("atomic fragments")
	return e, nil
}

// fragment6 takes IPv6 fragment p in (isFragment6 found its fragment
// header); it returns the finished datagram and its number of fragments
// when p completed one, or p itself (0 fragments) and its flow's hash
// when p is an atomic fragment.
func (e *Reassembler) fragment6(p *packet.Packet, now int64) (*packet.Packet, int, uint32) {
	l3 := int(p.L3)
	h := p.Data[l3:]
	tl := packet.IPv6Len + int(binary.BigEndian.Uint16(h[4:]))
	if tl > len(h) {
		e.drop(p, rMalformed)
		return nil, 0, 0
	}
	h = h[:tl]
	fo, nhOff := fragHeader6(h)
	if fo == 0 {
		e.drop(p, rMalformed) // the fragment header is past the payload length
		return nil, 0, 0
	}
	fw := binary.BigEndian.Uint16(h[fo+2:])
	off, last := int(fw&^7), fw&1 == 0
	if off == 0 && last {
		// RFC 6946: an atomic fragment is a whole datagram.
		e.nAtomic++
		return p, 0, hash6Atomic(h, fo)
	}
	n := tl - fo - 8
	if n <= 0 || !last && n%8 != 0 || l3 > maxL3 || fo > maxNet {
		e.drop(p, rMalformed)
		return nil, 0, 0
	}
	end := off + n
	if fo-packet.IPv6Len+end > 65535 {
		e.drop(p, rOversized)
		return nil, 0, 0
	}
	if off == 0 {
		// RFC 7112: the first fragment holds the header chain through
		// the upper-layer header (IPv6Upper walks past the fragment
		// header).
		up := packet.IPv6Upper(h)
		if !up.OK && up.Proto != packet.IPv6NoNext || up.OK && up.End-up.Off < upperMin(up.Proto) {
			e.drop(p, rTiny)
			return nil, 0, 0
		}
	}
	be := binary.BigEndian
	k := key{src0: be.Uint64(h[8:]), src1: be.Uint64(h[16:]), dst0: be.Uint64(h[24:]), dst1: be.Uint64(h[32:]),
		id: be.Uint32(h[fo+4:]), v6: true}
	i := e.take(p, &k, off, end, last, now)
	if i < 0 {
		return nil, 0, 0
	}
	s := &e.t.slots[i]
	buf := s.pkt.Buffer()
	copy(buf[payloadAt+off:], h[fo+8:])
	s.maxLen = max(s.maxLen, tl)
	if off == 0 {
		s.start, s.l3, s.ihl = payloadAt-fo-l3, l3, fo
		s.nhOff, s.nh = nhOff, h[fo]
		copy(buf[s.start:], p.Data[:l3+fo])
		s.pkt.InDevice, s.pkt.InQueue = p.InDevice, p.InQueue
	}
	p.Free() // its bytes are in the datagram; counted when the datagram is
	if s.ihl == 0 || s.total < 0 || s.got != s.total {
		return nil, 0, 0
	}
	if s.ihl-packet.IPv6Len+s.total > 65535 {
		e.discard(i, rOversized)
		return nil, 0, 0
	}
	d, nf := e.done(i, s.finish6())
	return d, nf, 0
}
