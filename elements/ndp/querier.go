package ndp

import (
	"net/netip"
	"strings"
	"sync/atomic"
	"time"

	"github.com/junction-dataplane/junction/elements"
	"github.com/junction-dataplane/junction/elements/fastgen"
	"github.com/junction-dataplane/junction/elements/internal/neighq"
	"github.com/junction-dataplane/junction/packet"
)

// QuerierConfig is NDPQuerier's config.
type QuerierConfig struct {
	// Device is the device the packets leave by.
	Device string `toml:"device"`
	// Neighbors are static "IPv6 MAC" entries.
	Neighbors []string `toml:"neighbors"`
	// Timeout is the reachable time: how long a confirmation is trusted.
	Timeout time.Duration `toml:"timeout"`
	// Hold is the number of packets kept per unresolved neighbour.
	Hold int `toml:"hold"`
	// Rate is the most solicitations per second one worker sends.
	Rate int `toml:"rate"`
	// LearnRate is the most entries per second one worker makes from
	// solicitations for the device's addresses.
	LearnRate int `toml:"learn_rate"`

	static []staticEntry
}

type staticEntry struct {
	ip  [16]byte
	mac packet.MAC
}

const (
	defaultHold = 8
	defaultRate = 100
	// defaultLearnRate: as ARPQuerier's.
	defaultLearnRate = 100
)

// Validate checks the keys.
func (c *QuerierConfig) Validate() error {
	if err := neighq.CheckKeys(c.Device, c.Timeout, c.Hold, c.Rate, "solicitation"); err != nil {
		return err
	}
	if c.LearnRate < 1 {
		return elements.Errorf("learn_rate", "must be at least 1 entry per second, got %d", c.LearnRate)
	}
	c.static = c.static[:0]
	for _, s := range c.Neighbors {
		f := strings.Fields(s)
		if len(f) != 2 {
			return elements.Errorf("neighbors", `%q: want "IPv6 MAC", e.g. "2001:db8:2::2 02:00:00:00:02:02"`, s)
		}
		ip, err := netip.ParseAddr(f[0])
		if err != nil || !ip.Is6() || ip.Is4In6() || ip.IsMulticast() || ip.IsUnspecified() || ip.Zone() != "" {
			return elements.Errorf("neighbors", "%q: %q is not a unicast IPv6 address", s, f[0])
		}
		mac, ok := packet.ParseMAC(f[1])
		if !ok || mac[0]&1 != 0 || mac == (packet.MAC{}) {
			return elements.Errorf("neighbors", "%q: bad MAC %q (want a unicast aa:bb:cc:dd:ee:ff)", s, f[1])
		}
		c.static = append(c.static, staticEntry{ip.As16(), mac})
	}
	return nil
}

func init() {
	elements.Register(elements.Type{
		Name: "NDPQuerier",
		NewConfig: func() any {
			return &QuerierConfig{Timeout: time.Duration(DefaultTimers.Reachable), Hold: defaultHold, Rate: defaultRate, LearnRate: defaultLearnRate}
		},
		New:        newQuerier,
		In:         2,
		Out:        1,
		Doc:        ndpQuerierManual,
		TakesState: true, // a reload keeps its neighbours (reload.go)
	})
}

// Querier is one worker's NDPQuerier.
type Querier struct {
	now    func() int64 // the clock (SetClock in tests)
	t      *table
	device string // for Neighbors (list.go)
	out    *elements.Output
	st     *elements.Stats
	pool   *packet.Pool
	mac    packet.MAC
	ours   ourAddrs

	// holds are the packets waiting for a neighbour; holdNeigh[i] is the
	// cache entry of holds' queue i.
	holds     neighq.Queues
	holdNeigh [neighq.MaxHops]*neigh
	outB      neighq.Out // held packets released, solicitations
	eth       neighq.Header
	limit     neighq.Limiter // solicitations of this worker
	learnLim  neighq.Limiter // entries made from solicitations on this worker

	solicitations, learned, heldC, released, noBuffer, rateLimited *atomic.Uint64
	ndFrames, notLearned                                           *atomic.Uint64
	offLink, learnLimited, evicted                                 *atomic.Uint64

	truncated, notIPv6, noHeadroom, queueFull, tooMany, tableFull, unresolved elements.Reason
	ndInvalid                                                                 elements.Reason
	ndIn                                                                      elements.Reason // consumed: a solicitation or advertisement learnt from

	// The device's in-kernel fast path (nil without one), fastpath.go;
	// refresher: this worker re-confirms the neighbours the kernel
	// forwards to (worker 0's querier), walking the table from refreshAt.
	fast      fastHook
	refresher bool
	refreshAt int
}

