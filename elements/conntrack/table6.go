package conntrack

import (
	"encoding/binary"
	"math/bits"
	"math/rand/v2"
	"unsafe"

	"github.com/junction-dataplane/junction/packet"
)

// IPv6 flows live in a table of their own, beside the IPv4 one: an IPv4
// entry is 128 bytes (two cache lines) because its addresses are 4 bytes,
// and widening it for IPv6 would cost every IPv4 flow a third line. The
// IPv6 table keeps the same rules (5-tuple keys for both directions, the
// same TCP state machine and timeouts, unassured-first eviction, lazy and
// swept expiry) with less machinery: no NAT, no FastTrack flow cache. Its
// flows are annotated with the Table6's header in packet.Ct.Table (V6
// set), so Classifier's ct rules see their state and NAT and FastTrack
// (which look for a Table: FlowOf) leave them alone.

// Tuple6 identifies one direction of an IPv6 flow.
type Tuple6 struct {
	Src, Dst     [16]byte
	Sport, Dport uint16
	Proto        uint8
}

// Inverse is the tuple of the same flow seen from the other end.
func (t Tuple6) Inverse() Tuple6 {
	return Tuple6{Src: t.Dst, Dst: t.Src, Sport: t.Dport, Dport: t.Sport, Proto: t.Proto}
}

// Conn6 is one tracked IPv6 flow.
type Conn6 struct {
	T       [2]Tuple6
	next    [2]uint32
	Expires int64
	Packets [2]uint32
	Bytes   [2]uint64
	State   uint8
	Flags   uint8
	Tag     uint32
	prev    uint32
	nxt     uint32
	// Fast is each direction's fast path, learned by FastTrackLearn and
	// applied by FastTrack, as Conn.Fast (Offload: FastTrack's record of
	// handing a TCP or UDP direction to the in-kernel fast path).
	Fast [2]Fast
}

// Table6 is one worker's IPv6 flow table.
type Table6 struct {
	// hdr is what packets tracked here point to (packet.Ct.Table), V6
	// set: the first field, so that FlowOf6 turns it back into the table.
	hdr      packet.CtTable
	conns    []Conn6
	buckets  []uint32
	mask     uint32
	seed     uint64
	free     uint32
	lists    [2]list
	live     int
	timeouts Timeouts
	tag      uint32
	gc       uint32
	learned  bool // some direction has a fast path (MarkLearned)

	Created, Evicted, Expired, relatedN uint64
}

// NewTable6 returns an IPv6 table for capacity flows.
func NewTable6(capacity int, to Timeouts) *Table6 {
	capacity = max(capacity, 1)
	nb := 1 << bits.Len(uint(2*capacity-1))
	t := &Table6{hdr: packet.CtTable{V6: true}, conns: make([]Conn6, capacity+1), buckets: make([]uint32, nb), mask: uint32(nb - 1),
		seed: rand.Uint64() | 1, timeouts: to}
	for i := capacity; i >= 1; i-- {
		t.conns[i].nxt = t.free
		t.free = uint32(i)
	}
	return t
}

// CtTable is what packets tracked in the table point to
// (packet.Ct.Table).
func (t *Table6) CtTable() *packet.CtTable { return &t.hdr }

// Live returns the number of flows.
func (t *Table6) Live() int { return t.live }

// Conn returns entry idx (for tests and the annotation's readers).
func (t *Table6) Conn(idx uint32) *Conn6 { return &t.conns[idx] }

func (t *Table6) hash(k *Tuple6) uint32 {
	a0 := binary.LittleEndian.Uint64(k.Src[0:])
	a1 := binary.LittleEndian.Uint64(k.Src[8:])
	b0 := binary.LittleEndian.Uint64(k.Dst[0:])
	b1 := binary.LittleEndian.Uint64(k.Dst[8:])
	p := uint64(k.Sport)<<24 | uint64(k.Dport)<<8 | uint64(k.Proto)
	h := t.seed
	for _, w := range [5]uint64{a0, a1, b0, b1, p} {
		h = (h ^ w) * 0x9e3779b97f4a7c15
		h ^= h >> 29
	}
	return uint32(h>>32) & t.mask
}

