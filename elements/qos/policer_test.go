package qos

import (
	"strconv"
	"strings"
	"testing"

	"github.com/junction-dataplane/junction/elements/elementtest"
	"github.com/junction-dataplane/junction/packet"
)

// colourer returns a Policer whose colours go to outputs 0 (green), 1
// (yellow) and 2 (red), and a function that pushes one packet at a time
// and says its colour.
func colourer(t *testing.T, cfg *PolicerConfig) (*elementtest.Harness, *Policer, *clock, func(f []byte) string) {
	t.Helper()
	cfg.Green, cfg.Yellow, cfg.Red = "pass", "out 1", "out 2"
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	h, p, c := policer(t, cfg, nil)
	return h, p, c, func(f []byte) string {
		var before [3]int
		for i := range before {
			before[i] = len(h.Outs[i].Pkts)
		}
		h.Push(0, f)
		for i := range before {
			if len(h.Outs[i].Pkts) > before[i] {
				return colourNames[i]
			}
		}
		t.Fatal("packet went nowhere")
		return ""
	}
}

// pkt is an IPv4 packet of n bytes (IP header on) from 10.0.0.1.
func pkt(n int) []byte { return frame4("10.0.0.1", "10.9.0.1", n, 0) }

const us = 1000 // nanoseconds

// TestSrTCM checks RFC 2697's single-rate three-colour marker (section 3,
// colour-blind) to the byte. CIR 8 Mbit/s is one byte per microsecond;
// CBS 2000, EBS 1000; both buckets start full (section 3).
func TestSrTCM(t *testing.T) {
	cfg := defaults(8_000_000)
	cfg.Burst, cfg.ExcessBurst = 2000, 1000
	h, p, c, colour := colourer(t, cfg)
	steps := []struct {
		at     int64 // microseconds
		size   int
		want   string
		tc, te int64 // bytes left in Tc and Te afterwards
	}{
		{0, 1500, "green", 500, 1000},   // Tc-B >= 0: green, Tc -= B
		{0, 1500, "red", 500, 1000},     // neither bucket holds B: red, nothing taken
		{0, 1000, "yellow", 500, 0},     // Tc < B <= Te: yellow, Te -= B
		{1000, 1500, "green", 0, 0},     // 1000 us earned 1000 bytes into Tc (500+1000)
		{3500, 600, "green", 1400, 500}, // 2500 earned: Tc fills to CBS, the 500 beyond go to Te
		{3500, 1600, "red", 1400, 500},  // 1400 < 1600 and 500 < 1600
		{3500, 500, "green", 900, 500},
		{100000, 1600, "green", 400, 1000}, // idle long enough: both full again
	}
	for i, s := range steps {
		c.t = s.at * us
		if got := colour(pkt(s.size)); got != s.want {
			t.Fatalf("step %d (t=%d us, %d bytes): %s, want %s", i, s.at, s.size, got, s.want)
		}
		if p.one.c != s.tc*creditsPerByte || p.one.e != s.te*creditsPerByte {
			t.Fatalf("step %d: Tc %d Te %d credits, want %d and %d bytes' worth", i, p.one.c, p.one.e, s.tc, s.te)
		}
	}
	if h.Counter("green") != 5 || h.Counter("yellow") != 1 || h.Counter("red") != 2 {
		t.Errorf("counters %v", h.Stats.Counters())
	}
	// Fractions of a byte are kept, not rounded away: 8 Mbit/s earns one
	// byte per microsecond, so 999 ns earn 999/1000 of a byte.
	c.t = 200000 * us
	colour(pkt(1900)) // green: Tc 100
	colour(pkt(100))  // green: Tc 0
	c.t += 999
	colour(pkt(1900)) // red (Te 1000 < 1900); Tc refilled by 999 ns' worth
	if p.one.c != 999*8_000_000 {
		t.Fatalf("Tc %d credits after 999 ns, want %d", p.one.c, 999*8_000_000)
	}
	h.Reset()
}

