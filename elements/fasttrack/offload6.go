package fasttrack

import (
	"net/netip"

	"github.com/junction-dataplane/junction/drivers"
	"github.com/junction-dataplane/junction/elements/conntrack"
	"github.com/junction-dataplane/junction/packet"
)

// IPv6 offload: the directions of IPv6 flows that take FastTrack's path
// (fast6.go) go to the devices' in-kernel fast path as IPv4's do
// (offload.go), with the IPv6 table's flows: TCP and UDP only (the
// kernel leaves ICMPv6 to the graph), no translation (the rewrite is the
// hop-limit decrement and the Ethernet header), the output's MTU added by
// the driver. The IPv6 table keeps no input device per direction, so the
// packet that queued the direction gives it.

// queue6 records that direction dir of IPv6 flow idx, which p took on
// FastTrack's path, may go to the kernel (Tick installs it). ICMPv6 is
// refused at once: the kernel never forwards it.
func (o *offload) queue6(idx uint32, c *conntrack.Conn6, dir uint8, p *packet.Packet) {
	f := &c.Fast[dir]
	if c.T[dir].Proto != packet.ProtoTCP && c.T[dir].Proto != packet.ProtoUDP {
		f.Offload = offRefused
		o.other.Add(1)
		return
	}
	if o.v6.byKey == nil {
		o.v6.byKey = map[offKey]int{}
	}
	f.Offload = offPending
	o.v6.pending = append(o.v6.pending, offloaded{idx: idx, tag: c.Tag, dir: dir, in: uint8(p.InDevice)})
}

// live6 is live for an IPv6 direction: same flow, path learned in this
// generation, TCP established (or UDP), not expired.
func live6(t6 *conntrack.Table6, x *offloaded, gen uint32, now int64) bool {
	c := t6.Conn(x.idx)
	f := &c.Fast[x.dir]
	return c.Tag == x.tag && f.Valid && f.Gen == gen && (c.T[0].Proto != packet.ProtoTCP || c.State == conntrack.TCPEstablished) &&
		now < c.Expires
}

// flowFor6 is the kernel's description of x: its tuple as it arrives,
// unchanged on the way out.
func (o *offload) flowFor6(c *conntrack.Conn6, x *offloaded) (drivers.FastFlow, bool) {
	f := &c.Fast[x.dir]
	in := o.ins[x.in]
	if in == nil || f.Out == 0 || int(f.Out) > len(o.outs) || o.outs[f.Out-1] == nil {
		return drivers.FastFlow{}, false
	}
	k := &c.T[x.dir]
	src, dst := netip.AddrFrom16(k.Src), netip.AddrFrom16(k.Dst)
	return drivers.FastFlow{In: in, Proto: k.Proto, Src: src, Dst: dst, Sport: k.Sport, Dport: k.Dport,
		Out: o.outs[f.Out-1], NewSrc: src, NewDst: dst, NewSport: k.Sport, NewDport: k.Dport,
		TTLDec: f.TTLDec, EthDst: packet.MAC(f.Eth[0:6]), EthSrc: packet.MAC(f.Eth[6:12])}, true
}

// tick6 is tick's IPv6 part: installs, then its share of visits.
func (e *FastTrack) tick6(now int64, gen uint32) {
	o, t6 := e.off, e.t.Table6()
	if t6 == nil {
		return
	}
	v := &o.v6
	n := 0
	for ; n < len(v.pending) && n < installsPerTick; n++ {
		e.install6(t6, &v.pending[n], gen)
	}
	v.installed(n)
	e.fold6(t6, t6.Now(), v.visits(now, o.lastTick), gen)
}

func (e *FastTrack) install6(t6 *conntrack.Table6, x *offloaded, gen uint32) {
	o := e.off
	c := t6.Conn(x.idx)
	if c.Tag != x.tag {
		return
	}
	f := &c.Fast[x.dir]
	if !live6(t6, x, gen, t6.Now()) {
		f.Offload = offNone
		return
	}
	fl, ok := o.flowFor6(c, x)
	if !ok {
		f.Offload = offRefused
		o.other.Add(1)
		return
	}
	fl.Gen = gen
	if i, ok := o.v6.byKey[keyOf(&fl)]; ok {
		e.remove6(t6, i)
	}
	o.set(&o.v6, x, f, fl)
}

func (e *FastTrack) fold6(t6 *conntrack.Table6, now int64, visits int, gen uint32) {
	v := &e.off.v6
	var hits, bytes uint64
	deletes := 0
	for i := 0; i < visits && len(v.done) > 0; i++ {
		if v.cur >= len(v.done) {
			v.cur = 0
		}
		x := &v.done[v.cur]
		dp, db := e.collect6(t6, x, now)
		hits += dp
		bytes += db
		if live6(t6, x, gen, now) || deletes >= deletesPerTick {
			v.cur++
			continue
		}
		e.remove6(t6, v.cur)
		deletes++
	}
	e.count(hits, bytes)
}

// collect6 folds what the kernel forwarded for x since the last visit
// into its flow (packets, bytes as IPv6 datagram lengths, timeout).
func (e *FastTrack) collect6(t6 *conntrack.Table6, x *offloaded, now int64) (uint64, uint64) {
	dp, db := e.off.kernelCounts(x)
	if c := t6.Conn(x.idx); dp != 0 && c.Tag == x.tag {
		c.Packets[x.dir] += uint32(dp)
		c.Bytes[x.dir] += db
		if e.idle > 0 {
			c.Expires = now + e.idle
		} else {
			c.Expires = now + t6.TimeoutOf(c)
		}
	}
	return dp, db
}

func (e *FastTrack) remove6(t6 *conntrack.Table6, i int) {
	o := e.off
	x := &o.v6.done[i]
	var f *conntrack.Fast
	if c := t6.Conn(x.idx); c.Tag == x.tag {
		f = &c.Fast[x.dir]
	}
	o.unset(&o.v6, i, f)
}

// removeAll6 folds the last counts and takes every IPv6 direction out.
func (e *FastTrack) removeAll6() {
	t6 := e.t.Table6()
	if t6 == nil {
		return
	}
	v := &e.off.v6
	now := t6.Now()
	var hits, bytes uint64
	for len(v.done) > 0 {
		dp, db := e.collect6(t6, &v.done[len(v.done)-1], now)
		hits += dp
		bytes += db
		e.remove6(t6, len(v.done)-1)
	}
	v.cur = 0
	e.count(hits, bytes)
}
