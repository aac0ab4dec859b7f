package qos

import (
	"math"
	"testing"

	"github.com/junction-dataplane/junction/elements"
	"github.com/junction-dataplane/junction/elements/elementtest"
	"github.com/junction-dataplane/junction/packet"
)

const ms = 1_000_000 // nanoseconds

// TestCoDelControlLaw: the next drop is due interval/sqrt(count) after the
// last (RFC 8289 5.5), to the nanosecond.
func TestCoDelControlLaw(t *testing.T) {
	for _, c := range []struct {
		count uint32
		want  int64
	}{{0, 100 * ms}, {1, 100 * ms}, {2, 70_710_678}, {4, 50 * ms}, {16, 25 * ms}, {100, 10 * ms}, {10000, 1 * ms}} {
		if got := controlLaw(7, 100*ms, c.count) - 7; got != c.want {
			t.Errorf("count %d: next drop %d ns later, want %d", c.count, got, c.want)
		}
	}
}

// TestCoDelStateMachine drives one band's CoDel as RFC 8289's pseudocode
// does (target 5 ms, interval 100 ms), a packet leaving every millisecond
// with a plenty of backlog behind it:
//   - below target, nothing is dropped, however long;
//   - above target, nothing is dropped during the first interval; the
//     first packet at or after it is, and the state is dropping;
//   - then the n-th drop comes interval/sqrt(n-1) after the one before
//     (100, 70.7, 57.7, 50 ms...);
//   - once the sojourn time falls below target, no more drops, the state
//     leaves dropping;
//   - above target again soon after (within 16 intervals), it waits an
//     interval again, then starts from the count it had reached less the
//     count at the last entry (RFC 8289 5.6), not from one;
//   - a band too short to be a standing queue (one packet's worth) is
//     never judged;
//   - ECN-capable packets are marked instead of dropped, with ECN on.
func TestCoDelStateMachine(t *testing.T) {
	pr := &codelParams{on: true, target: 5 * ms, interval: 100 * ms, ecn: true}
	var c codel
	const backlog = 100_000
	now := int64(1000 * ms)
	step := func(sojourn int64) verdict {
		now += ms
		return c.decide(pr, sojourn, now, backlog, false)
	}
	for range 1000 {
		if step(4*ms) != pass {
			t.Fatal("dropped below target")
		}
	}
	start := now
	var drops []int64
	for now < start+600*ms {
		if step(20*ms) == drop {
			drops = append(drops, now)
		}
	}
	if len(drops) == 0 || drops[0] != start+101*ms {
		t.Fatalf("drops at %v ms, want the first at %d ms (the first packet an interval after the sojourn time went above target)", rel(drops, start), 101)
	}
	if !c.dropping {
		t.Fatal("not dropping after the first drop")
	}
	for i := 1; i < len(drops); i++ {
		// Each drop is the first packet (1 ms apart) at or after its due time.
		gap := float64(drops[i]-drops[i-1]) / ms
		want := 100 / math.Sqrt(float64(i))
		if gap < want-1 || gap > want+1 {
			t.Errorf("drop %d came %.1f ms after the one before, want %.1f (interval/sqrt(%d))", i+1, gap, want, i)
		}
	}
	t.Logf("drops at %v ms after the sojourn time went above target", rel(drops, start))
	reached := c.count
	for range 50 {
		if step(2*ms) != pass {
			t.Fatal("dropped after the sojourn time fell below target")
		}
	}
	if c.dropping {
		t.Fatal("still dropping below target")
	}
	// Above target again, 50 ms later: an interval first, then the
	// count carried over.
	again := now
	var first int64
	for now < again+200*ms && first == 0 {
		if step(20*ms) == drop {
			first = now
		}
	}
	if first != again+101*ms {
		t.Errorf("second episode's first drop %d ms after it began, want 101", (first-again)/ms)
	}
	if want := reached - 1; c.count != want {
		t.Errorf("second episode starts at count %d, want %d (the %d drops reached less the 1 of the last entry)", c.count, want, reached)
	}
	// A single packet's worth queued: never judged, and the clock of
	// "above target" starts over.
	c = codel{}
	for range 500 {
		now += ms
		if c.decide(pr, 50*ms, now, maxPacket, false) != pass {
			t.Fatal("dropped with a packet's worth queued")
		}
	}
	// ECN-capable: marked where it would be dropped.
	c = codel{}
	var marks int
	for range 300 {
		now += ms
		switch c.decide(pr, 20*ms, now, backlog, true) {
		case mark:
			marks++
		case drop:
			t.Fatal("an ECN-capable packet dropped with ecn on")
		}
	}
	if marks == 0 {
		t.Fatal("no mark in 300 ms above target")
	}
}

func rel(at []int64, start int64) []int64 {
	var r []int64
	for _, x := range at {
		r = append(r, (x-start)/ms)
	}
	return r
}

// ecnFrame is frame4 with ECN field e (0: not ECT, 1 or 2: ECT, 3: CE).
func ecnFrame(n int, e uint8) []byte {
	f := frame4("10.0.0.1", "10.9.0.1", n, 0)
	h := packet.IPv4(f[14:])
	h.SetTOS(h.TOS()&^3 | e)
	h.SetChecksum(h.ComputeChecksum())
	return f
}