// TestTrTCM checks RFC 2698's two-rate three-colour marker (section 3,
// colour-blind): CIR 8 Mbit/s (1 byte/us), PIR 16 Mbit/s (2 bytes/us),
// CBS 2000, PBS 3000.
func TestTrTCM(t *testing.T) {
	cfg := defaults(8_000_000)
	cfg.Burst, cfg.PeakRate, cfg.PeakBurst = 2000, 16_000_000, 3000
	_, p, c, colour := colourer(t, cfg)
	steps := []struct {
		at     int64 // microseconds
		size   int
		want   string
		tc, tp int64 // bytes left in Tc and Tp afterwards
	}{
		{0, 1500, "green", 500, 1500}, // Tp and Tc hold B: green, both -= B
		{0, 1000, "yellow", 500, 500}, // Tp holds B, Tc does not: yellow, Tp -= B
		{0, 1000, "red", 500, 500},    // Tp - B < 0: red, nothing taken
		{500, 1000, "green", 0, 500},  // 500 us: Tc +500, Tp +1000
		{500, 501, "red", 0, 500},
		{2000, 1800, "yellow", 1500, 1200}, // 1500 us: Tc +1500, Tp +3000 capped at PBS 3000
	}
	for i, s := range steps {
		c.t = s.at * us
		if got := colour(pkt(s.size)); got != s.want {
			t.Fatalf("step %d (t=%d us, %d bytes): %s, want %s", i, s.at, s.size, got, s.want)
		}
		if p.one.c != s.tc*creditsPerByte || p.one.e != s.tp*creditsPerByte {
			t.Fatalf("step %d: Tc %d Tp %d credits, want %d and %d bytes' worth", i, p.one.c, p.one.e, s.tc, s.tp)
		}
	}
}

// TestPolicerRate: over a simulated 10 s of 1000-byte packets offered at
// twice the rate, a two-colour policer passes the rate plus its burst,
// to the byte.
func TestPolicerRate(t *testing.T) {
	cfg := defaults(20_000_000) // 2.5 bytes/us
	cfg.Burst = 25000
	h, _, c := policer(t, cfg, &elementtest.Options{Sink: true})
	f := pkt(1000)
	for c.t = 0; c.t <= 10e9; c.t += 200 * us { // 5000 B/ms offered, 2500 B/ms allowed
		h.Push(0, f)
	}
	passed := h.Counter("green") * 1000
	want := uint64(10*20_000_000/8 + 25000)
	if passed > want || passed < want-1000 {
		t.Fatalf("passed %d bytes in 10 s, want %d (rate x 10 s + burst) within a packet", passed, want)
	}
	if h.Counter("policed red") != h.Counter("red") || h.Stats.Drops() != h.Counter("red") {
		t.Errorf("red packets not counted as drops: %v", h.Stats.Counters())
	}
}

// TestPolicerKeys: src/24 and dst/32 keys give each prefix (host) its own
// meter; IPv6 keys use prefix6; key flow gives each flow one.
func TestPolicerKeys(t *testing.T) {
	type send struct {
		frame []byte
		want  string
	}
	a1 := frame4("10.0.0.1", "10.9.0.1", 1500, 0)
	a2 := frame4("10.0.0.2", "10.9.0.2", 1500, 0)
	b1 := frame4("10.0.1.1", "10.9.0.1", 1500, 0)
	v6a := frame6("2001:db8:1::1", "2001:db8:9::1", 1500, 0)
	v6b := frame6("2001:db8:1::2", "2001:db8:9::1", 1500, 0)
	v6c := frame6("2001:db8:2::1", "2001:db8:9::1", 1500, 0)
	tests := []struct {
		key   string
		sends []send
	}{
		// One 2000-byte bucket per /24: the second packet of 10.0.0.0/24
		// is red, whichever host sent it; 10.0.1.0/24 has its own.
		{"src/24", []send{{a1, "green"}, {a2, "red"}, {b1, "green"}, {b1, "red"}}},
		{"src/32", []send{{a1, "green"}, {a2, "green"}, {a1, "red"}, {a2, "red"}}},
		// By destination: a1 and b1 go to 10.9.0.1.
		{"dst/32", []send{{a1, "green"}, {b1, "red"}, {a2, "green"}}},
		// IPv6 by /64 (prefix6's default): ::1 and ::2 share one.
		{"src/32", []send{{v6a, "green"}, {v6b, "red"}, {v6c, "green"}}},
		{"flow", []send{{a1, "green"}, {a1, "red"}, {a2, "green"}, {b1, "green"}}},
		{"element", []send{{a1, "green"}, {b1, "red"}}},
	}
	for _, tt := range tests {
		cfg := defaults(8_000_000)
		cfg.Burst, cfg.Key = 2000, tt.key
		_, _, _, colour := colourer(t, cfg)
		for i, s := range tt.sends {
			if got := colour(s.frame); got != s.want {
				t.Errorf("key %s, packet %d: %s, want %s", tt.key, i, got, s.want)
			}
		}
	}
}

