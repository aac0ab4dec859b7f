package ndp

import (
	"encoding/binary"
	"net/netip"
	"sync/atomic"
	"time"

	"github.com/junction-dataplane/junction/elements"
	"github.com/junction-dataplane/junction/elements/internal/neighq"
	"github.com/junction-dataplane/junction/packet"
)

// AdvertiserConfig is RouterAdvertiser's config.
type AdvertiserConfig struct {
	Device   string        `toml:"device"`
	Prefixes []string      `toml:"prefixes"`
	Interval time.Duration `toml:"interval"`
	Lifetime time.Duration `toml:"lifetime"`
	MTU      int           `toml:"mtu"`

	prefixes []netip.Prefix
}

// RFC 4861 section 6.2.1 and 10: the defaults and bounds of a router's
// advertising.
const (
	defaultInterval = 200 * time.Second
	defaultLifetime = 1800 * time.Second
	// initialInterval and initialCount: the first advertisements after
	// start come faster (MAX_INITIAL_RTR_ADVERT_INTERVAL,
	// MAX_INITIAL_RTR_ADVERTISEMENTS).
	initialInterval = 16 * time.Second
	initialCount    = 3
	// minDelayBetweenRAs bounds answers to solicitations
	// (MIN_DELAY_BETWEEN_RAS).
	minDelayBetweenRAs = 3 * time.Second
	validLifetime      = 2592000 // 30 days (AdvValidLifetime)
	preferredLifetime  = 604800  // 7 days (AdvPreferredLifetime)
	maxPrefixes        = 8
	raFixed            = 16 // type .. retrans timer
	prefixOptLen       = 32
	mtuOptLen          = 8
)

// Validate checks the keys.
func (c *AdvertiserConfig) Validate() error {
	if c.Device == "" {
		return elements.Errorf("device", "required: the device to advertise on")
	}
	if c.Interval < 4*time.Second || c.Interval > 1800*time.Second {
		return elements.Errorf("interval", "must be 4s..1800s (RFC 4861 MaxRtrAdvInterval), got %v", c.Interval)
	}
	if c.Lifetime < 0 || c.Lifetime > 9000*time.Second || (c.Lifetime != 0 && c.Lifetime < c.Interval) {
		return elements.Errorf("lifetime", "must be 0 (not a default router) or interval..9000s, got %v", c.Lifetime)
	}
	if c.MTU != 0 && (c.MTU < 1280 || c.MTU > 65535) {
		return elements.Errorf("mtu", "must be 0 (no MTU option) or 1280..65535, got %d", c.MTU)
	}
	if len(c.Prefixes) > maxPrefixes {
		return elements.Errorf("prefixes", "at most %d prefixes, got %d", maxPrefixes, len(c.Prefixes))
	}
	c.prefixes = c.prefixes[:0]
	for i, s := range c.Prefixes {
		p, err := netip.ParsePrefix(s)
		if err != nil || !p.Addr().Is6() || p.Addr().Is4In6() || p.Addr().IsLinkLocalUnicast() || p.Addr().IsMulticast() {
			return elements.Errorf("prefixes", "entry %d: %q is not a global IPv6 prefix such as 2001:db8:1::/64", i+1, s)
		}
		if p.Masked() != p {
			return elements.Errorf("prefixes", "entry %d: %v has host bits set (did you mean %v?)", i+1, p, p.Masked())
		}
		c.prefixes = append(c.prefixes, p)
	}
	return nil
}

func init() {
	elements.Register(elements.Type{
		Name: "RouterAdvertiser",
		NewConfig: func() any {
			return &AdvertiserConfig{Interval: defaultInterval, Lifetime: defaultLifetime}
		},
		New:      newAdvertiser,
		In:       1,
		Out:      2,
		Optional: []int{1},
		Doc:      routerAdvertiserManual,
	})
}

// Advertiser is one worker's RouterAdvertiser.
type Advertiser struct {
	now        func() int64 // the clock (SetClock in tests)
	out, other *elements.Output
	st         *elements.Stats
	pool       *packet.Pool
	mac        packet.MAC
	ll         [16]byte
	ra         []byte // the advertisement's frame, built once
	periodic   bool   // worker 0
	interval   int64
	sent       int   // unsolicited advertisements so far
	next       int64 // when the next is due (0: at the first tick)
	last       int64 // when one last went out
	pending    int64 // when a deferred answer to a solicitation is due (0: none)
	outB       *packet.Batch
	otherB     *packet.Batch

	advertisements, solicitations, noBuffer *atomic.Uint64
	badRS                                   elements.Reason
}

var _ elements.TickScheduler = (*Advertiser)(nil)

func newAdvertiser(cfg any, ctx *elements.Context) (elements.Element, error) {
	c := cfg.(*AdvertiserConfig)
	_, info, err := neighq.Device(ctx, c.Device)
	if err != nil {
		return nil, err
	}
	prefixes := c.prefixes
	if len(prefixes) == 0 {
		for _, p := range info.Addresses {
			if a := p.Addr(); a.Is6() && !a.Is4In6() && !a.IsLinkLocalUnicast() && len(prefixes) < maxPrefixes {
				prefixes = append(prefixes, p.Masked())
			}
		}
	}
	ours := newOurAddrs(info.MAC, info.Addresses)
	st := ctx.Stats
	a := &Advertiser{now: elements.Nanotime, out: ctx.Outputs[0], other: ctx.Outputs[1], st: st, pool: ctx.Pool,
		mac: info.MAC, ll: ours.ll, periodic: ctx.Worker == 0, interval: int64(c.Interval),
		outB: ctx.SideBatch(), otherB: ctx.SideBatch(),
		advertisements: st.Counter("advertisements"), solicitations: st.Counter("solicitations"),
		noBuffer: st.Counter("no buffer"), badRS: st.Reason("bad solicitation")}
	a.ra = buildRA(info.MAC, ours.ll, prefixes, c.Lifetime, c.MTU)
	return a, nil
}

