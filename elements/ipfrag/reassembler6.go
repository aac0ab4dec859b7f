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
		Doc: elements.Doc{
			Synopsis: "IP6Reassembler([capacity], [timeout], [max_fragments])",
			Summary:  "reassembles IPv6 fragments into whole datagrams (before Conntrack) and hands each to the worker that owns its flow; IPFragmenter splits them again as their sender did",
			Ports: "input 0: Ethernet frames with the network header at the L3 annotation: any (IPv4, ARP and the rest pass " +
				"untouched), before or after CheckIP6Header; it checks the lengths of what it reassembles itself. Before the " +
				"Classifier that picks out neighbour discovery and ICMPv6 to the router, so that fragmented ICMPv6 reaches them whole.\n" +
				"output 0: everything that is not an IPv6 fragment, unchanged and in order; atomic fragments (offset 0, M clear) " +
				"unchanged; and each reassembled datagram when its last missing fragment arrives (RFC 8200 section 4.5): the first " +
				"fragment's link header and unfragmentable part (the fixed header and any hop-by-hop, destination options and routing " +
				"headers before the fragment header) in front of the whole fragmentable part, the fragment header removed (its Next " +
				"Header moved into the header that named it), the payload length set. Each datagram carries, in its scratch " +
				"annotation, its longest fragment's size and its identification: an IPFragmenter before each output device splits " +
				"it again into fragments no longer than its sender's (or sends it to packet too big when the link is narrower).",
			Keys: []elements.Key{
				{Name: "capacity", Type: "int", Default: "64", Doc: "datagrams in reassembly at once per worker (1..65536); as " +
					"IPReassembler's: one buffer of 65,983 bytes each, touched only as far as the datagram reaches; the oldest is " +
					"evicted for a new one when all are taken (\"table full\")"},
				{Name: "timeout", Type: "duration", Default: `"60s"`, Doc: "how long a datagram may wait for its missing fragments, " +
					"from its first-arriving fragment (RFC 8200 section 4.5: 60 seconds; Linux's ip6frag_time)"},
				{Name: "max_fragments", Type: "int", Default: "64", Doc: "fragments one datagram may have (2..8192); more " +
					"(a 64 KiB datagram in 8-byte fragments) drops the datagram as \"too many fragments\""},
			},
			Stats: "as IPReassembler's: \"datagrams\", \"out of order\", \"handed off\", \"handed in\", \"in reassembly\", " +
				"consumed \"reassembled\", and \"atomic fragments\" (RFC 6946: passed on as whole datagrams, never held). Drops, in " +
				"fragments: \"timeout\", \"table full\", \"overlapping fragments\" (RFC 5722: a fragment overlapping another, or past " +
				"or contradicting the datagram's end; the whole datagram is dropped, silently), \"duplicate fragment\" (the same " +
				"piece again: dropped, the datagram kept), \"too many fragments\", \"tiny first fragment\" (RFC 7112: a first " +
				"fragment that does not hold the whole header chain through the upper-layer header, 20 bytes of TCP, 8 of UDP or " +
				"ICMPv6), \"datagram over 65535 bytes\" (a payload length past 65,535, RFC 8200 section 4.5), \"malformed fragment\" " +
				"(empty, a non-last fragment whose length is not a multiple of 8, a payload length past the frame, a link header over " +
				"64 bytes or an unfragmentable part over 256), \"no buffer\", \"handoff full\", \"reload: no room\" (as IPReassembler's: " +
				"datagrams in reassembly carry over a reload).",
			Example: `"FromDevice(wan) -> IP6Reassembler -> wcls :: Classifier(arp, ip, ip6, -)", "wcls[2] -> CheckIP6Header -> ct :: Conntrack", "rt[3] -> IPFragmenter(1500) -> NDPQuerier(wan) -> ToDevice(wan)"`,
			SeeAlso: "IPReassembler, IPFragmenter, Conntrack, CheckIP6Header",
			Text: "IPv6 routers never fragment (RFC 8200 section 5): a 3,000-byte UDP datagram crosses 1,500-byte links in the " +
				"fragments its sender made, and only the first carries the ports. IP6Reassembler puts such datagrams together " +
				"before Conntrack and the firewall, as Linux's nf_defrag_ipv6 does, so that they are tracked and filtered as whole " +
				"packets, and records the size of the largest fragment; IPFragmenter, on output, splits the datagram again at " +
				"that size with the same identification (Linux's frag_max_size), so the receiver gets what the sender sent, " +
				"the hop limit and any rewrite applied. A datagram whose fragments were longer than the egress link goes to " +
				"IPFragmenter's output 1 (packet too big). Fragments are keyed by source, destination and identification; their " +
				"steering, the handoff to the flow's worker, memory and counters are IPReassembler's (`forwarder elements " +
				"IPReassembler`). Atomic fragments are passed on at once (RFC 6946: processed in isolation, never merged with " +
				"a datagram in reassembly), handed to their flow's worker like a reassembled datagram. IPv4 passes unchanged.",
		},
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