// TestPolicerTableBounded: a table of 16 meters keeps working for 1000
// hosts: each new host gets a full meter, the evicted ones are counted
// only if they were not full, and nothing grows.
func TestPolicerTableBounded(t *testing.T) {
	cfg := defaults(8_000_000)
	cfg.Burst, cfg.Key, cfg.Capacity = 2000, "src/32", 16
	h, p, c := policer(t, cfg, &elementtest.Options{Sink: true})
	for i := 0; i < 1000; i++ {
		h.Push(0, frame4("10.1."+strconv.Itoa(i/250)+"."+strconv.Itoa(i%250+1), "10.9.0.1", 1500, 0))
	}
	if g := h.Counter("green"); g != 1000 {
		t.Errorf("%d of 1000 new hosts green", g)
	}
	if len(p.t.e) != 16 {
		t.Errorf("table has %d entries", len(p.t.e))
	}
	if h.Counter("evictions") == 0 {
		t.Error("no eviction counted for meters taken while not full")
	}
	// Long idle meters are full: evicting them is not counted.
	ev := h.Counter("evictions")
	c.t = 10e9
	for i := 0; i < 16; i++ {
		h.Push(0, frame4("10.2.0."+strconv.Itoa(i+1), "10.9.0.1", 100, 0))
	}
	c.t = 20e9
	for i := 0; i < 16; i++ {
		h.Push(0, frame4("10.3.0."+strconv.Itoa(i+1), "10.9.0.1", 100, 0))
	}
	if h.Counter("evictions") != ev {
		t.Errorf("evictions of full meters counted: %d -> %d", ev, h.Counter("evictions"))
	}
}

// TestPolicerActions: dscp re-marks IPv4 with a checksum equal to a full
// recomputation and IPv6's traffic class, keeping ECN; out N diverts;
// drop counts under the colour's reason.
func TestPolicerActions(t *testing.T) {
	cfg := defaults(8_000_000)
	cfg.Burst, cfg.ExcessBurst = 2000, 3000
	cfg.Green, cfg.Yellow, cfg.Red = "dscp ef", "dscp af12 out 1", "drop"
	h, _, _ := policer(t, cfg, nil)
	if _, out := cfg.Ports(); out != 2 {
		t.Fatalf("%d outputs, want 2", out)
	}
	h.Push(0, frame4("10.0.0.1", "10.9.0.1", 1500, 0), frame6("2001:db8::1", "2001:db8::2", 1500, 10),
		frame4("10.0.0.1", "10.9.0.1", 1500, 0), frame4("10.0.0.1", "10.9.0.1", 1500, 0))
	g, y := h.Outs[0].Pkts, h.Outs[1].Pkts
	if len(g) != 1 || len(y) != 2 || h.Counter("policed red") != 1 {
		t.Fatalf("green %d yellow %d red dropped %d", len(g), len(y), h.Counter("policed red"))
	}
	v4 := packet.IPv4(g[0].Data[14:])
	if v4.TOS() != 46<<2|1 || !v4.ChecksumValid() {
		t.Errorf("green IPv4: TOS %#x checksum valid %v", v4.TOS(), v4.ChecksumValid())
	}
	v6 := y[0].Data[14:]
	if d := dscpOf(y[0]); d != 12 || (v6[1]>>4)&3 != 2 || v6[0]>>4 != 6 {
		t.Errorf("yellow IPv6: DSCP %d, bytes %x", d, v6[:2])
	}
	if v4 := packet.IPv4(y[1].Data[14:]); v4.TOS()>>2 != 12 || !v4.ChecksumValid() {
		t.Errorf("yellow IPv4: TOS %#x, checksum valid %v", v4.TOS(), v4.ChecksumValid())
	}
	if h.Counter("remarked") != 3 {
		t.Errorf("remarked %d", h.Counter("remarked"))
	}
	h.Reset()
	h.CheckNoLeak()
}

