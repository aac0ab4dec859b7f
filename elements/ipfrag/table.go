package ipfrag

import (
	"encoding/binary"

	"github.com/junction-dataplane/junction/packet"
)

// Layout of a datagram's buffer. The payload is written at a fixed place,
// payloadAt, whatever arrives first: a later fragment may come before the
// first one, whose headers (Ethernet, VLAN tags, IP options) decide where
// the frame starts. The first fragment's headers are then copied just in
// front of the payload, so that the finished datagram is one contiguous
// frame with no move.
const (
	maxL3  = 64 // the longest link header kept (Ethernet and a few VLAN tags)
	maxIHL = 60 // the longest IPv4 header
	// maxNet is the longest network header kept in front of the payload:
	// an IPv4 header, or an IPv6 header with the extension headers of its
	// unfragmentable part (hop-by-hop, destination options, routing).
	maxNet    = 256
	payloadAt = packet.Headroom + maxL3 + maxNet
	// bufSize holds any datagram IPv4 or IPv6 allows (at most 65,535
	// bytes of payload).
	bufSize = payloadAt + 65535
)

// key identifies a datagram: RFC 791's source, destination, protocol and
// identification (an IPv4 address in src0, dst0), or RFC 8200's source,
// destination and identification (proto 0: the Next Header of an IPv6
// datagram's fragments may differ, section 4.5). Words, not byte arrays:
// the comparison and the hash stay a few register operations.
type key struct {
	src0, src1, dst0, dst1 uint64
	id                     uint32
	proto                  uint8
	v6                     bool
}

// slot is one datagram being reassembled.
type slot struct {
	k     key
	pkt   *packet.Packet // the datagram's buffer (bufSize bytes)
	total int            // payload length, known once the last fragment came (-1: not yet)
	got   int            // payload bytes received (fragments never overlap, so got == total means complete)
	nfrag int
	// upTo: where the payload received in offset order ends; ooo: a
	// fragment came out of that order (counted when the datagram
	// completes).
	upTo int
	ooo  bool
	// The first fragment's headers: where the frame starts in the
	// buffer, its L3 offset and IP header length (IPv6: the fixed header
	// and the unfragmentable part; 0: not seen yet).
	start, l3, ihl int
	// IPv6: the offset from L3 of the Next Header byte that named the
	// fragment header, the fragment header's own Next Header (the first
	// fragment's), and the longest fragment (its IPv6 packet length).
	nhOff, maxLen int
	nh            uint8
	born          int64 // when the first fragment of any offset arrived
	// prev/next: the age list (oldest first); hnext: the hash chain.
	// -1 ends a list.
	prev, next, hnext int32
}

// table holds one worker's datagrams in reassembly: at most len(slots),
// found through a chained hash index, listed by age for the timeout and for
// eviction. Fragment extents are kept per slot in one flat array (at most
// maxFrags a datagram), checked linearly: a datagram has few fragments, and
// the limit bounds the walk.
type table struct {
	slots    []slot
	extents  []uint32 // slot i's fragments: extents[i*maxFrags:], off<<16 | end
	maxFrags int
	buckets  []int32
	mask     uint32
	free     []int32
	// oldest, newest: the age list's ends.
	oldest, newest int32
	live           int
}

func newTable(capacity, maxFrags int) *table {
	nb := 1
	for nb < 2*capacity {
		nb <<= 1
	}
	t := &table{slots: make([]slot, capacity), extents: make([]uint32, capacity*maxFrags), maxFrags: maxFrags,
		buckets: make([]int32, nb), mask: uint32(nb - 1), free: make([]int32, 0, capacity), oldest: -1, newest: -1}
	for i := range t.buckets {
		t.buckets[i] = -1
	}
	for i := capacity - 1; i >= 0; i-- {
		t.free = append(t.free, int32(i))
	}
	return t
}

// bucket hashes a key: a few multiplies of the folded fields (the
// identifier varies per datagram, the addresses per host pair). Keys go
// by pointer: a copy of the 40-byte key is written in 16-byte pieces
// that 8-byte reads of it then wait for (store forwarding fails), 30 ns
// a fragment.
func (t *table) bucket(k *key) uint32 {
	x := (k.src0<<32 ^ k.dst0 ^ (k.src1^k.dst1<<1)*0x94d049bb133111eb) ^ (uint64(k.id)<<8|uint64(k.proto))*0x9e3779b97f4a7c15
	x *= 0xbf58476d1ce4e5b9
	return uint32(x>>32) & t.mask
}

// find returns the slot holding k, or -1.
func (t *table) find(k *key) int32 {
	for i := t.buckets[t.bucket(k)]; i >= 0; i = t.slots[i].hnext {
		if t.slots[i].k == *k {
			return i
		}
	}
	return -1
}