// TestShaperCoDel: a Shaper at 8 Mbit/s (a 1000-byte packet a ms) fed
// 1000-byte packets at 1.1 times its rate for 6 s (an unresponsive
// source: the excess is what must go), non-ECT, ECT(0), IPv6 ECT(0).
// Drop tail (aqm = "off") lets the queue stand and grow to its limit
// (512 packets, 512 ms of delay), then drops its tail. With CoDel, the
// non-ECT packets are dropped (counted under "codel") and the queue never
// reaches its limit; ECT packets are marked CE instead (with a correct
// IPv4 checksum), none dropped by CoDel (marks slow a sender down, not
// this one); with ecn = false they are dropped.
func TestShaperCoDel(t *testing.T) {
	for _, mode := range []string{"off", "codel non-ECT", "codel ECT(0)", "codel IPv6 ECT(0)", "codel ECT, ecn off"} {
		cfg := shaperConfig(8_000_000)
		cfg.Burst = 2000
		if mode == "off" {
			cfg.AQM = "off"
		}
		cfg.ECN = mode != "codel ECT, ecn off"
		h, s, c := shaper(t, cfg, &elementtest.Options{PoolSize: 2048})
		var sink ecnSink
		h.Outputs[0].Connect(&sink, 0, &elements.Stats{})
		var f []byte
		switch mode {
		case "off", "codel non-ECT":
			f = ecnFrame(1000, 0)
		case "codel ECT(0)", "codel ECT, ecn off":
			f = ecnFrame(1000, 2)
		default:
			f = frame6("2001:db8::1", "2001:db8::2", 1000, 0) // ECT(0) in its traffic class
		}
		var maxQueue int
		for c.t = 0; c.t < 6000*ms; c.t += 909_091 { // 1.1 packets a ms
			h.Push(0, f)
			if w := s.NextWake(); w != elements.NoWake && w <= c.t {
				s.Wake(c.t)
			}
			maxQueue = max(maxQueue, s.queued)
		}
		full, dropped, marked := h.Counter("queue full"), h.Counter("codel"), h.Counter("ce marked")
		t.Logf("%s: queue up to %d packets; queue full %d, codel drops %d, marked %d, sent %d (CE %d, bad checksums %d)",
			mode, maxQueue, full, dropped, marked, sink.n, sink.ce, sink.bad)
		if sink.bad != 0 {
			t.Errorf("%s: %d packets left with a wrong IPv4 header checksum", mode, sink.bad)
		}
		switch mode {
		case "off":
			if maxQueue != cfg.Queue || full == 0 || dropped+marked != 0 {
				t.Errorf("drop tail: queue %d, queue full %d, codel %d, marked %d; want the queue full (%d) and only tail drops", maxQueue, full, dropped, marked, cfg.Queue)
			}
		case "codel non-ECT", "codel ECT, ecn off":
			if dropped == 0 || marked != 0 || sink.ce != 0 {
				t.Errorf("%s: codel drops %d, marked %d, want drops and no marks", mode, dropped, marked)
			}
		default:
			if marked == 0 || dropped != 0 || uint64(sink.ce) != marked {
				t.Errorf("%s: marked %d (CE seen %d), codel drops %d; want marks and no codel drop", mode, marked, sink.ce, dropped)
			}
		}
		if mode != "off" && mode != "codel ECT(0)" && mode != "codel IPv6 ECT(0)" && maxQueue >= cfg.Queue {
			t.Errorf("%s: the queue reached %d packets (limit %d, %d tail drops): CoDel's drops should have kept it below", mode, maxQueue, cfg.Queue, full)
		}
		h.Reset()
		s.Close()
		h.CheckNoLeak()
	}
}

// ecnSink frees what it gets, counting the packets, those marked CE, and
// IPv4 headers whose checksum does not verify.
type ecnSink struct{ n, ce, bad int }

func (s *ecnSink) Push(_ int, b *packet.Batch) {
	for _, p := range b.Pkts {
		s.n++
		h := p.Data[p.L3:]
		switch h[0] >> 4 {
		case 4:
			if h[1]&3 == 3 {
				s.ce++
			}
			if !packet.IPv4(h).ChecksumValid() {
				s.bad++
			}
		case 6:
			if h[1]>>4&3 == 3 {
				s.ce++
			}
		}
	}
	b.FreeAll()
}

// TestShaperCoDelAllocs: queuing, judging, dropping and marking allocate
// nothing.
func TestShaperCoDelAllocs(t *testing.T) {
	for _, e := range []uint8{0, 2} {
		cfg := shaperConfig(8_000_000)
		cfg.Burst = 2000
		h, s, c := shaper(t, cfg, &elementtest.Options{PoolSize: 4096})
		sink := &ecnSink{}
		h.Outputs[0].Connect(sink, 0, &elements.Stats{})
		f := ecnFrame(1000, e)
		p := h.Pool
		b := packet.NewBatch(4)
		n := testing.AllocsPerRun(2000, func() {
			b.Reset()
			for range 2 {
				q := p.Get()
				q.SetFrame(f)
				b.Add(q)
			}
			s.Push(0, b)
			c.t += ms
			if w := s.NextWake(); w != elements.NoWake && w <= c.t {
				s.Wake(c.t)
			}
		})
		if n != 0 {
			t.Errorf("ECN %d: %.1f allocations a round", e, n)
		}
		if h.Counter("codel")+h.Counter("ce marked") == 0 {
			t.Errorf("ECN %d: CoDel never acted: the test measured nothing", e)
		}
		s.Close()
	}
}