// TestPolicerShare: split gives each of two workers half the rate and
// burst (never less than a full-size frame); each gives both the whole.
func TestPolicerShare(t *testing.T) {
	for _, tt := range []struct {
		share string
		cir   int64
	}{{"split", 10_000_000}, {"each", 20_000_000}} {
		cfg := defaults(20_000_000)
		cfg.Share = tt.share
		_, p, _ := policer(t, cfg, &elementtest.Options{Workers: 2})
		if p.pr.cir != tt.cir || p.pr.cbs != tt.cir/8/100*creditsPerByte {
			t.Errorf("share %s: CIR %d CBS %d", tt.share, p.pr.cir, p.pr.cbs/creditsPerByte)
		}
	}
	cfg := defaults(1_000_000) // default burst 3000: 1500 a worker of two
	_, p, _ := policer(t, cfg, &elementtest.Options{Workers: 2})
	if p.pr.cbs != minBurst*creditsPerByte {
		t.Errorf("split 3000-byte burst over 2 workers: %d bytes each, want %d", p.pr.cbs/creditsPerByte, minBurst)
	}
}

// TestPolicerConfigErrors: bad rates, bursts, keys and actions are
// refused, naming the key.
func TestPolicerConfigErrors(t *testing.T) {
	ok := func() *PolicerConfig { c := defaults(20_000_000); return c }
	tests := []struct {
		key  string
		edit func(c *PolicerConfig)
	}{
		{"rate", func(c *PolicerConfig) { c.Rate = 0 }},
		{"rate", func(c *PolicerConfig) { c.Rate = MaxRate + 1 }},
		{"burst", func(c *PolicerConfig) { c.Burst = 100 }},
		{"burst", func(c *PolicerConfig) { c.Burst = MaxBurst + 1 }},
		{"peak_rate", func(c *PolicerConfig) { c.PeakRate = 10_000_000 }},
		{"excess_burst", func(c *PolicerConfig) { c.PeakRate, c.ExcessBurst = 30_000_000, 5000 }},
		{"peak_burst", func(c *PolicerConfig) { c.PeakBurst = 5000 }},
		{"key", func(c *PolicerConfig) { c.Key = "src/33" }},
		{"key", func(c *PolicerConfig) { c.Key = "source/24" }},
		{"prefix6", func(c *PolicerConfig) { c.Prefix6 = 129 }},
		{"capacity", func(c *PolicerConfig) { c.Capacity = 0 }},
		{"red", func(c *PolicerConfig) { c.Red = "dscp 64" }},
		{"yellow", func(c *PolicerConfig) { c.Yellow = "out 9" }},
		{"green", func(c *PolicerConfig) { c.Green = "forward" }},
		{"share", func(c *PolicerConfig) { c.Share = "half" }},
	}
	for _, tt := range tests {
		c := ok()
		tt.edit(c)
		err := c.Validate()
		if err == nil || !strings.Contains(err.Error(), `key "`+tt.key+`"`) {
			t.Errorf("%s: %v", tt.key, err)
		}
	}
	if err := ok().Validate(); err != nil {
		t.Errorf("defaults: %v", err)
	}
}