// add takes a free slot for k (the caller has made sure one is free) and
// puts it at the young end of the age list.
func (t *table) add(k *key, pkt *packet.Packet, now int64) int32 {
	i := t.free[len(t.free)-1]
	t.free = t.free[:len(t.free)-1]
	s := &t.slots[i]
	b := t.bucket(k)
	*s = slot{k: *k, pkt: pkt, total: -1, born: now, prev: t.newest, next: -1, hnext: t.buckets[b]}
	t.buckets[b] = i
	if t.newest >= 0 {
		t.slots[t.newest].next = i
	} else {
		t.oldest = i
	}
	t.newest = i
	t.live++
	return i
}

// remove unlinks slot i and frees it; it returns the datagram's buffer
// (for the caller to send on or free) and how many fragments it held.
func (t *table) remove(i int32) (*packet.Packet, int) {
	s := &t.slots[i]
	b := t.bucket(&s.k)
	for p := &t.buckets[b]; *p >= 0; p = &t.slots[*p].hnext {
		if *p == i {
			*p = s.hnext
			break
		}
	}
	if s.prev >= 0 {
		t.slots[s.prev].next = s.next
	} else {
		t.oldest = s.next
	}
	if s.next >= 0 {
		t.slots[s.next].prev = s.prev
	} else {
		t.newest = s.prev
	}
	pkt, n := s.pkt, s.nfrag
	*s = slot{}
	t.free = append(t.free, i)
	t.live--
	return pkt, n
}

// Results of placing a fragment.
const (
	placed    = iota // kept; the datagram is not complete
	complete         // kept; the datagram is complete
	duplicate        // the same extent again: this fragment is dropped, the datagram kept
	overlap          // overlaps another fragment, or contradicts the datagram's end
	tooMany          // the datagram would have more than maxFrags fragments
)

// place checks fragment [off, end) of slot i (last: MF clear) against the
// fragments already there and records it. It copies nothing.
func (t *table) place(i int32, off, end int, last bool) int {
	s := &t.slots[i]
	ext := t.extents[int(i)*t.maxFrags:][:s.nfrag]
	for _, e := range ext {
		o, d := int(e>>16), int(e&0xffff)
		if off < d && o < end {
			if o == off && d == end {
				return duplicate
			}
			return overlap
		}
		// Every fragment must end at or before the last one's end.
		if last && d > end {
			return overlap
		}
	}
	if s.total >= 0 && (end > s.total || last) {
		return overlap // past the known end, or a second, different last fragment
	}
	if s.nfrag == t.maxFrags {
		return tooMany
	}
	t.extents[int(i)*t.maxFrags+s.nfrag] = uint32(off)<<16 | uint32(end)
	s.nfrag++
	if off != s.upTo {
		s.ooo = true
	}
	s.upTo = end
	s.got += end - off
	if last {
		s.total = end
	}
	if s.ihl != 0 && s.total >= 0 && s.got == s.total {
		return complete
	}
	return placed
}

// finish turns slot i's buffer into the datagram's frame: the first
// fragment's headers in front of the whole payload, the IPv4 total length
// set, MF and the offset cleared (DF, and the reserved bit, as the first
// fragment had them), the header checksum recomputed.
func (s *slot) finish() *packet.Packet {
	p := s.pkt
	buf := p.Buffer()
	p.Data = buf[s.start : payloadAt+s.total]
	p.L3 = uint16(s.l3)
	h := p.Data[s.l3:]
	binary.BigEndian.PutUint16(h[2:], uint16(s.ihl+s.total))
	binary.BigEndian.PutUint16(h[6:], binary.BigEndian.Uint16(h[6:])&^(packet.IPv4FlagMF|packet.IPv4FragOffset))
	binary.BigEndian.PutUint16(h[10:], 0)
	binary.BigEndian.PutUint16(h[10:], packet.Checksum(h[:s.ihl]))
	return p
}

// finish6 turns slot i's buffer into an IPv6 datagram's frame (RFC 8200
// section 4.5): the first fragment's link header and unfragmentable part
// in front of the whole fragmentable part, the fragment header gone (the
// Next Header that named it takes its Next Header), the payload length
// set. The datagram is annotated for IPFragmenter (setFrag6).
func (s *slot) finish6() *packet.Packet {
	p := s.pkt
	buf := p.Buffer()
	p.Data = buf[s.start : payloadAt+s.total]
	p.L3 = uint16(s.l3)
	h := p.Data[s.l3:]
	binary.BigEndian.PutUint16(h[4:], uint16(s.ihl-packet.IPv6Len+s.total))
	h[s.nhOff] = s.nh
	setFrag6(p, frag6{maxLen: s.maxLen, id: s.k.id, unfrag: s.ihl, nhOff: s.nhOff})
	return p
}
