package ndp

import (
	"net/netip"
	"slices"
	"sync/atomic"
	"time"

	"github.com/junction-dataplane/junction/elements"
	"github.com/junction-dataplane/junction/elements/internal/neighq"
	"github.com/junction-dataplane/junction/packet"
)

// ResponderConfig is NDPResponder's config.
type ResponderConfig struct {
	// Device supplies the MAC and the IPv6 addresses answered for.
	Device string `toml:"device"`
	// Announce is how many unsolicited advertisements of each address
	// are sent at start, a second apart (RFC 4861 7.2.6: at most 3).
	Announce int `toml:"announce"`
}

// Validate checks the keys.
func (c *ResponderConfig) Validate() error {
	if c.Device == "" {
		return elements.Errorf("device", "required: the device whose addresses are answered for")
	}
	if c.Announce < 0 || c.Announce > 3 {
		return elements.Errorf("announce", "must be 0..3 (RFC 4861 MAX_NEIGHBOR_ADVERTISEMENT), got %d", c.Announce)
	}
	return nil
}

func init() {
	elements.Register(elements.Type{
		Name:      "NDPResponder",
		NewConfig: func() any { return &ResponderConfig{Announce: 3} },
		New:       newResponder,
		In:        1,
		Out:       3,
		Optional:  []int{1, 2},
		Doc:       ndpResponderManual,
	})
}

// Responder is one worker's NDPResponder.
type Responder struct {
	out, other, learn *elements.Output
	st                *elements.Stats
	pool              *packet.Pool
	mac               packet.MAC
	ours              ourAddrs
	otherB, learnB    *packet.Batch
	outB              *packet.Batch

	announce     int // the config's announce
	announceLeft int
	nextAnnounce int64
	dadPending   bool // worker 0: the start-up DAD probes are still to send

	advertisements, announcements, defended, conflict, noBuffer *atomic.Uint64
	reasons                                                     [len(errNames)]elements.Reason
	notForUs, badSender                                         elements.Reason
}

var _ elements.TickScheduler = (*Responder)(nil)

func newResponder(cfg any, ctx *elements.Context) (elements.Element, error) {
	c := cfg.(*ResponderConfig)
	_, info, err := neighq.Device(ctx, c.Device)
	if err != nil {
		return nil, err
	}
	st := ctx.Stats
	r := &Responder{
		out: ctx.Outputs[0], other: ctx.Outputs[1], learn: ctx.Outputs[2], st: st, pool: ctx.Pool,
		mac: info.MAC, ours: newOurAddrs(info.MAC, info.Addresses),
		otherB: ctx.SideBatch(), learnB: ctx.SideBatch(), outB: ctx.SideBatch(),

		advertisements: st.Counter("advertisements"),
		announcements:  st.Counter("announcements"),
		defended:       st.Counter("dad defended"),
		conflict:       st.Counter("address conflict"),
		noBuffer:       st.Counter("no buffer"),
		notForUs:       st.Reason("not for us"),
		badSender:      st.Reason("bad sender"),
	}
	for i, n := range errNames {
		if n != "" && i != errNotND {
			r.reasons[i] = st.Reason(n)
		}
	}
	r.announce = c.Announce
	if ctx.Worker == 0 {
		r.announceLeft = c.Announce
		r.dadPending = true
	}
	return r, nil
}

var _ elements.StateTaker = (*Responder)(nil)

// TakeState implements elements.StateTaker: a reload that keeps the
// responder on the same MAC and addresses goes on where the running one
// was (DAD and the start-up announcements are not sent again: the
// addresses did not change, and every reload would otherwise put a burst
// of multicast on the link). An address added or removed, or another MAC,
// starts over: DAD and the announcements of every address.
func (r *Responder) TakeState(old elements.Element) error {
	o, ok := old.(*Responder)
	if !ok || !r.dadPending || o.mac != r.mac || !slices.Equal(o.ours.addrs, r.ours.addrs) {
		return nil
	}
	r.dadPending = o.dadPending
	r.announceLeft = min(o.announceLeft, r.announce)
	r.nextAnnounce = o.nextAnnounce
	return nil
}

// Addresses returns the IPv6 addresses answered for (tests, show).
func (r *Responder) Addresses() []netip.Addr {
	var a []netip.Addr
	for _, x := range r.ours.addrs {
		a = append(a, netip.AddrFrom16(x))
	}
	return a
}