// eq6 compares two tuples field by field: 16-byte arrays compare as two
// words inline, where == on the padded struct calls memequal.
func eq6(a, b *Tuple6) bool {
	return a.Src == b.Src && a.Dst == b.Dst && a.Sport == b.Sport && a.Dport == b.Dport && a.Proto == b.Proto
}

// find returns the flow and direction of k; an expired flow is removed
// and not found.
func (t *Table6) find(k *Tuple6, now int64) (uint32, uint8, bool) {
	for n := t.buckets[t.hash(k)]; n != 0; {
		idx, dir := n>>1, uint8(n&1)
		c := &t.conns[idx]
		if eq6(&c.T[dir], k) {
			if c.Expires <= now {
				t.delete(idx)
				t.Expired++
				return 0, 0, false
			}
			return idx, dir, true
		}
		n = c.next[dir]
	}
	return 0, 0, false
}

func (t *Table6) listRemove(l *list, idx uint32) {
	c := &t.conns[idx]
	if c.prev != 0 {
		t.conns[c.prev].nxt = c.nxt
	} else {
		l.head = c.nxt
	}
	if c.nxt != 0 {
		t.conns[c.nxt].prev = c.prev
	} else {
		l.tail = c.prev
	}
	c.prev, c.nxt = 0, 0
}

func (t *Table6) listPush(l *list, idx uint32) {
	c := &t.conns[idx]
	c.prev, c.nxt = l.tail, 0
	if l.tail != 0 {
		t.conns[l.tail].nxt = idx
	} else {
		l.head = idx
	}
	l.tail = idx
}

// list6Of is the eviction list flow c is on, as listOf: 0 (evictable)
// unless it is assured and not a closing TCP connection.
func list6Of(c *Conn6) int {
	if c.Flags&FlagAssured != 0 && !closingTCP(c.T[0].Proto, c.State) {
		return 1
	}
	return 0
}

// setState sets flow idx's TCP state and moves it to the list the new
// state puts it on, as Table.setTCPState: an assured connection that
// starts closing joins the tail of the evictable list.
func (t *Table6) setState(idx uint32, s uint8) {
	c := &t.conns[idx]
	was := list6Of(c)
	c.State = s
	if l := list6Of(c); l != was {
		t.listRemove(&t.lists[was], idx)
		t.listPush(&t.lists[l], idx)
	}
}

// create makes a flow for k (reply tuple its inverse): from the free list,
// else by evicting the oldest evictable flow (unassured, or a closing TCP
// connection, as the IPv4 table), else an expired assured one.
func (t *Table6) create(k *Tuple6, now int64) (uint32, bool) {
	if t.free == 0 {
		switch {
		case t.lists[0].head != 0:
			if h := t.lists[0].head; t.conns[h].Expires <= now {
				t.Expired++
			} else {
				t.Evicted++
			}
			t.delete(t.lists[0].head)
		case t.lists[1].head != 0 && t.conns[t.lists[1].head].Expires <= now:
			t.delete(t.lists[1].head)
			t.Expired++
		default:
			return 0, false
		}
	}
	idx := t.free
	c := &t.conns[idx]
	t.free = c.nxt
	t.tag++
	*c = Conn6{T: [2]Tuple6{*k, k.Inverse()}, Tag: t.tag, Flags: flagLive}
	for dir := 0; dir < 2; dir++ {
		b := t.hash(&c.T[dir])
		c.next[dir] = t.buckets[b]
		t.buckets[b] = idx<<1 | uint32(dir)
	}
	t.listPush(&t.lists[0], idx)
	t.live++
	t.Created++
	return idx, true
}