var (
	_ elements.TickScheduler = (*Querier)(nil)
	_ elements.Closer        = (*Querier)(nil)
)

func newQuerier(cfg any, ctx *elements.Context) (elements.Element, error) {
	c := cfg.(*QuerierConfig)
	dev, info, err := neighq.Device(ctx, c.Device)
	if err != nil {
		return nil, err
	}
	fast := newFastHook(dev, ctx.Stats)
	v, err := ctx.Shared(keepNeighbours(ctx, func() (any, error) {
		t := &table{tm: DefaultTimers, gen: fastgen.Of(ctx)}
		t.tm.Reachable = int64(c.Timeout)
		for _, e := range c.static {
			if !t.setStatic(e.ip, neighq.MACWord(e.mac)) {
				return nil, elements.Errorf("neighbors", "too many static neighbours")
			}
			if err := fast.static(e.ip, e.mac); err != nil {
				return nil, elements.Errorf("neighbors", "%s: programming the device's fast path: %v", netip.AddrFrom16(e.ip), err)
			}
		}
		return t, nil
	}))
	if err != nil {
		return nil, err
	}
	st := ctx.Stats
	q := &Querier{now: elements.Nanotime,
		t: v.(*table), device: c.Device, out: ctx.Outputs[0], st: st, pool: ctx.Pool,
		mac: info.MAC, ours: newOurAddrs(info.MAC, info.Addresses),
		outB:      neighq.NewOut(ctx.Outputs[0], ctx.SideBatch()),
		eth:       neighq.NewHeader(info.MAC, packet.EtherTypeIPv6),
		limit:     neighq.NewLimiter(c.Rate),
		learnLim:  neighq.NewLimiter(c.LearnRate),
		refresher: ctx.Worker == 0,

		solicitations: st.Counter("solicitations"),
		learned:       st.Counter("learned"),
		heldC:         st.Counter("held"),
		released:      st.Counter("released"),
		noBuffer:      st.Counter("no buffer"),
		rateLimited:   st.Counter("rate limited"),
		ndFrames:      st.Counter("nd frames"),
		notLearned:    st.Counter("not learned: table full"),
		offLink:       st.Counter("off-link"),
		learnLimited:  st.Counter("learn limited"),
		evicted:       st.Counter("evicted"),
		ndInvalid:     st.Reason("nd invalid"),
		ndIn:          st.Consumption("nd in"),
		truncated:     st.Reason("truncated"),
		notIPv6:       st.Reason("not ipv6"),
		noHeadroom:    st.Reason("no headroom"),
		queueFull:     st.Reason("queue full"),
		tooMany:       st.Reason("too many unresolved"),
		tableFull:     st.Reason("table full"),
		unresolved:    st.Reason("unresolved"),
	}
	q.fast = fast
	q.holds.Init(c.Hold)
	return q, nil
}

// Push handles IPv6 packets (in 0) and frames to learn from (in 1).
func (q *Querier) Push(in int, b *packet.Batch) {
	now := q.now()
	if in == 1 {
		q.learnBatch(b, now)
		return
	}
	if q.holds.Active() > 0 {
		q.releaseResolved(now)
		q.outB.Flush()
	}
	k := 0
	for _, p := range b.Pkts {
		if q.resolve(p, now) {
			b.Pkts[k] = p
			k++
		}
	}
	b.Truncate(k)
	if k > 0 {
		q.out.Push(b)
	}
	q.outB.Flush()
}

