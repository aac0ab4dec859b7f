package ipfrag

import (
	"encoding/binary"
	"sync/atomic"

	"github.com/junction-dataplane/junction/elements"
	"github.com/junction-dataplane/junction/packet"
)

// FragmenterConfig is IPFragmenter's configuration.
type FragmenterConfig struct {
	MTU      int  `toml:"mtu"`
	Fragment bool `toml:"fragment"`
}

// Validate checks the MTU.
func (c *FragmenterConfig) Validate() error {
	if c.MTU < 68 || c.MTU > 65535 {
		return elements.Errorf("mtu", "must be 68..65535 (the egress link's MTU; RFC 791's minimum is 68), got %d", c.MTU)
	}
	return nil
}

func init() {
	elements.Register(elements.Type{
		Name:      "IPFragmenter",
		NewConfig: func() any { return &FragmenterConfig{Fragment: true} },
		New:       newFragmenter,
		In:        1, Out: 2,
		Optional: []int{1},
		Doc: elements.Doc{
			Synopsis: "IPFragmenter(mtu, [fragment])",
			Summary:  "splits IPv4 packets longer than the egress MTU into RFC 791 fragments, and IPv6 datagrams IP6Reassembler put together into fragments as their sender made them; DF packets and other long IPv6 ones go to output 1 (for ICMPError needfrag, ICMP6Error toobig)",
			Ports: "input 0: IP packets about to leave by a link (L3 annotation at the IP header).\n" +
				"output 0: packets whose IP length is at most mtu, unchanged, the fragments of longer IPv4 packets without DF, " +
				"and the fragments of IPv6 datagrams IP6Reassembler reassembled, in the order of the packets they replace.\n" +
				"output 1 (optional): longer packets, unchanged: IPv4 with DF set, and IPv6 (a router never fragments IPv6, RFC 8200 " +
				"section 5): one that arrived whole, or a reassembled one whose sender's fragments were longer than mtu. Connect it to ICMPError(src, unreachable, needfrag, 64, MTU) or ICMP6Error(src, toobig, 0, 64, MTU); " +
				"unconnected, they are dropped and counted as \"unconnected output 1\".",
			Keys: []elements.Key{
				{Name: "mtu", Type: "int", Required: true, Doc: "the egress link's MTU in bytes (the IP packet, without its link header), 68..65535"},
				{Name: "fragment", Type: "bool", Default: "true", Doc: "false: do not fragment, pass long IPv4 packets without DF " +
					"unchanged on output 0 (DF and IPv6 still go to output 1): the path-MTU check before a NAT, whose error must quote " +
					"the untranslated packet, when an IPFragmenter after the NAT does the fragmenting"},
			},
			Stats: "counters \"fragmented\" (packets split), \"fragments\" (fragments sent), \"too big\" (packets sent to output 1); " +
				"drops \"no buffer\" (the instance's pool could not hold a packet's fragments: the packet is dropped whole) and " +
				"\"malformed\" (an IPv4 header whose lengths do not fit the frame, or a fragment reaching past 65,535 bytes).",
			Example: `"rt[1] -> IPFragmenter(1500) -> ARPQuerier(wan) -> ToDevice(wan)", "frag[1] -> ICMPError(auto, unreachable, needfrag, 64, 1500) -> rt4e"`,
			SeeAlso: "IPReassembler, CheckMTU, ICMPError, ICMP6Error",
			Text: "Fragmentation follows RFC 791 (and RFC 1812 5.2.6): each fragment carries as much of the payload as the mtu " +
				"allows, in multiples of 8 bytes except the last; the first keeps every option, the others only those whose copied " +
				"flag is set (security, loose and strict source route), padded to a 4-byte boundary; the identification, TOS, TTL " +
				"and protocol are the packet's; the offset adds to the packet's own (a fragment fragmented again) and MF is set on " +
				"all but the last, which keeps the packet's own MF. A fragment never exceeds a packet buffer (2,048 bytes with the " +
				"link header), so with a larger mtu the fragments are smaller than it, which RFC 791 allows. Packets that fit take " +
				"one length test and one test of the buffer's size (a reassembled datagram's buffer is larger than a frame's). " +
				"IPv6 datagrams IP6Reassembler reassembled carry the size of their longest fragment: such a datagram longer than " +
				"that leaves in fragments of at most that size (RFC 8200 section 4.5: the unfragmentable part in each, then a " +
				"fragment header with the datagram's own identification; Linux's frag_max_size), or whole if it is no longer; " +
				"one whose fragments were longer than mtu goes to output 1. Fragments come from the instance's own pool and keep the packet's annotations except its flow " +
				"(a fragment is not a packet of the flow for FastTrackLearn); the packet itself is freed.",
		},
	})
}

