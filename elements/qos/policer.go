package qos

import (
	"encoding/binary"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/junction-dataplane/junction/elements"
	"github.com/junction-dataplane/junction/packet"
)

func init() {
	elements.Register(elements.Type{
		Name: "Policer",
		NewConfig: func() any {
			return &PolicerConfig{Key: "element", Prefix6: 64, Capacity: 4096, Green: "pass", Yellow: "pass", Red: "drop", Share: shareSplit}
		},
		New: newPolicer,
		In:  1,
		Out: -1,
		Doc: policerManual,
	})
}

// PolicerConfig is Policer's config.
type PolicerConfig struct {
	Rate        Rate   `toml:"rate"`
	Burst       Size   `toml:"burst"`
	ExcessBurst Size   `toml:"excess_burst"`
	PeakRate    Rate   `toml:"peak_rate"`
	PeakBurst   Size   `toml:"peak_burst"`
	Key         string `toml:"key"`
	Prefix6     int    `toml:"prefix6"`
	Capacity    int    `toml:"capacity"`
	Green       string `toml:"green"`
	Yellow      string `toml:"yellow"`
	Red         string `toml:"red"`
	Share       string `toml:"share"`
	ColorAware  bool   `toml:"color_aware"`
}

// Limits of a Policer's keys.
const (
	minBurst    = 1514 // a full-size Ethernet frame
	minCapacity = 16
	maxCapacity = 1 << 20
)

// action is what a colour does to a packet.
type action struct {
	port   int // output; -1: drop
	remark bool
	dscp   uint8
}

// parseAction reads "pass", "drop", "dscp D", "out N" or "dscp D out N".
func parseAction(s string) (action, error) {
	f := strings.Fields(strings.ToLower(s))
	a := action{}
	if len(f) == 1 && f[0] == "pass" {
		return a, nil
	}
	if len(f) == 1 && f[0] == "drop" {
		return action{port: -1}, nil
	}
	bad := fmt.Errorf("%q: want \"pass\", \"drop\", \"dscp D\", \"out N\" or \"dscp D out N\"", s)
	if len(f) == 0 {
		return a, bad
	}
	for len(f) > 0 {
		if len(f) < 2 {
			return a, bad
		}
		switch f[0] {
		case "dscp":
			if a.remark {
				return a, bad
			}
			d, err := parseDSCP(f[1])
			if err != nil {
				return a, err
			}
			a.remark, a.dscp = true, d
		case "out":
			n, err := strconv.Atoi(f[1])
			if err != nil || n < 0 || n > 8 {
				return a, fmt.Errorf("%q: want an output 0..8 after \"out\"", s)
			}
			a.port = n
		default:
			return a, bad
		}
		f = f[2:]
	}
	return a, nil
}

// keyKind is what a Policer's meters are keyed by.
type keyKind uint8

const (
	keyElement keyKind = iota
	keyFlow
	keySrc
	keyDst
)

// parseKey reads the key key: its kind and IPv4 prefix length.
func parseKey(s string) (keyKind, int, error) {
	switch s {
	case "element":
		return keyElement, 0, nil
	case "flow":
		return keyFlow, 0, nil
	}
	dir, n, ok := strings.Cut(s, "/")
	k := keySrc
	switch {
	case dir == "dst":
		k = keyDst
	case dir != "src":
		ok = false
	}
	bits, err := strconv.Atoi(n)
	if !ok || err != nil || bits < 0 || bits > 32 {
		return 0, 0, fmt.Errorf("%q: want \"element\", \"flow\", \"src/N\" or \"dst/N\" (N: an IPv4 prefix length 0..32)", s)
	}
	return k, bits, nil
}

// burst is the committed burst: the key's, or rate × 10 ms (at least 3000).
func (c *PolicerConfig) burst() Size {
	if c.Burst != 0 {
		return c.Burst
	}
	return defaultBurst(c.Rate, 100, 3000)
}

// defaultBurst is what rate sends in 1/per of a second, at least least.
func defaultBurst(r Rate, per, least uint64) Size {
	return Size(min(max(uint64(r)/8/per, least), MaxBurst))
}

func (c *PolicerConfig) peakBurst() Size {
	if c.PeakBurst != 0 {
		return c.PeakBurst
	}
	return c.burst()
}

