package fasttrack

import (
	"github.com/junction-dataplane/junction/elements/conntrack"
	"github.com/junction-dataplane/junction/packet"
)

// IPv6 flows take a plainer fast path than IPv4's: no flow cache and no
// NAT (offload: offload6.go) (IPv6 is routed, not translated), so a hit is a
// lookup in the worker's IPv6 flow table, the hop-limit decrement the slow
// path made (IPv6 has no header checksum, and the hop limit is not in the
// transport checksum) and the Ethernet header. FastTrack looks at IPv6
// packets only among its misses, and only once FastTrackLearn has learned
// some IPv6 direction: IPv4 traffic pays one test per batch.

// misses6 moves the IPv6 packets of b that hit to the split batches of
// their outputs and returns how many, and their IP bytes.
func (e *FastTrack) misses6(b *packet.Batch) (hits, bytes uint64) {
	t6 := e.t.Table6()
	if !t6.Learned() || len(b.Pkts) == 0 {
		return 0, 0
	}
	gen := e.gen.Current()
	now := t6.Now()
	k := 0
	for _, p := range b.Pkts {
		if out, n := e.hit6(t6, p, gen, now); out > 0 {
			e.split.Add(out, p)
			hits++
			bytes += uint64(n)
			continue
		}
		b.Pkts[k] = p
		k++
	}
	b.Truncate(k)
	return hits, bytes
}

// pushSplit6 pushes the fast outputs' batches misses6 filled (on the paths
// that do not flush).
func (e *FastTrack) pushSplit6() {
	q := e.split.Queues()
	for i := 1; i < len(q); i++ {
		if len(q[i].Pkts) > 0 {
			e.outs[i].Push(q[i])
		}
	}
}

// hit6 applies the IPv6 fast path to p: its output (0: miss) and IP
// length.
func (e *FastTrack) hit6(t6 *conntrack.Table6, p *packet.Packet, gen uint32, now int64) (int, int) {
	idx, dir, c, ok := t6.FastLookup(p, now)
	if !ok {
		return 0, 0
	}
	f := &c.Fast[dir]
	h := p.Data[packet.EthernetLen:]
	proto := h[6]
	if !f.Valid || f.Gen != gen || now >= c.Expires || int(f.Out) >= len(e.outs) || h[7] <= f.TTLDec ||
		c.Packets[0]+c.Packets[1] < e.policy.After || (e.policy.Both && c.Flags&conntrack.FlagSeenReply == 0) ||
		proto == packet.ProtoTCP && c.State != conntrack.TCPEstablished ||
		proto == 58 && (h[packet.IPv6Len] == 128) != (dir == 0) {
		return 0, 0
	}
	hop := h[7]
	h[7] = hop - f.TTLDec
	copy(p.Data[:12], f.Eth[:])
	n := len(h)
	c.Packets[dir]++
	c.Bytes[dir] += uint64(n)
	if e.idle > 0 {
		c.Expires = now + e.idle
	} else {
		c.Expires = now + t6.TimeoutOf(c)
	}
	st := uint8(packet.CtEstablished)
	if c.Flags&conntrack.FlagSeenReply == 0 {
		st = packet.CtNew
	}
	p.Ct = packet.Ct{Table: t6.CtTable(), Flow: idx, Tag: c.Tag, State: st, Dir: dir, TTL: hop}
	if e.off != nil && f.Offload == offNone {
		e.off.queue6(idx, c, dir, p)
	}
	return int(f.Out), n
}

// learn6 is FastTrackLearn for a packet of an IPv6 flow: it records the
// direction's Ethernet header, output and hop-limit decrement if the
// packet leaves as FastTrack would make it (addresses and ports those of
// its arrival, a hop limit no higher). It reports whether it learned, and
// whether the packet was not learnable.
func learn6(p *packet.Packet, out uint8, gen uint32) (learned, bad bool) {
	t6, c := conntrack.FlowOf6(p)
	if c == nil || p.Ct.State == packet.CtRelated || p.Ct.State == packet.CtInvalid {
		return false, false
	}
	dir := p.Ct.Dir
	f := &c.Fast[dir]
	if f.Valid && f.Gen == gen && f.Out == out {
		return false, false
	}
	d := p.Data
	if p.L3 != packet.EthernetLen || len(d) < packet.EthernetLen+packet.IPv6Len ||
		d[12] != 0x86 || d[13] != 0xdd || d[14]>>4 != 6 {
		return false, true
	}
	h := d[packet.EthernetLen:]
	k := &c.T[dir]
	if h[7] > p.Ct.TTL || string(h[8:24]) != string(k.Src[:]) || string(h[24:40]) != string(k.Dst[:]) {
		return false, true
	}
	copy(f.Eth[:], d[:12])
	f.Out = out
	f.TTLDec = p.Ct.TTL - h[7]
	f.Gen = gen
	f.Valid = true
	f.Offload = offNone // a new path: FastTrack may hand it to the device again
	t6.MarkLearned()
	return true, false
}
