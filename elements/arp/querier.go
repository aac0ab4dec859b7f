package arp

import (
	"encoding/binary"
	"net/netip"
	"strings"
	"sync/atomic"
	"time"

	"github.com/junction-dataplane/junction/drivers"
	"github.com/junction-dataplane/junction/elements"
	"github.com/junction-dataplane/junction/elements/fastgen"
	"github.com/junction-dataplane/junction/elements/internal/neighq"
	"github.com/junction-dataplane/junction/packet"
)

// QuerierConfig is ARPQuerier's config.
type QuerierConfig struct {
	// Device is the device the packets leave by: its MAC is the source of
	// every frame and its IPv4 addresses the sender of the requests.
	Device string `toml:"device"`
	// Neighbors are static "IP MAC" entries (never aged, never replaced).
	Neighbors []string `toml:"neighbors"`
	// Timeout is how long an entry is trusted after its last
	// confirmation; after it the MAC is still used for Grace while the
	// entry is re-probed.
	Timeout time.Duration `toml:"timeout"`
	// Hold is the number of packets kept per unresolved next hop.
	Hold int `toml:"hold"`
	// Rate is the most ARP requests per second one worker sends (all
	// next hops together); each next hop gets at most one per second.
	Rate int `toml:"rate"`
	// LearnRate is the most entries per second one worker makes from ARP
	// requests for the device's addresses (a flood of them, spoofed, must
	// not churn the table faster than this).
	LearnRate int `toml:"learn_rate"`

	static []entry
}

// Defaults. Linux keeps an entry REACHABLE for 15-45 s (base_reachable_time
// 30 s, randomised) and then probes it; 30 s with a 3 s grace is the same
// behaviour without the randomisation.
const (
	defaultTimeout = 30 * time.Second
	defaultHold    = 8
	defaultRate    = 100
	// defaultLearnRate: a LAN whose hosts all ARP for the router at once
	// (after it restarts) is learnt in seconds, and the rest are resolved
	// by the router's own requests when it first sends to them.
	defaultLearnRate = 100
	// probeInterval is the least time between two requests for one next
	// hop (Linux: retrans_time 1 s).
	probeInterval = int64(time.Second)
	// grace is how long a timed-out entry is still used while it is being
	// re-probed (Linux: delay_first_probe 5 s + ucast probes); packets
	// keep flowing during a refresh. Past it, the entry is unresolved.
	grace = 3 * int64(time.Second)
	// giveUp is how long packets wait for an unresolved next hop: three
	// requests, one per second (Linux: mcast_solicit 3).
	giveUp = 3 * int64(time.Second)
	// minFrame is the shortest Ethernet frame (without FCS): ARP requests
	// are padded to it.
	minFrame = 60
)

// Validate checks keys and parses the static neighbours.
func (c *QuerierConfig) Validate() error {
	if err := neighq.CheckKeys(c.Device, c.Timeout, c.Hold, c.Rate, "request"); err != nil {
		return err
	}
	if c.LearnRate < 1 {
		return elements.Errorf("learn_rate", "must be at least 1 entry per second, got %d", c.LearnRate)
	}
	tmp := &ResponderConfig{}
	for _, n := range c.Neighbors {
		f := strings.Fields(n)
		if len(f) != 2 {
			return elements.Errorf("neighbors", `%q: want "IP MAC", e.g. "10.2.0.2 02:00:00:00:02:02"`, n)
		}
		ip, err := parseHost(f[0])
		if err != nil {
			return elements.Errorf("neighbors", "%q: %v", n, err)
		}
		mac, ok := packet.ParseMAC(f[1])
		if !ok {
			return elements.Errorf("neighbors", "%q: bad MAC %q (want aa:bb:cc:dd:ee:ff)", n, f[1])
		}
		if err := tmp.add(ip, mac); err != nil {
			return elements.Errorf("neighbors", "%q: %v", n, err)
		}
	}
	c.static = tmp.entries
	return nil
}

func init() {
	elements.Register(elements.Type{
		Name: "ARPQuerier",
		NewConfig: func() any {
			return &QuerierConfig{Timeout: defaultTimeout, Hold: defaultHold, Rate: defaultRate, LearnRate: defaultLearnRate}
		},
		New:        newQuerier,
		In:         2,
		Out:        1,
		Doc:        arpQuerierManual,
		TakesState: true, // a reload keeps its shared state (reload.go)
	})
}