// buildRA lays out the advertisement frame.
func buildRA(mac packet.MAC, src [16]byte, prefixes []netip.Prefix, lifetime time.Duration, mtu int) []byte {
	n := raFixed + llaOptLen + prefixOptLen*len(prefixes)
	if mtu != 0 {
		n += mtuOptLen
	}
	f := make([]byte, packet.EthernetLen+packet.IPv6Len+n)
	dstMAC := multicastMAC(allNodes)
	copy(f[0:6], dstMAC[:])
	copy(f[6:12], mac[:])
	binary.BigEndian.PutUint16(f[12:], packet.EtherTypeIPv6)
	h := packet.IPv6(f[packet.EthernetLen:])
	h.Init()
	h.SetPayloadLen(n)
	h.SetNextHeader(ProtoICMPv6)
	h.SetHopLimit(255)
	copy(h[8:24], src[:])
	copy(h[24:40], allNodes[:])
	ra := h[packet.IPv6Len:]
	ra[0] = TypeRouterAdvertisement
	ra[4] = 64 // current hop limit
	binary.BigEndian.PutUint16(ra[6:], uint16(lifetime/time.Second))
	o := ra[raFixed:]
	o[0], o[1] = optSourceLLA, 1
	copy(o[2:8], mac[:])
	o = o[llaOptLen:]
	if mtu != 0 {
		o[0], o[1] = 5, 1
		binary.BigEndian.PutUint32(o[4:], uint32(mtu))
		o = o[mtuOptLen:]
	}
	for _, p := range prefixes {
		o[0], o[1], o[2], o[3] = 3, 4, byte(p.Bits()), 0xc0 // on-link, autonomous
		binary.BigEndian.PutUint32(o[4:], validLifetime)
		binary.BigEndian.PutUint32(o[8:], preferredLifetime)
		a := p.Addr().As16()
		copy(o[16:32], a[:])
		o = o[prefixOptLen:]
	}
	binary.BigEndian.PutUint16(ra[2:], Checksum(src, allNodes, ra))
	return f
}

// isRS validates a router solicitation (RFC 4861 6.1.1): it returns 1 for
// a valid one, 0 for a frame that is not one, -1 for a bad one.
func isRS(f []byte, l3 int) int {
	if l3 < packet.EthernetLen || l3 > len(f) || len(f)-l3 < packet.IPv6Len+8 ||
		binary.BigEndian.Uint16(f[l3-2:]) != packet.EtherTypeIPv6 {
		return 0
	}
	h := packet.IPv6(f[l3:])
	if h.Version() != 6 || h.NextHeader() != ProtoICMPv6 || h[packet.IPv6Len] != TypeRouterSolicitation {
		return 0
	}
	pl := h.PayloadLen()
	if pl < 8 || packet.IPv6Len+pl > len(h) || h.HopLimit() != 255 || h[packet.IPv6Len+1] != 0 {
		return -1
	}
	icmp := h[packet.IPv6Len : packet.IPv6Len+pl]
	if !checksumOK(h.Src16(), h.Dst16(), icmp) {
		return -1
	}
	unspecified := h.Src16() == [16]byte{}
	for o, n := icmp[8:], 0; len(o) > 0; n++ {
		if n == maxOptions || len(o) < 8 || o[1] == 0 || int(o[1])*8 > len(o) {
			return -1
		}
		if o[0] == optSourceLLA && unspecified {
			return -1
		}
		o = o[int(o[1])*8:]
	}
	return 1
}

// Push answers router solicitations and passes the rest.
func (a *Advertiser) Push(_ int, b *packet.Batch) {
	answer := false
	for _, p := range b.Pkts {
		switch isRS(p.Data, int(p.L3)) {
		case 0:
			a.otherB.Add(p)
		case 1:
			a.solicitations.Add(1)
			answer = true
			p.Free()
		default:
			a.st.Drop(p, a.badRS)
		}
	}
	b.Reset()
	if answer {
		now := a.now()
		if now-a.last >= int64(minDelayBetweenRAs) || a.last == 0 {
			a.send(now)
		} else if a.pending == 0 {
			a.pending = a.last + int64(minDelayBetweenRAs) // answered by Tick then
		}
	}
	if a.otherB.Len() > 0 {
		a.other.Push(a.otherB)
	}
	if a.outB.Len() > 0 {
		a.out.Push(a.outB)
	}
}

func (a *Advertiser) send(now int64) {
	p := a.pool.Get()
	if p == nil {
		a.noBuffer.Add(1)
		return
	}
	p.SetFrame(a.ra)
	p.L3 = packet.EthernetLen
	a.outB.Add(p)
	a.advertisements.Add(1)
	a.last = now
}

// NextTick: the solicited advertisement pending, or the next periodic one.
func (a *Advertiser) NextTick(now int64) int64 {
	t := elements.NoWake
	if a.pending != 0 {
		t = a.pending
	}
	if a.periodic {
		t = min(t, a.next) // 0: the first, at once
	}
	return t
}

// Tick sends the unsolicited advertisements (worker 0) and the answers
// deferred by the minimum delay.
func (a *Advertiser) Tick(now int64) {
	if a.pending != 0 && now >= a.pending {
		a.pending = 0
		a.send(now)
	}
	if a.periodic && (a.next == 0 || now >= a.next) {
		a.send(now)
		a.sent++
		iv := a.interval
		if a.sent < initialCount {
			iv = min(iv, int64(initialInterval))
		}
		a.next = now + iv
	}
	if a.outB.Len() > 0 {
		a.out.Push(a.outB)
	}
}