func (t *Table6) delete(idx uint32) {
	c := &t.conns[idx]
	for dir := 0; dir < 2; dir++ {
		node := idx<<1 | uint32(dir)
		p := &t.buckets[t.hash(&c.T[dir])]
		for *p != 0 {
			if *p == node {
				*p = c.next[dir]
				break
			}
			p = &t.conns[*p>>1].next[*p&1]
		}
	}
	t.listRemove(&t.lists[list6Of(c)], idx)
	*c = Conn6{nxt: t.free}
	t.free = idx
	t.live--
}

func (t *Table6) setAssured(idx uint32) {
	c := &t.conns[idx]
	c.Flags |= FlagAssured
	if list6Of(c) == 1 {
		t.listRemove(&t.lists[0], idx)
		t.listPush(&t.lists[1], idx)
	}
}

// Collect removes expired flows among the next 64 entries.
func (t *Table6) Collect(now int64) {
	n := uint32(len(t.conns) - 1)
	for i := 0; i < 64 && n > 0; i++ {
		t.gc = t.gc%n + 1
		c := &t.conns[t.gc]
		if c.Flags&flagLive != 0 && c.Expires <= now {
			t.delete(t.gc)
			t.Expired++
		}
	}
}

func (t *Table6) timeout(c *Conn6) int64 {
	switch c.T[0].Proto {
	case packet.ProtoTCP:
		return t.timeouts.TCP[c.State%tcpStates]
	case packet.ProtoUDP:
		if c.Flags&FlagSeenReply != 0 {
			return t.timeouts.UDPStream
		}
		return t.timeouts.UDP
	case protoICMPv6:
		return t.timeouts.ICMP
	}
	return t.timeouts.Generic
}

const protoICMPv6 = 58

// ICMPv6 types the tracker knows (RFC 4443, RFC 4861).
const (
	icmp6EchoRequest = 128
	icmp6EchoReply   = 129
)

// parse6 reads the tuple of IPv6 packet h. ICMPv6 errors return
// resICMPError with l4 the ICMPv6 message; neighbour discovery and other
// informational ICMPv6 (no flow) return resUntracked.
func parse6(h []byte) (k Tuple6, l4 []byte, res int) {
	if len(h) < packet.IPv6Len || h[0]>>4 != 6 || packet.IPv6Len+int(binary.BigEndian.Uint16(h[4:])) > len(h) {
		return k, nil, resMalformed
	}
	up := packet.IPv6Upper(h)
	if !up.OK {
		return k, nil, resMalformed // a chain that never ends, or is cut short
	}
	if up.Frag && (up.FragOff != 0 || up.FragMore) {
		// Not reassembled here (an IP6Reassembler before Conntrack does).
		// An atomic fragment (offset 0, M clear) is a whole datagram
		// (RFC 6946), tracked as one.
		return k, nil, resFragment
	}
	copy(k.Src[:], h[8:24])
	copy(k.Dst[:], h[24:40])
	k.Proto = up.Proto
	l4 = h[up.Off:up.End]
	switch k.Proto {
	case packet.ProtoTCP:
		if len(l4) < packet.TCPMinLen {
			return k, nil, resMalformed
		}
		k.Sport, k.Dport = binary.BigEndian.Uint16(l4), binary.BigEndian.Uint16(l4[2:])
	case packet.ProtoUDP:
		if len(l4) < packet.UDPLen {
			return k, nil, resMalformed
		}
		k.Sport, k.Dport = binary.BigEndian.Uint16(l4), binary.BigEndian.Uint16(l4[2:])
	case protoICMPv6:
		if len(l4) < 8 {
			return k, nil, resMalformed
		}
		switch t := l4[0]; {
		case t == icmp6EchoRequest || t == icmp6EchoReply:
			id := binary.BigEndian.Uint16(l4[4:])
			k.Sport, k.Dport = id, id
		case t >= 1 && t <= 4:
			return k, l4, resICMPError
		case t >= 130 && t <= 137:
			return k, nil, resUntracked // MLD and neighbour discovery: link-local, no flow
		default:
			return k, nil, resICMP
		}
	}
	return k, l4, resOK
}

