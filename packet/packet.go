package packet

import "net/netip"

const (
	// BufSize is the size of every packet buffer: one page half, enough for a
	// 1500-byte MTU frame plus headroom, and the AF_XDP default frame size.
	BufSize = 2048
	// Headroom is the space reserved in front of a received frame so that an
	// element can prepend a header (e.g. an encapsulation) without copying.
	Headroom = 128
	// ScratchSize is the size of the per-packet scratch area elements may use
	// to pass small facts downstream (e.g. a flow index).
	ScratchSize = 32
)

// Connection-tracking states of Packet.CtState (what Classifier's "ct new",
// "ct established", "ct related" and "ct invalid" test).
const (
	CtUntracked   = 0 // not seen by Conntrack (or not IPv4)
	CtNew         = 1 // the first packet(s) of a flow: no reply seen yet
	CtEstablished = 2 // a flow that has seen packets in both directions
	CtRelated     = 3 // an ICMP error about a tracked flow
	CtInvalid     = 4 // a packet the tracker rejects (bad flags, bad transition, fragment, ...)
)

// Ct is a packet's connection-tracking annotation, written by Conntrack
// (elements/conntrack) for every packet it passes on and read by the
// elements after it: Classifier's ct primitives, DNAT, SNAT and
// FastTrackLearn. The zero value means "not tracked".
type Ct struct {
	// Table is the worker's flow table the packet was tracked in: the
	// header a conntrack.Table or Table6 begins with (CtTable).
	Table *CtTable
	// Flow is the entry's index in Table (0: no entry), Tag the entry's
	// tag when the packet was tracked (an entry reused for another flow
	// has another tag).
	Flow uint32
	Tag  uint32
	// State is one of the Ct* states.
	State uint8
	// Dir is 0 for the flow's original direction, 1 for its reply.
	Dir uint8
	// TTL is the IPv4 TTL the packet had when it was tracked (FastTrackLearn
	// learns the TTL change from it).
	TTL uint8
	// Learned is the FastTrack output (1-based) that this direction's
	// fast path had been learned for, in the current generation, when
	// the tracker saw the packet; 0: none. FastTrackLearn skips a packet
	// whose direction it already knows without reading the flow.
	Learned uint8
}

// CtTable is the header a flow table of elements/conntrack begins with
// (Table, Table6), what Ct.Table points to: a concrete pointer, one word
// to store and compare per packet and no type assertion to read (packet
// imports nothing, so it cannot name the tables themselves). conntrack
// turns it back into its table (FlowOf, FlowOf6) after checking V6.
type CtTable struct {
	// V6 is set in the header of an IPv6 table (Table6).
	V6 bool
}

// Packet is one frame and its annotations. Data is the frame itself, a slice
// of the packet's buffer starting at some headroom; annotations travel with the
// packet through the graph and are reset when it is taken from its pool.
type Packet struct {
	// Data is the frame, starting with its Ethernet header.
	Data []byte

	// InDevice is the index of the device the packet arrived on (the graph's
	// device order), InQueue the RX queue.
	InDevice uint16
	InQueue  uint16
	// L3 is the offset of the network header in Data (14 for untagged
	// Ethernet); set by the receiving driver.
	L3 uint16
	// Port is scratch for elements that classify a batch into outputs.
	Port uint16
	// NextHop is the next-hop annotation set by IPLookup and read by
	// ARPQuerier/EtherRewrite; the zero Addr means "the destination itself".
	NextHop netip.Addr
	// FlowHash is a symmetric flow hash, 0 when not computed.
	FlowHash uint32
	// Trace is non-zero on a packet being traced (forwarder trace): the
	// trace record's id. Only the accounting code (elements.Output,
	// Stats.Drop) reads it; elements leave it alone. It is cleared when
	// the packet goes back to its pool (not in Reset: drivers that take
	// packets with GetRaw skip Reset, and Get must stay inlinable).
	Trace uint32
	// Scratch is free for elements; its meaning is documented by the element
	// that writes it.
	Scratch [ScratchSize]byte

	// Ct is the connection-tracking annotation (see Ct).
	Ct Ct

	buf  []byte // the whole buffer, len == cap: BufSize (NewPoolSize: more)
	pool *Pool
	held bool // true while owned by someone outside its pool
}

// Buffer returns the packet's whole underlying buffer (headroom included).
func (p *Packet) Buffer() []byte { return p.buf }

// Headroom returns how many bytes precede Data in the buffer.
func (p *Packet) Headroom() int { return cap(p.buf) - cap(p.Data) }

// SetLen changes the frame length within the buffer, keeping its start. It
// reports false (and changes nothing) if n does not fit.
func (p *Packet) SetLen(n int) bool {
	if n < 0 || n > cap(p.Data) {
		return false
	}
	p.Data = p.Data[:n]
	return true
}

// Reset places an empty frame at the standard headroom and clears the
// annotations.
func (p *Packet) Reset() {
	p.Data = p.buf[Headroom:Headroom]
	p.InDevice, p.InQueue, p.L3, p.Port = 0, 0, 14, 0
	p.NextHop, p.FlowHash, p.Ct = netip.Addr{}, 0, Ct{}
	p.Scratch = [ScratchSize]byte{}
}

// SetFrame copies frame into the packet at the standard headroom. It reports
// false if the frame does not fit.
func (p *Packet) SetFrame(frame []byte) bool {
	if len(frame) > len(p.buf)-Headroom {
		return false
	}
	p.Data = p.buf[Headroom : Headroom+len(frame)]
	copy(p.Data, frame)
	return true
}

// Free returns the packet to its pool. Freeing a packet twice panics: it is a
// bug in the element that did it, and hiding it would corrupt a pool.
func (p *Packet) Free() {
	p.pool.put(p)
}

// Pool returns the pool the packet belongs to.
func (p *Packet) Pool() *Pool { return p.pool }

// Clone copies p (frame and annotations) into a packet from pool, or returns
// nil if the pool is empty or its buffers are too small for p's frame at
// p's headroom (a reassembled datagram into a pool of frames).
func (p *Packet) Clone(pool *Pool) *Packet {
	q := pool.Get()
	if q == nil {
		return nil
	}
	if !p.CopyTo(q) {
		q.Free()
		return nil
	}
	return q
}

// CopyTo copies p's frame, at the same headroom, and its annotations into
// q, a packet the caller holds (one lent by another worker's pool); false,
// with q unchanged, if q's buffer is too small.
func (p *Packet) CopyTo(q *Packet) bool {
	h := p.Headroom()
	if h+len(p.Data) > len(q.buf) {
		return false
	}
	q.Data = q.buf[h : h+len(p.Data)]
	copy(q.Data, p.Data)
	q.InDevice, q.InQueue, q.L3, q.Port = p.InDevice, p.InQueue, p.L3, p.Port
	q.NextHop, q.FlowHash, q.Scratch = p.NextHop, p.FlowHash, p.Scratch
	q.Ct = p.Ct
	return true
}