// Validate checks every key.
func (c *PolicerConfig) Validate() error {
	if err := checkRate(c.Rate); err != nil {
		return elements.Errorf("rate", "%v", err)
	}
	if err := checkBurst(c.Burst); err != nil {
		return elements.Errorf("burst", "%v", err)
	}
	if c.ExcessBurst > MaxBurst {
		return elements.Errorf("excess_burst", "%s: at most %s", c.ExcessBurst, Size(MaxBurst))
	}
	if c.PeakRate != 0 {
		if err := checkRate(c.PeakRate); err != nil {
			return elements.Errorf("peak_rate", "%v", err)
		}
		if c.PeakRate < c.Rate {
			return elements.Errorf("peak_rate", "%s: below rate %s (RFC 2698: PIR >= CIR)", c.PeakRate, c.Rate)
		}
		if c.ExcessBurst != 0 {
			return elements.Errorf("excess_burst", "excess_burst is the single-rate marker's: with peak_rate set, use peak_burst")
		}
	} else if c.PeakBurst != 0 {
		return elements.Errorf("peak_burst", "peak_burst needs peak_rate")
	}
	if err := checkBurst(c.PeakBurst); err != nil {
		return elements.Errorf("peak_burst", "%v", err)
	}
	if _, _, err := parseKey(c.Key); err != nil {
		return elements.Errorf("key", "%v", err)
	}
	if c.Prefix6 < 0 || c.Prefix6 > 128 {
		return elements.Errorf("prefix6", "%d: want 0..128", c.Prefix6)
	}
	if c.Capacity < minCapacity || c.Capacity > maxCapacity {
		return elements.Errorf("capacity", "%d: want %d..%d", c.Capacity, minCapacity, maxCapacity)
	}
	for _, a := range []struct{ key, v string }{{"green", c.Green}, {"yellow", c.Yellow}, {"red", c.Red}} {
		if _, err := parseAction(a.v); err != nil {
			return elements.Errorf(a.key, "%v", err)
		}
	}
	if err := checkShare(c.Share); err != nil {
		return elements.Errorf("share", "%v", err)
	}
	return nil
}

// checkBurst refuses a burst below a full-size frame or beyond MaxBurst (0:
// the default).
func checkBurst(s Size) error {
	if s != 0 && s < minBurst {
		return fmt.Errorf("%s: below one full-size frame (%d bytes): such packets would never conform", s, minBurst)
	}
	if s > MaxBurst {
		return fmt.Errorf("%s: at most %s", s, Size(MaxBurst))
	}
	return nil
}

// Ports: one output, plus one per "out N" the actions name.
func (c *PolicerConfig) Ports() (in, out int) {
	out = 1
	for _, s := range []string{c.Green, c.Yellow, c.Red} {
		if a, err := parseAction(s); err == nil && a.port >= out {
			out = a.port + 1
		}
	}
	return 1, out
}

// Policer is one worker's policer.
type Policer struct {
	pr                         profile
	kind                       keyKind
	one                        meter // key "element"
	t                          table
	mask4                      uint32
	mask6                      [2]uint64
	act                        [3]action
	aware                      bool
	pre                        [64]uint8 // colour so far by DSCP (color_aware)
	outs                       []*elements.Output
	side                       []*packet.Batch // per output but 0
	st                         *elements.Stats
	reasons                    [3]elements.Reason
	colours                    [3]*atomic.Uint64
	remarked, notIP, evictions *atomic.Uint64
	now                        func() int64
}

func newPolicer(cfg any, ctx *elements.Context) (elements.Element, error) {
	c := cfg.(*PolicerConfig)
	cir, pir, cbs, ebs := c.Rate, c.PeakRate, c.burst(), c.ExcessBurst
	twoRate := pir != 0
	if twoRate {
		ebs = c.peakBurst()
	}
	kind, bits4, _ := parseKey(c.Key)
	if c.Share == shareSplit && kind != keyFlow && ctx.Workers > 1 {
		w := uint64(ctx.Workers)
		cir, pir = Rate(max(uint64(cir)/w, 1)), Rate(uint64(pir)/w)
		// A worker's bucket still holds a full-size frame, else such
		// packets would never conform there.
		cbs = max(Size(uint64(cbs)/w), minBurst)
		if ebs != 0 {
			ebs = max(Size(uint64(ebs)/w), minBurst)
		}
	}
	e := &Policer{pr: newProfile(cir, pir, cbs, ebs, twoRate), kind: kind, outs: ctx.Outputs,
		st: ctx.Stats, now: elements.Nanotime}
	e.one = e.pr.full(0)
	e.one.last = -1 << 62 // full whenever the first packet comes
	if kind != keyElement {
		e.t = newTable(c.Capacity)
	}
	e.mask4 = ^uint32(0) << (32 - bits4)
	if bits4 == 0 {
		e.mask4 = 0
	}
	e.mask6 = prefixMask6(c.Prefix6)
	e.aware = c.ColorAware
	for d := range e.pre {
		// RFC 2597: AF class x, drop precedence y is DSCP x<<3 | y<<1.
		if cls, dp := d>>3, d>>1&3; d&1 == 0 && cls >= 1 && cls <= 4 && dp >= 1 && dp <= 3 {
			e.pre[d] = uint8(dp - 1)
		}
	}
	for i, s := range []string{c.Green, c.Yellow, c.Red} {
		a, _ := parseAction(s)
		e.act[i] = a
		e.colours[i] = ctx.Stats.Counter(colourNames[i])
		if a.port < 0 {
			e.reasons[i] = ctx.Stats.Reason("policed " + colourNames[i])
		}
	}
	e.remarked = ctx.Stats.Counter("remarked")
	e.notIP = ctx.Stats.Counter("not ip")
	e.evictions = ctx.Stats.Counter("evictions")
	e.side = make([]*packet.Batch, len(ctx.Outputs))
	for i := 1; i < len(e.side); i++ {
		e.side[i] = ctx.SideBatch()
	}
	return e, nil
}