// Track tracks one IPv6 packet (network header at p.L3) and annotates it;
// it returns one of the tracker's results.
func (t *Table6) Track(p *packet.Packet, now int64) int {
	p.Ct = packet.Ct{}
	h := p.Data[p.L3:]
	k, l4, res := parse6(h)
	switch res {
	case resICMPError:
		return t.trackRelated(p, h, l4, now)
	case resOK:
	default:
		return res
	}
	seg := segNone
	if k.Proto == packet.ProtoTCP {
		var ok bool
		if seg, ok = tcpSegment(l4[13]); !ok {
			return resTCPFlags
		}
	}
	idx, dir, found := t.find(&k, now)
	if !found {
		switch {
		case k.Proto == packet.ProtoTCP && seg != segSyn && seg != segAck:
			return resTCPState
		case k.Proto == protoICMPv6 && l4[0] != icmp6EchoRequest:
			return resICMP
		}
		var ok bool
		if idx, ok = t.create(&k, now); !ok {
			return resFull
		}
	}
	c := &t.conns[idx]
	if k.Proto == packet.ProtoTCP {
		switch ns := tcpNext(c.State, dir, seg); ns {
		case tcpIV:
			if !found {
				t.delete(idx)
				t.Created--
			}
			return resTCPState
		case tcpIG:
		default:
			t.setState(idx, ns)
		}
	}
	if dir == 1 {
		c.Flags |= FlagSeenReply
	}
	if c.Flags&(FlagAssured|FlagSeenReply) == FlagSeenReply && (k.Proto != packet.ProtoTCP || c.State == TCPEstablished) {
		t.setAssured(idx)
	}
	c.Packets[dir]++
	c.Bytes[dir] += uint64(len(h))
	c.Expires = now + t.timeout(c)
	state := uint8(packet.CtNew)
	if c.Flags&FlagSeenReply != 0 {
		state = packet.CtEstablished
	}
	p.Ct = packet.Ct{Table: &t.hdr, Flow: idx, Tag: c.Tag, State: state, Dir: dir, TTL: h[7]}
	return resOK
}

// trackRelated finds the flow an ICMPv6 error is about (its quote is a
// packet that went the other way). The error must verify and quote an IPv6
// header and the first 8 bytes of the transport header.
func (t *Table6) trackRelated(p *packet.Packet, h, icmp []byte, now int64) int {
	var src, dst [16]byte
	copy(src[:], h[8:24])
	copy(dst[:], h[24:40])
	if ^packet.Fold(packet.Sum(icmp, packet.PseudoHeaderSumV6(src, dst, protoICMPv6, len(icmp)))) != 0 {
		return resICMP
	}
	in := icmp[8:]
	if len(in) < packet.IPv6Len || in[0]>>4 != 6 {
		return resICMP
	}
	up := packet.IPv6Upper(in)
	if !up.OK || up.FragOff != 0 || up.Off+8 > len(in) {
		return resICMP // quoting garbage, or a non-first fragment (no ports)
	}
	var k Tuple6
	copy(k.Src[:], in[8:24])
	copy(k.Dst[:], in[24:40])
	k.Proto = up.Proto
	l4 := in[up.Off:]
	switch k.Proto {
	case packet.ProtoTCP, packet.ProtoUDP:
		k.Sport, k.Dport = binary.BigEndian.Uint16(l4), binary.BigEndian.Uint16(l4[2:])
	case protoICMPv6:
		if l4[0] != icmp6EchoRequest && l4[0] != icmp6EchoReply {
			return resICMP
		}
		id := binary.BigEndian.Uint16(l4[4:])
		k.Sport, k.Dport = id, id
	}
	k = k.Inverse()
	idx, dir, ok := t.find(&k, now)
	if !ok {
		return resICMP
	}
	c := &t.conns[idx]
	t.relatedN++
	p.Ct = packet.Ct{Table: &t.hdr, Flow: idx, Tag: c.Tag, State: packet.CtRelated, Dir: dir, TTL: h[7]}
	return resOK
}

