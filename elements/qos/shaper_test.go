package qos

import (
	"strings"
	"testing"
	"time"

	"github.com/junction-dataplane/junction/elements"
	"github.com/junction-dataplane/junction/elements/elementtest"
	"github.com/junction-dataplane/junction/packet"
)

// shaper builds a Shaper with cfg on a fake clock at 0.
func shaper(t testing.TB, cfg *ShaperConfig, o *elementtest.Options) (*elementtest.Harness, *Shaper, *clock) {
	t.Helper()
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	h := elementtest.New(t, "Shaper", cfg, o)
	s := h.Element.(*Shaper)
	c := &clock{}
	s.now = c.now
	return h, s, c
}

func shaperConfig(rate Rate) *ShaperConfig {
	c := mustLookup("Shaper").NewConfig().(*ShaperConfig)
	c.Rate = rate
	return c
}

// TestShaperDepartures: at 8 Mbit/s (one byte per microsecond) with a
// 4000-byte bucket, ten 1000-byte packets offered at once: four leave at
// once (the burst), each other one exactly 1000 us after the one before,
// when the worker wakes the shaper at the time NextWake gives.
func TestShaperDepartures(t *testing.T) {
	cfg := shaperConfig(8_000_000)
	cfg.Burst = 4000
	h, s, c := shaper(t, cfg, &elementtest.Options{PoolSize: 64})
	var fs [][]byte
	for i := 0; i < 10; i++ {
		fs = append(fs, pkt(1000))
	}
	h.Push(0, fs...)
	if got := len(h.Outs[0].Pkts); got != 4 {
		t.Fatalf("%d packets left at once, want 4", got)
	}
	var times []int64
	for len(h.Outs[0].Pkts) < 10 {
		next := s.NextWake()
		if next == elements.NoWake {
			t.Fatal("packets queued but no wake time")
		}
		// Woken a nanosecond early, nothing may leave.
		c.t = next - 1
		if s.Wake(c.t) != 0 {
			t.Fatalf("a packet left at %d, before its time %d", c.t, next)
		}
		c.t = next
		if n := s.Wake(c.t); n != 1 {
			t.Fatalf("%d packets left at %d, want 1", n, next)
		}
		times = append(times, c.t)
	}
	for i, at := range times {
		if want := int64(i+1) * 1000 * us; at != want {
			t.Errorf("packet %d left at %d ns, want %d", i+4, at, want)
		}
	}
	if s.NextWake() != elements.NoWake {
		t.Error("empty shaper still asks to be woken")
	}
	if h.Counter("delayed") != 6 || h.Counter("sent") != 10 {
		t.Errorf("counters %v", h.Stats.Counters())
	}
}

// TestShaperRate: 10 simulated seconds of traffic offered at 1.5 times
// the rate in batches of mixed sizes, the worker waking the shaper when it
// asks, or (a worker waiting for its CPU) 0.7 ms or 30 ms later, far
// beyond the burst's 2 ms: the bytes sent are the rate times the time
// plus the burst, within one packet (and what the last late wake-up still
// owes).
func TestShaperRate(t *testing.T) {
	for _, lateness := range []int64{0, 700 * us, 30_000 * us} {
		cfg := shaperConfig(20_000_000) // 2500 bytes/ms
		cfg.Queue = 4096
		h, s, c := shaper(t, cfg, &elementtest.Options{PoolSize: 8192})
		sink := &byteSink{}
		h.Outputs[0].Connect(sink, 0, &elements.Stats{})
		sizes := []int{1500, 64, 576, 1500, 1200}
		var sent uint64
		nextArrival := int64(0)
		const end = 10e9
		for c.t < end {
			if c.t >= nextArrival {
				// 3750 bytes/ms offered: one 1500-byte-average batch of 5 every 1.29 ms.
				var fs [][]byte
				for _, n := range sizes {
					fs = append(fs, pkt(n))
				}
				h.Push(0, fs...)
				nextArrival += 1289 * us
			}
			w := s.NextWake()
			if w != elements.NoWake && w <= c.t {
				s.Wake(c.t)
			}
			// The next event: an arrival or a wake (plus the lateness).
			c.t = min(nextArrival, max(s.NextWake(), c.t)+lateness)
			if s.NextWake() == elements.NoWake {
				c.t = nextArrival
			}
		}
		sent = sink.bytes
		want := uint64(10*20_000_000/8) + uint64(s.max/creditsPerByte)
		// At the end, a late wake-up may still owe what its lateness
		// delayed.
		owed := uint64(lateness) * 20_000_000 / 8e9
		if sent > want || sent+1500+owed < want {
			t.Errorf("lateness %d us: sent %d bytes in 10 s, want %d (rate x time + burst) within a packet and %d owed", lateness/us, sent, want, owed)
		}
		if h.Counter("queue full") == 0 {
			t.Errorf("offered 1.5x the rate for 10 s into a 4096-packet queue, no drop")
		}
		t.Logf("lateness %d us: %d bytes (%.4f of rate x time + burst), %d dropped", lateness/us, sent, float64(sent)/float64(want), h.Counter("queue full"))
	}
}

// byteSink frees what it gets and counts its bytes from the IP header on.
type byteSink struct{ bytes uint64 }

func (s *byteSink) Push(_ int, b *packet.Batch) {
	for _, p := range b.Pkts {
		s.bytes += uint64(ipSize(p))
	}
	b.FreeAll()
}