// prefixMask6 is the mask of an IPv6 prefix of n bits, as two words.
func prefixMask6(n int) [2]uint64 {
	var m [2]uint64
	for i := range m {
		b := min(max(n-64*i, 0), 64)
		if b > 0 {
			m[i] = ^uint64(0) << (64 - b)
		}
	}
	return m
}

// Push meters every packet and applies its colour's action: packets for
// output 0 are compacted in b, the others set aside or dropped.
func (e *Policer) Push(_ int, b *packet.Batch) {
	now := e.now()
	var n [3]uint64
	var remarked, notIP uint64
	k := 0
	for _, p := range b.Pkts {
		m := &e.one
		if e.kind != keyElement {
			m = e.meterOf(p, now)
		}
		if now > m.last {
			e.pr.refill(m, now)
		}
		cost := int64(ipSize(p)) * creditsPerByte
		var c int
		switch {
		case e.aware:
			c = e.colourAware(p, m, cost)
		case e.pr.twoRate:
			c = colour2(m, cost)
		default:
			c = colour1(m, cost)
		}
		n[c]++
		a := &e.act[c]
		if a.remark {
			if setDSCP(p, a.dscp) {
				remarked++
			} else {
				notIP++
			}
		}
		switch {
		case a.port == 0:
			b.Pkts[k] = p
			k++
		case a.port < 0:
			e.st.Drop(p, e.reasons[c])
		default:
			e.side[a.port].Add(p)
		}
	}
	b.Truncate(k)
	for c, v := range n {
		if v != 0 {
			e.colours[c].Add(v)
		}
	}
	if remarked != 0 {
		e.remarked.Add(remarked)
	}
	if notIP != 0 {
		e.notIP.Add(notIP)
	}
	if k > 0 {
		e.outs[0].Push(b)
	}
	for i := 1; i < len(e.side); i++ {
		if len(e.side[i].Pkts) > 0 {
			e.outs[i].Push(e.side[i])
		}
	}
}

// colourAware meters p colour-aware: its colour so far from its DSCP.
func (e *Policer) colourAware(p *packet.Packet, m *meter, cost int64) int {
	pre := green
	if d := dscpOf(p); d >= 0 {
		pre = int(e.pre[d])
	}
	if e.pr.twoRate {
		return colour2Aware(m, cost, pre)
	}
	return colour1Aware(m, cost, pre)
}

// meterOf finds (or makes) the meter of p's key.
func (e *Policer) meterOf(p *packet.Packet, now int64) *meter {
	var k0, k1 uint64
	kind := uint8(kindOther)
	d, l3 := p.Data, int(p.L3)
	if e.kind == keyFlow {
		h := p.FlowHash
		if h == 0 {
			h = packet.FlowHash(p)
			p.FlowHash = h
		}
		k0, kind = uint64(h), kindFlow
	} else if len(d) >= l3+packet.IPv4MinLen && d[l3]>>4 == 4 {
		off := l3 + 12
		if e.kind == keyDst {
			off += 4
		}
		k0, kind = uint64(binary.BigEndian.Uint32(d[off:])&e.mask4), kindIPv4
	} else if len(d) >= l3+40 && d[l3]>>4 == 6 {
		off := l3 + 8
		if e.kind == keyDst {
			off += 16
		}
		k0 = binary.BigEndian.Uint64(d[off:]) & e.mask6[0]
		k1 = binary.BigEndian.Uint64(d[off+8:]) & e.mask6[1]
		kind = kindIPv6
	}
	// The common case, a key in its set's first way, without a call.
	set := e.t.setOf(k0, k1, kind)
	if x := &set[0]; x.k0 == k0 && x.k1 == k1 && x.kind == kind {
		return &x.m
	}
	m, evicted := e.t.lookup(set, k0, k1, kind, &e.pr, now)
	if evicted {
		e.evictions.Add(1)
	}
	return m
}