// Table6 returns the worker's IPv6 flow table (nil until a Conntrack is
// built on the worker): FastTrack looks IPv6 flows up in it.
func (t *Table) Table6() *Table6 { return t.t6 }

// MarkLearned records that some IPv6 flow direction has a fast path
// (FastTrackLearn): until then FastTrack does not look at IPv6 packets.
func (t *Table6) MarkLearned() { t.learned = true }

// Learned reports whether MarkLearned was called.
func (t *Table6) Learned() bool { return t != nil && t.learned }

// Now is the table's clock.
func (t *Table6) Now() int64 { return nanotime() }

// TimeoutOf is the idle timeout of flow c in its current state.
func (t *Table6) TimeoutOf(c *Conn6) int64 { return t.timeout(c) }

// FlowOf6 returns the IPv6 table and entry a packet was annotated with by
// Conntrack, or nils (not an IPv6 flow, or the entry since reused).
func FlowOf6(p *packet.Packet) (*Table6, *Conn6) {
	h := p.Ct.Table
	if h == nil || !h.V6 {
		return nil, nil
	}
	t := (*Table6)(unsafe.Pointer(h)) // hdr is Table6's first field
	if p.Ct.Flow == 0 || int(p.Ct.Flow) >= len(t.conns) {
		return nil, nil
	}
	c := &t.conns[p.Ct.Flow]
	if c.Tag != p.Ct.Tag || c.Flags&flagLive == 0 {
		return nil, nil
	}
	return t, c
}

// FastLookup finds the flow of an IPv6 packet that may take FastTrack's
// path: untagged, no extension headers, TCP with ACK and no SYN, FIN or
// RST, UDP, or ICMPv6 echo, within its payload length. ok is false for
// any other packet or an unknown flow.
func (t *Table6) FastLookup(p *packet.Packet, now int64) (idx uint32, dir uint8, c *Conn6, ok bool) {
	d := p.Data
	if p.L3 != packet.EthernetLen || len(d) < packet.EthernetLen+packet.IPv6Len+8 ||
		binary.BigEndian.Uint16(d[12:]) != packet.EtherTypeIPv6 || d[14]>>4 != 6 {
		return 0, 0, nil, false
	}
	h := d[packet.EthernetLen:]
	if packet.IPv6Len+int(binary.BigEndian.Uint16(h[4:])) > len(h) {
		return 0, 0, nil, false
	}
	var k Tuple6
	k.Proto = h[6]
	l4 := h[packet.IPv6Len:]
	switch k.Proto {
	case packet.ProtoTCP:
		if len(l4) < packet.TCPMinLen {
			return 0, 0, nil, false
		}
		if fl := l4[13]; fl&(packet.TCPSyn|packet.TCPFin|packet.TCPRst) != 0 || fl&packet.TCPAck == 0 {
			return 0, 0, nil, false
		}
		k.Sport, k.Dport = binary.BigEndian.Uint16(l4), binary.BigEndian.Uint16(l4[2:])
	case packet.ProtoUDP:
		k.Sport, k.Dport = binary.BigEndian.Uint16(l4), binary.BigEndian.Uint16(l4[2:])
	case protoICMPv6:
		if l4[0] != icmp6EchoRequest && l4[0] != icmp6EchoReply {
			return 0, 0, nil, false
		}
		id := binary.BigEndian.Uint16(l4[4:])
		k.Sport, k.Dport = id, id
	default:
		return 0, 0, nil, false
	}
	copy(k.Src[:], h[8:24])
	copy(k.Dst[:], h[24:40])
	idx, dir, ok = t.find(&k, now)
	if !ok {
		return 0, 0, nil, false
	}
	return idx, dir, &t.conns[idx], true
}