func (q *Querier) resolve(p *packet.Packet, now int64) bool {
	l3 := int(p.L3)
	var ip [16]byte
	if nh := p.NextHop; nh.IsValid() {
		if !nh.Is6() || nh.Is4In6() {
			q.st.Drop(p, q.notIPv6)
			return false
		}
		ip = nh.As16()
	} else {
		if l3 > len(p.Data) || len(p.Data)-l3 < packet.IPv6Len {
			q.st.Drop(p, q.truncated)
			return false
		}
		if p.Data[l3]>>4 != 6 {
			q.st.Drop(p, q.notIPv6)
			return false
		}
		ip = [16]byte(p.Data[l3+24 : l3+40])
	}
	if l3 > len(p.Data) {
		q.st.Drop(p, q.truncated)
		return false
	}
	if ip[0] == 0xff {
		if !q.eth.Frame(p) {
			q.st.Drop(p, q.noHeadroom)
			return false
		}
		m := multicastMAC(ip)
		copy(p.Data[0:6], m[:])
		return true
	}
	n, mac, usable, sol := q.t.output(&ip, now, q.evicted)
	if n == nil {
		q.st.Drop(p, q.tableFull)
		return false
	}
	if sol != solNone {
		q.solicit(ip, mac, sol == solUnicast)
	}
	if usable {
		if !q.eth.Frame(p) {
			q.st.Drop(p, q.noHeadroom)
			return false
		}
		neighq.PutMAC(p.Data[0:6], mac)
		return true
	}
	q.holdPacket(p, ip, n, now)
	return false
}

func (q *Querier) holdPacket(p *packet.Packet, ip [16]byte, n *neigh, now int64) {
	i, fresh, ok := q.holds.Hold(&ip, now, p, q.st, q.tooMany, q.queueFull)
	if fresh {
		q.holdNeigh[i] = n
	}
	if ok {
		q.heldC.Add(1)
	}
}

// releaseResolved sends the held packets of neighbours now usable, drives
// the solicitations of the others and gives up on failed ones.
func (q *Querier) releaseResolved(now int64) {
	for i := range q.holdNeigh {
		if !q.holds.InUse(i) {
			continue
		}
		ip := q.holds.Key(i)
		if cur := q.t.find(ip); cur != q.holdNeigh[i] && cur != nil {
			q.holdNeigh[i] = cur // recycled and remade meanwhile
		}
		nb := q.holdNeigh[i]
		if nb.State() >= Reachable {
			if n := q.holds.Release(i, &q.eth, nb.mac.Load(), &q.outB, q.st, q.noHeadroom); n > 0 {
				q.released.Add(n)
			}
			q.holdNeigh[i] = nil
			continue
		}
		sol, failed := q.t.retry(nb, now)
		if failed {
			q.holds.Drop(i, q.st, q.unresolved)
			q.holdNeigh[i] = nil
			continue
		}
		if sol {
			q.solicit(*ip, 0, false)
		}
	}
}

// solicit sends a neighbour solicitation for target: multicast to its
// solicited-node group, or unicast to the MAC in known (a probe). It is
// rate limited per worker.
func (q *Querier) solicit(target [16]byte, known uint64, unicast bool) {
	if !q.limit.Ready(q.now()) {
		q.rateLimited.Add(1)
		return
	}
	p := q.pool.Get()
	if p == nil {
		q.noBuffer.Add(1)
		return
	}
	q.limit.Take()
	dst := solicitedNode(target)
	ethDst := multicastMAC(dst)
	if unicast {
		dst = target
		neighq.PutMAC(ethDst[:], known)
	}
	f := p.Data[:frameLen]
	n := build(f, ethDst, q.mac, q.ours.sourceFor(target), dst, TypeNeighborSolicitation, 0, target, q.mac, true)
	p.Data = f[:n]
	p.L3 = packet.EthernetLen
	q.solicitations.Add(1)
	q.outB.Emit(p)
}

