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
		Doc: elements.Doc{
			Synopsis: "Policer(RATE [, BURST, EXCESS_BURST, PEAK_RATE, PEAK_BURST, KEY, ...])",
			Summary:  "meters packets with a single-rate (RFC 2697) or two-rate (RFC 2698) three-colour marker, per element, per flow or per address prefix, and passes, re-marks, drops or diverts each colour",
			Ports: "input 0: packets (IPv4 or IPv6 at the L3 offset; others are metered too, under one key of their own).\n" +
				"output 0: packets whose colour's action is pass or dscp (re-marked).\n" +
				"output N (N >= 1): packets whose colour's action is \"out N\"; there are as many outputs as the largest N asks.",
			Keys: []elements.Key{
				{Name: "rate", Type: "rate", Required: true, Doc: "the committed information rate (CIR), in bit/s of IP packets: \"20Mbit\", \"1.5Gbit\", \"800kbit\", \"20M\" (decimal units; \"bps\" means bits). 0 and rates beyond 400Gbit are refused"},
				{Name: "burst", Type: "size", Default: "rate × 10 ms, at least 3000", Doc: "the committed burst size (CBS), in bytes: \"1500\", \"64KB\", \"64KiB\". At least 1514 (a full-size frame, else such packets are never green); at most 256MiB"},
				{Name: "excess_burst", Type: "size", Default: "0", Doc: "the excess burst size (EBS) of the single-rate marker: tokens beyond a full committed bucket are kept up to it and colour packets yellow. 0: a two-colour policer (green or red). Not with peak_rate"},
				{Name: "peak_rate", Type: "rate", Default: "none", Doc: "the peak information rate (PIR): makes it a two-rate marker (RFC 2698): above the peak rate red, between the committed and the peak rate yellow. At least rate"},
				{Name: "peak_burst", Type: "size", Default: "burst", Doc: "the peak burst size (PBS) of the two-rate marker"},
				{Name: "key", Type: "string", Default: `"element"`, Doc: "what one meter covers: \"element\" (all packets), \"flow\" (the symmetric flow hash: both directions of a connection share one meter), \"src/N\" or \"dst/N\" (the source or destination address masked to N bits for IPv4, prefix6 bits for IPv6: \"src/32\" is one meter per inside host)"},
				{Name: "prefix6", Type: "int", Default: "64", Doc: "the IPv6 prefix length of src and dst keys (0..128; 64: one meter per IPv6 subnet, as a host usually holds many addresses of its /64)"},
				{Name: "capacity", Type: "int", Default: "4096", Doc: "meters per worker for keyed policers (16..1048576): a bounded table; when a key's set of four is taken, the meter refilled longest ago gives way (counted as \"evictions\" when it was not yet full)"},
				{Name: "green", Type: "string", Default: `"pass"`, Doc: "what happens to green packets: \"pass\" (output 0), \"drop\", \"dscp D\" (re-mark to D, a number or name such as ef, af12, cs1, then output 0), \"out N\" (output N), or \"dscp D out N\""},
				{Name: "yellow", Type: "string", Default: `"pass"`, Doc: "what happens to yellow packets (as green); RFC 2597 suggests re-marking them to a higher drop precedence, e.g. \"dscp af12\""},
				{Name: "red", Type: "string", Default: `"drop"`, Doc: "what happens to red packets (as green)"},
				{Name: "share", Type: "string", Default: `"split"`, Doc: "how the rates and bursts are divided between workers, which meter independently: \"split\" gives each worker rate/workers and burst/workers (at least 1514 bytes), so that what the keys let through in all never exceeds the rate (and the bursts); \"each\" gives every worker the whole rate, right when all packets of a key reach one worker (one worker; key \"flow\" always meters this way, since a flow stays on its worker)"},
				{Name: "color_aware", Type: "bool", Default: "false", Doc: "meter colour-aware (RFC 2697 and RFC 2698, the colour-aware mode): a packet's colour so far comes from its DSCP's drop precedence (RFC 2597: AFx1 green, AFx2 yellow, AFx3 red; every other code point, and a non-IP frame, green), and a packet is never given a better colour than it came with; false: colour-blind"},
			},
			Stats: "counters \"green\", \"yellow\", \"red\": packets of each colour; \"remarked\": packets whose DSCP was rewritten; \"not ip\": packets a dscp action could not re-mark (passed unchanged); \"evictions\": keyed meters given up before they were full. " +
				"Drop reasons \"policed green\", \"policed yellow\", \"policed red\": packets of a colour whose action is drop.",
			Example: `"cls[1] -> Policer(10Mbit, 64KB) -> rt"` + "\n" +
				`"lcls[2] -> CheckIPHeader -> up -> DecTTL -> rt" with [elements.up]: type = "Policer", rate = "20Mbit", burst = "250KB", key = "src/32" (each inside host at most 20 Mbit/s)`,
			SeeAlso: "Shaper, SetDSCP, docs/qos.md",
			Text: "A single-rate three-colour marker (RFC 2697) has a committed bucket of burst bytes and an excess bucket of excess_burst bytes, both refilled at rate; a two-rate one (RFC 2698, peak_rate set) has a committed bucket refilled at rate and a peak bucket refilled at peak_rate. Both start full. Metering is colour-blind, or colour-aware with color_aware. " +
				"A packet costs its bytes from the IP header on. Token arithmetic is exact (integer credits, no rounding), and the clock is read once per batch. " +
				"Policing drops what exceeds the rate at once, which TCP reads as loss: a TCP flow policed below its rate may settle well below it, where a Shaper, which queues the excess, keeps it at the rate (docs/qos.md shows both measured).",
		},
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