// Push answers the solicitations for our addresses and passes the rest.
// An answer is a new packet; the solicitation itself goes on to the
// querier (output 2), which learns the sender from it.
func (r *Responder) Push(_ int, b *packet.Batch) {
	var m msg
	for _, p := range b.Pkts {
		res := parse(p.Data, int(p.L3), &m)
		if res == errNotND {
			r.otherB.Add(p)
			continue
		}
		if res != okND {
			r.st.Drop(p, r.reasons[res])
			continue
		}
		if m.typ == TypeNeighborAdvertisement {
			if r.ours.has(m.target) && m.hasLLA && m.lla != r.mac {
				r.conflict.Add(1) // someone else advertises our address
			}
			r.learnB.Add(p)
			continue
		}
		if !r.ours.has(m.target) {
			r.st.Drop(p, r.notForUs)
			continue
		}
		if !r.answer(p, &m) {
			r.st.Drop(p, r.badSender)
			continue
		}
		r.learnB.Add(p)
	}
	b.Reset()
	if r.outB.Len() > 0 {
		r.advertisements.Add(uint64(r.outB.Len()))
		r.out.Push(r.outB)
	}
	if r.otherB.Len() > 0 {
		r.other.Push(r.otherB)
	}
	if r.learnB.Len() > 0 {
		r.learn.Push(r.learnB)
	}
}

// answer builds the advertisement answering the solicitation in p, in a
// new packet added to outB. It reports false for a sender that cannot be
// answered; a pool with no packet left is counted ("no buffer").
func (r *Responder) answer(p *packet.Packet, m *msg) bool {
	f := p.Data
	ethSrc := packet.MAC(f[6:12])
	dad := m.src == [16]byte{}
	var ethDst packet.MAC
	var dst [16]byte
	flags := uint8(FlagRouter | FlagOverride)
	switch {
	case dad:
		// A defence (RFC 4862 5.4.3 via 4861 7.2.4): to all nodes.
		dst, ethDst = allNodes, multicastMAC(allNodes)
	default:
		dst, flags = m.src, flags|FlagSolicited
		ethDst = ethSrc
		if m.hasLLA {
			ethDst = m.lla
		}
		if ethDst[0]&1 != 0 || ethDst == (packet.MAC{}) || ethDst == r.mac {
			return false
		}
	}
	q := r.pool.Get()
	if q == nil {
		r.noBuffer.Add(1)
		return true
	}
	if dad {
		r.defended.Add(1)
	}
	buf := q.Data[:frameLen]
	n := build(buf, ethDst, r.mac, m.target, dst, TypeNeighborAdvertisement, flags, m.target, r.mac, true)
	q.Data, q.L3, q.InDevice = buf[:n], packet.EthernetLen, p.InDevice
	if r.outB.Full() {
		r.advertisements.Add(uint64(r.outB.Len()))
		r.out.Push(r.outB)
	}
	r.outB.Add(q)
	return true
}

// NextTick: at once while duplicate address detection is to start, then
// at the next announcement.
func (r *Responder) NextTick(now int64) int64 {
	switch {
	case r.dadPending:
		return now
	case r.announceLeft != 0:
		return r.nextAnnounce
	}
	return elements.NoWake
}

// Tick sends the start-up announcements (worker 0).
func (r *Responder) Tick(now int64) {
	if r.dadPending {
		// Duplicate address detection (RFC 4862 5.4): a solicitation
		// for each address from ::, to its solicited-node group; an
		// advertisement of one by another node is counted ("address
		// conflict"). The announcements follow a retransmission timer
		// later.
		r.dadPending = false
		for _, a := range r.ours.addrs {
			sn := solicitedNode(a)
			r.emit(multicastMAC(sn), [16]byte{}, sn, TypeNeighborSolicitation, 0, a, false)
		}
		r.nextAnnounce = now + int64(time.Second)
		r.flush()
		return
	}
	if r.announceLeft == 0 || now < r.nextAnnounce {
		return
	}
	r.announceLeft--
	r.nextAnnounce = now + int64(time.Second)
	for _, a := range r.ours.addrs {
		r.emit(multicastMAC(allNodes), a, allNodes, TypeNeighborAdvertisement, FlagRouter|FlagOverride, a, true)
	}
	r.flush()
}

// emit builds one start-up packet (counted as an announcement) into outB.
func (r *Responder) emit(ethDst packet.MAC, src, dst [16]byte, typ, flags uint8, target [16]byte, withLLA bool) {
	p := r.pool.Get()
	if p == nil {
		r.noBuffer.Add(1)
		return
	}
	f := p.Data[:frameLen]
	n := build(f, ethDst, r.mac, src, dst, typ, flags, target, r.mac, withLLA)
	p.Data, p.L3 = f[:n], packet.EthernetLen
	if r.outB.Full() {
		r.out.Push(r.outB)
	}
	r.outB.Add(p)
	r.announcements.Add(1)
}

func (r *Responder) flush() {
	if r.outB.Len() > 0 {
		r.out.Push(r.outB)
	}
}