// learnBatch learns from the valid solicitations and advertisements in b
// and frees them.
func (q *Querier) learnBatch(b *packet.Batch, now int64) {
	learnedAny := false
	var m msg
	q.ndFrames.Add(uint64(len(b.Pkts)))
	for _, p := range b.Pkts {
		if parse(p.Data, int(p.L3), &m) != okND {
			q.st.Drop(p, q.ndInvalid)
			continue
		}
		if !m.hasLLA {
			if m.typ == TypeNeighborAdvertisement && q.t.learnNA(&m.target, 0, false, m.flags, now) {
				q.learned.Add(1)
				learnedAny = true
				if q.fast.table != nil {
					q.fast.sync(q.t, &m.target, now)
				}
			}
			q.st.Consume(p, q.ndIn)
			continue
		}
		if m.lla[0]&1 != 0 || m.lla == (packet.MAC{}) || m.lla == q.mac {
			q.st.Drop(p, q.ndInvalid)
			continue
		}
		mw := neighq.MACWord(m.lla)
		var ok bool
		if m.typ == TypeNeighborSolicitation {
			// Only solicitations for our addresses make entries (a
			// host resolving us will be answered and talked to), from
			// on-link senders, at most learn_rate new ones a second.
			var full bool
			create := q.ours.has(m.target) && q.mayCreate(&m.src, now)
			if ok, full = q.t.learnNS(&m.src, mw, now, create, q.evicted); full {
				q.notLearned.Add(1)
			}
		} else {
			ok = q.t.learnNA(&m.target, mw, true, m.flags, now)
		}
		if ok {
			q.learned.Add(1)
			learnedAny = true
		}
		if q.fast.table != nil {
			if m.typ == TypeNeighborSolicitation {
				q.fast.sync(q.t, &m.src, now)
			} else {
				q.fast.sync(q.t, &m.target, now)
			}
		}
		q.st.Consume(p, q.ndIn)
	}
	b.Reset()
	if learnedAny && q.holds.Active() > 0 {
		q.releaseResolved(now)
		q.outB.Flush()
	}
}

// onLink reports whether a is a link-local address or inside one of the
// device's IPv6 prefixes: a solicitation from anywhere else makes no
// entry (its sender can only be spoofed: hop limit 255 means it was sent
// on this link, and a host on the link has an address on it).
func (q *Querier) onLink(a *[16]byte) bool {
	if a[0] == 0xfe && a[1]&0xc0 == 0x80 {
		return true
	}
	ad := netip.AddrFrom16(*a)
	for _, p := range q.ours.prefixes {
		if p.Contains(ad) {
			return true
		}
	}
	return false
}

// mayCreate decides whether a solicitation for our address from src may
// make its entry: src must be on the link, and a new entry takes a token
// of the worker's learn_rate (an existing entry is updated regardless).
// Both refusals are counted; neither drops the frame.
func (q *Querier) mayCreate(src *[16]byte, now int64) bool {
	if q.t.find(src) != nil {
		return true // an update, not an entry made
	}
	if !q.onLink(src) {
		q.offLink.Add(1)
		return false
	}
	if !q.learnLim.Ready(now) {
		q.learnLimited.Add(1)
		return false
	}
	q.learnLim.Take()
	return true
}

// Tick releases packets resolved by other workers and retries solicitations.
// NextTick: every millisecond while packets wait for a next hop. The
// fast path's refresh scan is not time-critical (a neighbour is refreshed
// in the last quarter of its reachable time, seconds): it goes on at the
// idle cadence.
func (q *Querier) NextTick(now int64) int64 {
	if q.holds.Active() != 0 {
		return now
	}
	return elements.NoWake
}

func (q *Querier) Tick(now int64) {
	if q.fast.table != nil && q.refresher {
		q.refreshFast(now)
	}
	if q.holds.Active() == 0 {
		return
	}
	q.releaseResolved(now)
	q.outB.Flush()
}

// Close frees the held packets.
func (q *Querier) Close() error {
	q.dropHeld()
	return nil
}

// dropHeld frees every held packet as "unresolved" and returns how many.
func (q *Querier) dropHeld() uint64 {
	q.holdNeigh = [neighq.MaxHops]*neigh{}
	return q.holds.DropAll(q.st, q.unresolved)
}

// Neighbor returns the cache's state and MAC for a (Free when none): for
// tests and for inspection.
func (q *Querier) Neighbor(a netip.Addr) (State, packet.MAC) {
	b := a.As16()
	n := q.t.find(&b)
	if n == nil {
		return Free, packet.MAC{}
	}
	var m packet.MAC
	neighq.PutMAC(m[:], n.mac.Load())
	return n.State(), m
}

// Entries returns the number of cache slots in use.
func (q *Querier) Entries() int { return int(q.t.n.Load()) }