// Fragmenter is one worker's instance.
type Fragmenter struct {
	mtu        int
	fragment   bool
	out0, out1 *elements.Output
	big        *packet.Batch // for output 1
	ob         *packet.Batch // output 0 when a batch holds a packet to split
	pool       *packet.Pool
	st         *elements.Stats
	noBuf, bad elements.Reason

	fragmented, fragments, tooBig *atomic.Uint64
	nPkts, nFrags                 uint64
	opts                          [maxIHL - packet.IPv4MinLen]byte
}

func newFragmenter(cfg any, ctx *elements.Context) (elements.Element, error) {
	c := cfg.(*FragmenterConfig)
	st := ctx.Stats
	return &Fragmenter{mtu: c.MTU, fragment: c.Fragment, out0: ctx.Outputs[0], out1: ctx.Outputs[1],
		big: ctx.SideBatch(), ob: packet.NewBatch(ctx.Batch), pool: packet.NewPool(4 * ctx.Batch), st: st,
		noBuf: st.Reason("no buffer"), bad: st.Reason("malformed"),
		fragmented: st.Counter("fragmented"), fragments: st.Counter("fragments"), tooBig: st.Counter("too big")}, nil
}

// Push sends packets that fit on as they are; the first packet that needs
// splitting switches the rest of the batch to a rebuilt output batch, so
// that the fragments keep the packets' order.
func (e *Fragmenter) Push(_ int, b *packet.Batch) {
	for i, p := range b.Pkts {
		// A reassembled datagram (possibly an IPv6 one to split at its
		// sender's size, whatever its length) is in a buffer larger than
		// any frame's: the test reads only the slice header, not the
		// annotation's cache line.
		if len(p.Data)-int(p.L3) > e.mtu || cap(p.Data) > packet.BufSize {
			e.slow(b, i)
			return
		}
	}
	e.out0.Push(b)
}

// slow handles b from its i-th packet on, the first longer than the mtu.
func (e *Fragmenter) slow(b *packet.Batch, i int) {
	ob := e.ob
	ob.Pkts = append(ob.Pkts[:0], b.Pkts[:i]...)
	for _, p := range b.Pkts[i:] {
		h := p.Data[p.L3:]
		switch {
		case p.Scratch[0] == frag6Mark && len(h) >= packet.IPv6Len && h[0]>>4 == 6:
			e.split6(p)
		case len(h) <= e.mtu:
			e.emit(p)
		case h[0]>>4 != 4 || len(h) < packet.IPv4MinLen || binary.BigEndian.Uint16(h[6:])&packet.IPv4FlagDF != 0:
			e.big.Add(p)
		case !e.fragment:
			e.emit(p)
		default:
			e.split(p)
		}
	}
	b.Reset()
	if len(ob.Pkts) > 0 {
		e.out0.Push(ob)
		ob.Reset()
	}
	if e.nPkts != 0 {
		e.fragmented.Add(e.nPkts)
		e.fragments.Add(e.nFrags)
		e.nPkts, e.nFrags = 0, 0
	}
	if len(e.big.Pkts) > 0 {
		e.tooBig.Add(uint64(len(e.big.Pkts)))
		e.out1.Push(e.big)
	}
}

// emit adds p to the output batch, pushing it on when full.
func (e *Fragmenter) emit(p *packet.Packet) {
	e.ob.Add(p)
	if e.ob.Full() {
		e.out0.Push(e.ob)
		e.ob.Reset()
	}
}

// split replaces IPv4 packet p (no DF, longer than the mtu) by its
// fragments.
func (e *Fragmenter) split(p *packet.Packet) {
	l3 := int(p.L3)
	h := p.Data[l3:]
	ihl := int(h[0]&0x0f) * 4
	tl := int(binary.BigEndian.Uint16(h[2:]))
	ff := binary.BigEndian.Uint16(h[6:])
	base := int(ff & packet.IPv4FragOffset)
	if ihl < packet.IPv4MinLen || tl < ihl || tl > len(h) || base*8+tl > 65535 {
		e.st.Drop(p, e.bad) // lengths that do not fit, or a fragment reaching past 65,535 bytes
		return
	}
	if tl <= e.mtu { // only link padding made it long
		e.emit(p)
		return
	}
	// The options the later fragments carry: those with the copied flag.
	on := copiedOptions(h[packet.IPv4MinLen:ihl], e.opts[:])
	ihl2 := packet.IPv4MinLen + (on+3)&^3
	clear(e.opts[on : (on+3)&^3])
	room := min(e.mtu, packet.BufSize-packet.Headroom-l3)
	first, rest := (room-ihl)&^7, (room-ihl2)&^7
	payload := h[ihl:tl]
	if first < 8 || rest < 8 {
		e.st.Drop(p, e.bad) // a link header too long for a packet buffer
		return
	}
	n := 1 + (len(payload)-first+rest-1)/rest
	if e.pool.Available() < n {
		e.st.Drop(p, e.noBuf)
		return
	}
	for pos := 0; pos < len(payload); {
		hl, size := ihl, first
		if pos > 0 {
			hl, size = ihl2, rest
		}
		more := pos+size < len(payload)
		if !more {
			size = len(payload) - pos
		}
		q := e.pool.Get()
		q.SetLen(l3 + hl + size)
		d := q.Data
		copy(d, p.Data[:l3])
		f := d[l3:]
		if pos == 0 {
			copy(f, h[:ihl])
		} else {
			copy(f, h[:packet.IPv4MinLen])
			copy(f[packet.IPv4MinLen:hl], e.opts[:])
			f[0] = 4<<4 | byte(hl/4)
		}
		copy(f[hl:], payload[pos:pos+size])
		binary.BigEndian.PutUint16(f[2:], uint16(hl+size))
		flags := ff&0x8000 | uint16(base+pos/8) // the reserved bit as the packet had it
		if more || ff&packet.IPv4FlagMF != 0 {
			flags |= packet.IPv4FlagMF
		}
		binary.BigEndian.PutUint16(f[6:], flags)
		binary.BigEndian.PutUint16(f[10:], 0)
		binary.BigEndian.PutUint16(f[10:], packet.Checksum(f[:hl]))
		q.InDevice, q.InQueue, q.L3, q.Port = p.InDevice, p.InQueue, p.L3, p.Port
		q.NextHop, q.FlowHash, q.Scratch = p.NextHop, p.FlowHash, p.Scratch
		e.emit(q)
		e.nFrags++
		pos += size
	}
	e.nPkts++
	p.Free()
}