// Querier is one worker's ARPQuerier.
type Querier struct {
	now    func() int64 // the monotonic clock (elements.Nanotime; tests move time by hand)
	t      *table
	device string
	out    *elements.Output
	st     *elements.Stats
	pool   *packet.Pool
	mac    packet.MAC
	macW   uint64
	addrs  []netip.Prefix // the device's IPv4 addresses
	ours   []uint32
	tmo    int64

	// holds are the packets waiting for a next hop; holdSlot[i] is the
	// table slot of holds' queue i.
	holds    neighq.Queues
	holdSlot [neighq.MaxHops]*slot
	outB     neighq.Out // held packets released, ARP requests
	eth      neighq.Header
	limit    neighq.Limiter // ARP requests of this worker
	learnLim neighq.Limiter // entries made from ARP requests on this worker

	requests, learned, heldC, released, noBuffer, rateLimited *atomic.Uint64
	offLink, learnLimited, evicted                            *atomic.Uint64

	// fast is the device's fast-path table (nil without one): every
	// neighbour learnt is copied into it for as long as it is trusted here.
	fast     drivers.FastPathTable
	dev      drivers.Device
	fastErrs *atomic.Uint64

	truncated, notIPv4, noHeadroom, queueFull, tooMany, tableFull, unresolved elements.Reason
	notARP, badSender                                                         elements.Reason
	arpIn                                                                     elements.Reason // consumed: an ARP frame learnt from (or a probe)
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
	var fast drivers.FastPathTable
	if fp, ok := dev.(drivers.FastPath); ok {
		fast = fp.FastPathTable()
	}
	v, err := ctx.Shared(keepNeighbours(ctx, c, func() (any, error) {
		t := &table{gen: fastgen.Of(ctx), tmo: int64(c.Timeout)}
		for _, e := range c.static {
			if !t.setStatic(e.ip, neighq.MACWord(e.mac)) {
				return nil, elements.Errorf("neighbors", "too many static neighbours")
			}
			if fast != nil {
				if err := fast.SetNeighbor(dev, packet.AddrFromU32(e.ip), e.mac, staticLifetime); err != nil {
					return nil, elements.Errorf("neighbors", "%s: programming the device's fast path: %v", packet.AddrFromU32(e.ip), err)
				}
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
		mac: info.MAC, macW: neighq.MACWord(info.MAC),
		tmo:      int64(c.Timeout),
		outB:     neighq.NewOut(ctx.Outputs[0], ctx.SideBatch()),
		eth:      neighq.NewHeader(info.MAC, packet.EtherTypeIPv4),
		limit:    neighq.NewLimiter(c.Rate),
		learnLim: neighq.NewLimiter(c.LearnRate),

		requests:     st.Counter("requests"),
		learned:      st.Counter("learned"),
		heldC:        st.Counter("held"),
		released:     st.Counter("released"),
		noBuffer:     st.Counter("no buffer"),
		rateLimited:  st.Counter("rate limited"),
		offLink:      st.Counter("off-link"),
		learnLimited: st.Counter("learn limited"),
		evicted:      st.Counter("evicted"),
		truncated:    st.Reason("truncated"),
		notIPv4:      st.Reason("not ipv4"),
		noHeadroom:   st.Reason("no headroom"),
		queueFull:    st.Reason("queue full"),
		tooMany:      st.Reason("too many unresolved"),
		tableFull:    st.Reason("table full"),
		unresolved:   st.Reason("unresolved"),
		notARP:       st.Reason("not arp"),
		badSender:    st.Reason("bad sender"),
		arpIn:        st.Consumption("arp in"),
	}
	if fast != nil {
		q.fast, q.dev, q.fastErrs = fast, dev, st.Counter("fastpath errors")
	}
	for _, p := range info.Addresses {
		if p.Addr().Is4() {
			q.addrs = append(q.addrs, p)
			a := p.Addr().As4()
			q.ours = append(q.ours, binary.BigEndian.Uint32(a[:]))
		}
	}
	q.holds.Init(c.Hold)
	return q, nil
}

// Push handles IP packets (in 0) and ARP frames (in 1).
func (q *Querier) Push(in int, b *packet.Batch) {
	now := q.now()
	if in == 1 {
		q.learnBatch(b, now)
		q.outB.Flush()
		return
	}
	if q.holds.Active() > 0 {
		// Held packets of hops resolved since go out before this batch.
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

// resolve writes p's Ethernet header and reports true, or holds or drops it
// and reports false.
func (q *Querier) resolve(p *packet.Packet, now int64) bool {
	var ip uint32
	l3 := int(p.L3)
	if nh := p.NextHop; nh.Is4() {
		a := nh.As4()
		ip = binary.BigEndian.Uint32(a[:])
	} else if nh.IsValid() {
		q.st.Drop(p, q.notIPv4)
		return false
	} else {
		if l3 > len(p.Data) || len(p.Data)-l3 < packet.IPv4MinLen {
			q.st.Drop(p, q.truncated)
			return false
		}
		ip = binary.BigEndian.Uint32(p.Data[l3+16:])
	}
	if l3 > len(p.Data) {
		q.st.Drop(p, q.truncated)
		return false
	}
	s, m := q.t.find(ip)
	if m&macValid != 0 {
		if m&macStatic == 0 {
			age := now - s.seen.Load()
			if age >= q.tmo {
				if age >= q.tmo+grace {
					goto unresolved
				}
				// Stale: keep sending while a unicast probe confirms it.
				if s.tryProbe(now, probeInterval) {
					q.request(ip, m)
				}
			}
			// Mark it an active next hop (kept when room is made for
			// new entries); stored once per usedStep, not per packet.
			if now-s.used.Load() >= usedStep {
				s.used.Store(now)
			}
		}
		if !q.eth.Frame(p) {
			q.st.Drop(p, q.noHeadroom)
			return false
		}
		neighq.PutMAC(p.Data[0:6], m)
		return true
	}
unresolved:
	q.holdPacket(p, ip, s, now)
	return false
}

// holdPacket queues p for next hop ip (table slot s, nil if none yet) and
// asks for it if nobody did in the last second.
func (q *Querier) holdPacket(p *packet.Packet, ip uint32, s *slot, now int64) {
	if s == nil {
		var ev bool
		if s, ev = q.t.insert(ip, now); s == nil {
			q.st.Drop(p, q.tableFull)
			return
		}
		if ev {
			q.evicted.Add(1)
		}
	}
	key := neighq.Key4(ip)
	i, fresh, ok := q.holds.Hold(&key, now, p, q.st, q.tooMany, q.queueFull)
	if fresh {
		q.holdSlot[i] = s
	}
	if !ok {
		return
	}
	q.heldC.Add(1)
	if s.tryProbe(now, probeInterval) {
		q.request(ip, 0)
	}
}

// releaseResolved sends the held packets of every hop now resolved, retries
// requests for the others and gives up on those that waited too long.
func (q *Querier) releaseResolved(now int64) {
	for i := range q.holdSlot {
		if !q.holds.InUse(i) {
			continue
		}
		ip := binary.BigEndian.Uint32(q.holds.Key(i)[12:])
		s := q.holdSlot[i]
		m := uint64(0)
		if s.key.Load() == ip {
			m = s.mac.Load()
			if m&(macValid|macStatic) == macValid && now-s.seen.Load() >= q.tmo+grace {
				m = 0
			}
		}
		if m&macValid != 0 {
			if n := q.holds.Release(i, &q.eth, m, &q.outB, q.st, q.noHeadroom); n > 0 {
				q.released.Add(n)
			}
			q.holdSlot[i] = nil
			continue
		}
		if now-q.holds.Since(i) >= giveUp {
			q.holds.Drop(i, q.st, q.unresolved)
			q.holdSlot[i] = nil
			continue
		}
		if s.key.Load() != ip {
			// The slot was recycled (only possible after giveUp): take
			// a fresh one.
			if s, ev := q.t.insert(ip, now); s != nil {
				q.holdSlot[i] = s
				if ev {
					q.evicted.Add(1)
				}
			}
			continue
		}
		if s.tryProbe(now, probeInterval) {
			q.request(ip, 0)
		}
	}
}

// request sends an ARP request for ip: broadcast, or unicast to the MAC in
// known (a re-probe) when it is valid. It is rate limited per worker.
func (q *Querier) request(ip uint32, known uint64) {
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
	f := p.Data[:minFrame]
	clear(f)
	p.Data = f
	if known&macValid != 0 {
		neighq.PutMAC(f[0:6], known)
	} else {
		copy(f[0:6], "\xff\xff\xff\xff\xff\xff")
	}
	copy(f[6:12], q.mac[:])
	binary.BigEndian.PutUint16(f[12:], packet.EtherTypeARP)
	a := packet.InitARP(f[packet.EthernetLen:], packet.ARPRequest)
	a.SetSenderMAC(q.mac)
	binary.BigEndian.PutUint32(f[spa:], q.senderIP(ip))
	binary.BigEndian.PutUint32(f[tpa:], ip)
	q.requests.Add(1)
	q.outB.Emit(p)
}

// senderIP picks the device address on the target's subnet, else the
// first one (0.0.0.0 when the device has none: an RFC 5227 probe, which
// hosts answer too).
func (q *Querier) senderIP(target uint32) uint32 {
	var t [4]byte
	binary.BigEndian.PutUint32(t[:], target)
	ta := netip.AddrFrom4(t)
	for i, p := range q.addrs {
		if p.Contains(ta) {
			return q.ours[i]
		}
	}
	if len(q.ours) > 0 {
		return q.ours[0]
	}
	return 0
}

// onLink reports whether ip is inside one of the device's IPv4 prefixes
// (on the link, as Linux's neighbour entries are: a host that asks for our
// address from another subnet is answered but not remembered).
func (q *Querier) onLink(ip uint32) bool {
	for i, p := range q.addrs {
		if b := p.Bits(); b > 0 && (ip^q.ours[i])>>(32-b) == 0 {
			return true
		}
	}
	return false
}

// mayCreate decides whether a request for our address from sender may make
// its entry: the sender must be on the link, and a new entry takes a token
// of the worker's learn_rate (an existing one is refreshed regardless, as
// Linux does). Both refusals are counted; neither drops the frame.
func (q *Querier) mayCreate(sender uint32, now int64) bool {
	if !q.onLink(sender) {
		if s, _ := q.t.find(sender); s == nil {
			q.offLink.Add(1)
		}
		return false
	}
	if s, _ := q.t.find(sender); s != nil {
		return true // an update, not an entry made
	}
	if !q.learnLim.Ready(now) {
		q.learnLimited.Add(1)
		return false
	}
	q.learnLim.Take()
	return true
}

func (q *Querier) isOurs(ip uint32) bool {
	for _, o := range q.ours {
		if o == ip {
			return true
		}
	}
	return false
}

// learnBatch consumes ARP frames, learning senders.
func (q *Querier) learnBatch(b *packet.Batch, now int64) {
	learnedAny := false
	for _, p := range b.Pkts {
		f := p.Data
		if len(f) < packet.EthernetLen+packet.ARPLen || packet.Ethernet(f).Type() != packet.EtherTypeARP {
			q.st.Drop(p, q.notARP)
			continue
		}
		a, ok := packet.AsARP(f[packet.EthernetLen:])
		if !ok {
			q.st.Drop(p, q.notARP)
			continue
		}
		op := a.Op()
		if op != packet.ARPRequest && op != packet.ARPReply {
			q.st.Drop(p, q.notARP)
			continue
		}
		sender := binary.BigEndian.Uint32(f[spa:])
		target := binary.BigEndian.Uint32(f[tpa:])
		smac := f[sha : sha+6]
		if sender == 0 {
			// A probe (RFC 5227) teaches nothing; not an error.
			q.st.Consume(p, q.arpIn)
			continue
		}
		if smac[0]&1 != 0 || string(smac) == "\x00\x00\x00\x00\x00\x00" || string(smac) == string(q.mac[:]) ||
			sender>>28 >= 0xe || sender>>24 == 127 || q.isOurs(sender) {
			q.st.Drop(p, q.badSender)
			continue
		}
		create := op == packet.ARPRequest && q.isOurs(target) && q.mayCreate(sender, now)
		mw := neighq.MACWord([6]byte(smac))
		ok, ev := q.t.learn(sender, mw, now, create)
		if ev {
			q.evicted.Add(1)
		}
		if ok {
			q.learned.Add(1)
			learnedAny = true
			if q.fast != nil {
				q.toFastPath(sender, mw, now)
			}
		}
		q.st.Consume(p, q.arpIn)
	}
	b.Reset()
	if learnedAny && q.holds.Active() > 0 {
		q.releaseResolved(now)
	}
}

// Tick releases held packets resolved by other workers, retries requests
// and gives up on silent next hops.
// NextTick: every millisecond while packets wait for a next hop (another
// worker may resolve it), else nothing due.
func (q *Querier) NextTick(now int64) int64 {
	if q.holds.Active() != 0 {
		return now
	}
	return elements.NoWake
}

func (q *Querier) Tick(now int64) {
	if q.holds.Active() == 0 {
		return
	}
	q.releaseResolved(now)
	q.outB.Flush()
}

// Close frees the held packets.
func (q *Querier) Close() error {
	q.dropHeld(q.unresolved)
	return nil
}

// dropHeld frees every held packet under reason r and returns how many.
func (q *Querier) dropHeld(r elements.Reason) uint64 {
	q.holdSlot = [neighq.MaxHops]*slot{}
	return q.holds.DropAll(q.st, r)
}

// staticLifetime is how long the fast path trusts a static neighbour:
// for the life of the process.
const staticLifetime = 100 * 365 * 24 * time.Hour

// toFastPath copies a neighbour just learnt or confirmed into the device's
// fast path, valid for the querier's timeout. It is a system call, so it is
// made only when the MAC differs from the one the fast path has, or when
// what it has is a quarter of its lifetime old: a neighbour that ARPs
// often (or a flood of ARP from one) costs one call per tmo/4, not one
// per frame.
func (q *Querier) toFastPath(ip uint32, mac uint64, now int64) {
	s, _ := q.t.find(ip)
	if s == nil {
		return
	}
	if s.fastMAC.Load() == mac && now-s.fastAt.Load() < q.tmo/4 {
		return
	}
	var m [6]byte
	neighq.PutMAC(m[:], mac)
	if q.fast.SetNeighbor(q.dev, packet.AddrFromU32(ip), m, time.Duration(q.tmo)) != nil {
		q.fastErrs.Add(1)
		return
	}
	s.fastMAC.Store(mac)
	s.fastAt.Store(now)
}
