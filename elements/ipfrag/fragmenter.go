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
		Doc:      ipFragmenterManual,
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