// TestUnits: rates and sizes with units, and what they refuse.
func TestUnits(t *testing.T) {
	rates := map[string]Rate{"20Mbit": 20e6, "1.5Gbit": 1.5e9, "800kbit": 800e3, "20M": 20e6,
		"64000": 64000, "10mbps": 10e6, "100 Mbit/s": 100e6, "1_000kbit": 1e6}
	for s, want := range rates {
		var r Rate
		if err := r.UnmarshalText([]byte(s)); err != nil || r != want {
			t.Errorf("rate %q: %d %v, want %d", s, r, err, want)
		}
	}
	for _, s := range []string{"", "-5Mbit", "20Xbit", "Mbit", "1e", "NaNbit", "20 Mbyte", "99999999999Tbit"} {
		var r Rate
		if err := r.UnmarshalText([]byte(s)); err == nil {
			t.Errorf("rate %q accepted as %d", s, r)
		}
	}
	sizes := map[string]Size{"1500": 1500, "64KB": 64000, "64k": 64000, "64KiB": 65536, "1MiB": 1 << 20, "2mb": 2e6}
	for s, want := range sizes {
		var z Size
		if err := z.UnmarshalText([]byte(s)); err != nil || z != want {
			t.Errorf("size %q: %d %v, want %d", s, z, err, want)
		}
	}
	for _, s := range []string{"-1", "64Kbit", "x"} {
		var z Size
		if err := z.UnmarshalText([]byte(s)); err == nil {
			t.Errorf("size %q accepted as %d", s, z)
		}
	}
	if Rate(20e6).String() != "20Mbit" || Rate(1500).String() != "1500bit" || Size(64000).String() != "64KB" {
		t.Errorf("String: %s %s %s", Rate(20e6), Rate(1500), Size(64000))
	}
	dscps := map[string]uint8{"ef": 46, "EF": 46, "af11": 10, "af43": 38, "cs6": 48, "be": 0, "va": 44, "0x2e": 46, "63": 63}
	for s, want := range dscps {
		if d, err := parseDSCP(s); err != nil || d != want {
			t.Errorf("dscp %q: %d %v, want %d", s, d, err, want)
		}
	}
	for _, s := range []string{"64", "af44", "cs8", "ef1", ""} {
		if _, err := parseDSCP(s); err == nil {
			t.Errorf("dscp %q accepted", s)
		}
	}
}

// TestColourAware checks the colour-aware modes (RFC 2697 section 4,
// RFC 2698 section 3) with the precolour from RFC 2597's drop precedence:
// AF11 green, AF12 yellow, AF13 red, others green. A packet never leaves
// with a better colour than it came with, and takes tokens only from the
// buckets its colour uses.
func TestColourAware(t *testing.T) {
	af := func(dscp uint8, n int) []byte { return frame4("10.0.0.1", "10.9.0.1", n, dscp) }
	const af11, af12, af13, ef = 10, 12, 14, 46

	cfg := defaults(8_000_000)
	cfg.Burst, cfg.ExcessBurst, cfg.ColorAware = 2000, 1000, true
	_, p, _, colour := colourer(t, cfg)
	steps := []struct {
		frame  []byte
		want   string
		tc, te int64
	}{
		{af(af12, 500), "yellow", 2000, 500}, // came yellow: Te only, though Tc holds it
		{af(af13, 100), "red", 2000, 500},    // came red: red, nothing taken
		{af(af11, 1500), "green", 500, 500},  // came green, Tc holds it
		{af(ef, 500), "green", 0, 500},       // EF: green so far
		{af(af11, 400), "yellow", 0, 100},    // green, Tc short: yellow from Te
		{af(af11, 400), "red", 0, 100},
	}
	for i, s := range steps {
		if got := colour(s.frame); got != s.want {
			t.Fatalf("srTCM step %d: %s, want %s", i, got, s.want)
		}
		if p.one.c != s.tc*creditsPerByte || p.one.e != s.te*creditsPerByte {
			t.Fatalf("srTCM step %d: Tc %d Te %d bytes, want %d %d", i, p.one.c/creditsPerByte, p.one.e/creditsPerByte, s.tc, s.te)
		}
	}

	cfg = defaults(8_000_000)
	cfg.Burst, cfg.PeakRate, cfg.PeakBurst, cfg.ColorAware = 2000, 16_000_000, 3000, true
	_, p, _, colour = colourer(t, cfg)
	steps = []struct {
		frame  []byte
		want   string
		tc, te int64
	}{
		{af(af13, 100), "red", 2000, 3000},    // came red: red, nothing taken
		{af(af12, 500), "yellow", 2000, 2500}, // came yellow: Tp only
		{af(af11, 1500), "green", 500, 1000},  // both
		{af(af11, 600), "yellow", 500, 400},   // Tc short
		{af(af11, 600), "red", 500, 400},      // Tp short
	}
	for i, s := range steps {
		if got := colour(s.frame); got != s.want {
			t.Fatalf("trTCM step %d: %s, want %s", i, got, s.want)
		}
		if p.one.c != s.tc*creditsPerByte || p.one.e != s.te*creditsPerByte {
			t.Fatalf("trTCM step %d: Tc %d Tp %d bytes, want %d %d", i, p.one.c/creditsPerByte, p.one.e/creditsPerByte, s.tc, s.te)
		}
	}
}