// TestShaperPriority: with priority = ["ef"], EF packets queued after
// best-effort ones leave first; packets of one band keep their order.
func TestShaperPriority(t *testing.T) {
	cfg := shaperConfig(8_000_000)
	cfg.Burst = 2000
	cfg.Priority = []string{"ef"}
	h, s, c := shaper(t, cfg, nil)
	be := func(n int) []byte { return frame4("10.0.0.1", "10.9.0.1", n, 0) }
	ef := func(n int) []byte { return frame4("10.0.0.2", "10.9.0.1", n, 46) }
	v6ef := frame6("2001:db8::1", "2001:db8::2", 200, 46)
	h.Push(0, be(1500), be(1000), be(1001), ef(200), ef(201), v6ef)
	// The first BE packet took the burst (nothing was queued); then the
	// EF ones, in order, before the two waiting BE ones.
	for s.NextWake() != elements.NoWake {
		c.t = s.NextWake()
		s.Wake(c.t)
	}
	var order []int
	for _, p := range h.Outs[0].Pkts {
		order = append(order, ipSize(p))
	}
	want := []int{1500, 200, 201, 200, 1000, 1001}
	if len(order) != len(want) {
		t.Fatalf("sent %v, want %v", order, want)
	}
	for i := range want {
		if order[i] != want[i] {
			t.Fatalf("sent %v, want %v", order, want)
		}
	}
	h.Reset()
	h.CheckNoLeak()
}

// TestShaperQueueFull: a queue of 4 drops what does not fit, counted;
// Close drops what is still queued; no packet leaks.
func TestShaperQueueFull(t *testing.T) {
	cfg := shaperConfig(8_000_000)
	cfg.Burst, cfg.Queue = 2000, 4
	h, s, _ := shaper(t, cfg, nil)
	var fs [][]byte
	for i := 0; i < 20; i++ {
		fs = append(fs, pkt(1000))
	}
	h.Push(0, fs...)
	if len(h.Outs[0].Pkts) != 2 || h.Counter("queue full") != 14 || s.queued != 4 {
		t.Fatalf("sent %d, dropped %d, queued %d; want 2, 14, 4", len(h.Outs[0].Pkts), h.Counter("queue full"), s.queued)
	}
	if s.Retire() != 4 || h.Counter("shaper stopped") != 4 || s.NextWake() != elements.NoWake {
		t.Fatalf("retire: stopped %d", h.Counter("shaper stopped"))
	}
	h.Reset()
	h.CheckNoLeak()
}

// TestShaperConfigErrors: bad keys are refused, naming the key; the
// share split gives each worker its part.
func TestShaperConfigErrors(t *testing.T) {
	tests := []struct {
		key  string
		edit func(c *ShaperConfig)
	}{
		{"rate", func(c *ShaperConfig) { c.Rate = 0 }},
		{"rate", func(c *ShaperConfig) { c.Rate = MaxRate * 2 }},
		{"burst", func(c *ShaperConfig) { c.Burst = 1500 }},
		{"queue", func(c *ShaperConfig) { c.Queue = 0 }},
		{"queue", func(c *ShaperConfig) { c.Queue = maxQueue + 1 }},
		{"share", func(c *ShaperConfig) { c.Share = "" }},
		{"priority", func(c *ShaperConfig) { c.Priority = []string{"ef", "ef"} }},
		{"priority", func(c *ShaperConfig) { c.Priority = []string{""} }},
		{"priority", func(c *ShaperConfig) { c.Priority = []string{"eff"} }},
		{"priority", func(c *ShaperConfig) { c.Priority = strings.Fields("1 2 3 4 5 6 7 8") }},
		{"aqm", func(c *ShaperConfig) { c.AQM = "red" }},
		{"aqm", func(c *ShaperConfig) { c.AQM = "" }},
		{"interval", func(c *ShaperConfig) { c.Interval = 0 }},
		{"interval", func(c *ShaperConfig) { c.Interval = 11 * time.Second }},
		{"target", func(c *ShaperConfig) { c.Target = 0 }},
		{"target", func(c *ShaperConfig) { c.Target = c.Interval }},
	}
	for _, tt := range tests {
		c := shaperConfig(50_000_000)
		tt.edit(c)
		err := c.Validate()
		if err == nil || !strings.Contains(err.Error(), `key "`+tt.key+`"`) {
			t.Errorf("%s: %v", tt.key, err)
		}
	}
	_, s, _ := shaper(t, shaperConfig(50_000_000), &elementtest.Options{Workers: 2})
	if s.rate != 25_000_000 || s.max != 6250*creditsPerByte {
		t.Errorf("split over 2 workers: rate %d, burst %d", s.rate, s.max/creditsPerByte)
	}
}

// TestSetDSCP re-marks IPv4 (checksum still valid, ECN kept) and IPv6,
// and passes other frames unchanged, counted.
func TestSetDSCP(t *testing.T) {
	h := elementtest.New(t, "SetDSCP", &SetDSCPConfig{DSCP: 46}, nil)
	arp := make([]byte, 60)
	arp[12], arp[13] = 0x08, 0x06
	h.Push(0, frame4("10.0.0.1", "10.0.0.2", 100, 10), frame6("2001:db8::1", "2001:db8::2", 100, 10), arp)
	ps := h.Outs[0].Pkts
	v4 := packet.IPv4(ps[0].Data[14:])
	if v4.TOS() != 46<<2|1 || !v4.ChecksumValid() || dscpOf(ps[1]) != 46 || ps[1].Data[15]>>4&3 != 2 {
		t.Errorf("TOS %#x valid %v, IPv6 DSCP %d", v4.TOS(), v4.ChecksumValid(), dscpOf(ps[1]))
	}
	if h.Counter("remarked") != 2 || h.Counter("not ip") != 1 {
		t.Errorf("counters %v", h.Stats.Counters())
	}
}