// copiedOptions writes into dst the options of opts whose copied flag
// (the type's high bit) is set, and returns their length. A malformed
// option list ends the walk (what was copied stays).
func copiedOptions(opts, dst []byte) int {
	n := 0
	for i := 0; i < len(opts); {
		t := opts[i]
		switch t {
		case 0: // end of list
			return n
		case 1: // no operation: not copied
			i++
			continue
		}
		if i+1 >= len(opts) || opts[i+1] < 2 || i+int(opts[i+1]) > len(opts) {
			return n
		}
		l := int(opts[i+1])
		if t&0x80 != 0 {
			n += copy(dst[n:], opts[i:i+l])
		}
		i += l
	}
	return n
}

// split6 sends on IPv6 datagram p, which IP6Reassembler put together, as
// its sender did: whole if it is no longer than its longest fragment
// was, else in fragments of at most that size (the link's mtu and a
// packet buffer permitting) with the same identification, each carrying
// the unfragmentable part (RFC 8200 section 4.5). A datagram whose
// fragments were longer than the mtu goes to output 1 (packet too big):
// a router does not fragment IPv6 further than its sender did.
func (e *Fragmenter) split6(p *packet.Packet) {
	f, _ := getFrag6(p)
	l3 := int(p.L3)
	h := p.Data[l3:]
	tl := packet.IPv6Len + int(binary.BigEndian.Uint16(h[4:]))
	if tl > len(h) || f.unfrag < packet.IPv6Len || f.unfrag > tl || f.nhOff >= f.unfrag {
		e.st.Drop(p, e.bad)
		return
	}
	switch {
	case tl <= f.maxLen && tl <= e.mtu:
		e.emit(p)
		return
	case f.maxLen > e.mtu:
		e.big.Add(p)
		return
	}
	room := min(f.maxLen, packet.BufSize-packet.Headroom-l3)
	size := (room - f.unfrag - 8) &^ 7
	payload := h[f.unfrag:tl]
	if size < 8 {
		e.st.Drop(p, e.bad) // a link header or an unfragmentable part too long for a packet buffer
		return
	}
	n := (len(payload) + size - 1) / size
	if e.pool.Available() < n {
		e.st.Drop(p, e.noBuf)
		return
	}
	nh := h[f.nhOff]
	for pos := 0; pos < len(payload); pos += size {
		m := min(size, len(payload)-pos)
		q := e.pool.Get()
		q.SetLen(l3 + f.unfrag + 8 + m)
		d := q.Data
		copy(d, p.Data[:l3+f.unfrag])
		g := d[l3:]
		g[f.nhOff] = packet.IPv6Fragment
		binary.BigEndian.PutUint16(g[4:], uint16(f.unfrag-packet.IPv6Len+8+m))
		fh := g[f.unfrag:]
		fh[0], fh[1] = nh, 0
		w := uint16(pos)
		if pos+m < len(payload) {
			w |= 1
		}
		binary.BigEndian.PutUint16(fh[2:], w)
		binary.BigEndian.PutUint32(fh[4:], f.id)
		copy(fh[8:], payload[pos:pos+m])
		q.InDevice, q.InQueue, q.L3, q.Port = p.InDevice, p.InQueue, p.L3, p.Port
		q.NextHop, q.FlowHash = p.NextHop, p.FlowHash
		e.emit(q)
		e.nFrags++
	}
	e.nPkts++
	p.Free()
}
