package qos

import (
	"fmt"
	"math/bits"
	"strings"
	"sync/atomic"
	"time"

	"github.com/junction-dataplane/junction/elements"
	"github.com/junction-dataplane/junction/packet"
)

func init() {
	elements.Register(elements.Type{
		Name:      "Shaper",
		NewConfig: func() any { return newShaperConfig() },
		New:       newShaper,
		In:        1,
		Out:       1,
		Doc:       shaperManual,
	})
}

// newShaperConfig is a config with every default.
func newShaperConfig() *ShaperConfig {
	return &ShaperConfig{Queue: 512, Share: shareSplit, AQM: aqmCoDel,
		Target: 5 * time.Millisecond, Interval: 100 * time.Millisecond, ECN: true}
}

// ShaperConfig is Shaper's config.
type ShaperConfig struct {
	Rate     Rate     `toml:"rate"`
	Burst    Size     `toml:"burst"`
	Queue    int      `toml:"queue"`
	Share    string   `toml:"share"`
	Priority []string `toml:"priority"`
	// AQM is the queue management: "codel" (RFC 8289) or "off" (drop
	// tail only).
	AQM      string        `toml:"aqm"`
	Target   time.Duration `toml:"target"`
	Interval time.Duration `toml:"interval"`
	ECN      bool          `toml:"ecn"`
}

// The aqm key's values.
const (
	aqmCoDel = "codel"
	aqmOff   = "off"
)

// Limits of a Shaper's keys.
const (
	minShaperBurst = packet.BufSize - packet.Headroom
	maxQueue       = 65536
	maxBands       = 8
	// maxLate is how late a wake-up may come and cost no rate: a worker
	// waiting for its CPU on a loaded machine wakes tens of milliseconds
	// late (through docs/qos.md's uplink at load 25 on 2 CPUs the shaper
	// sent 0.94 of its rate with 50 ms, 0.985-0.99 with 200 ms).
	maxLate = 200_000_000 // nanoseconds
)

// bandsOf maps every DSCP to its band from the priority key.
func (c *ShaperConfig) bandsOf() (byDSCP [64]uint8, bands int, err error) {
	if len(c.Priority) > maxBands-1 {
		return byDSCP, 0, fmt.Errorf("%d bands: at most %d", len(c.Priority), maxBands-1)
	}
	last := uint8(len(c.Priority))
	for i := range byDSCP {
		byDSCP[i] = last
	}
	seen := map[uint8]int{}
	for i, list := range c.Priority {
		f := strings.Fields(list)
		if len(f) == 0 {
			return byDSCP, 0, fmt.Errorf("band %d is empty: list its DSCPs (e.g. \"ef\")", i)
		}
		for _, s := range f {
			d, err := parseDSCP(s)
			if err != nil {
				return byDSCP, 0, err
			}
			if j, dup := seen[d]; dup {
				return byDSCP, 0, fmt.Errorf("DSCP %d is in band %d and band %d", d, j, i)
			}
			seen[d] = i
			byDSCP[d] = uint8(i)
		}
	}
	return byDSCP, len(c.Priority) + 1, nil
}

func (c *ShaperConfig) burst() Size {
	if c.Burst != 0 {
		return c.Burst
	}
	return defaultBurst(c.Rate, 500, 4000)
}

// Validate checks every key.
func (c *ShaperConfig) Validate() error {
	if err := checkRate(c.Rate); err != nil {
		return elements.Errorf("rate", "%v", err)
	}
	if c.Burst != 0 && c.Burst < minShaperBurst {
		return elements.Errorf("burst", "%s: below the largest frame (%d bytes), which would never leave", c.Burst, minShaperBurst)
	}
	if c.Burst > MaxBurst {
		return elements.Errorf("burst", "%s: at most %s", c.Burst, Size(MaxBurst))
	}
	if c.Queue < 1 || c.Queue > maxQueue {
		return elements.Errorf("queue", "%d: want 1..%d packets", c.Queue, maxQueue)
	}
	if err := checkShare(c.Share); err != nil {
		return elements.Errorf("share", "%v", err)
	}
	if _, _, err := c.bandsOf(); err != nil {
		return elements.Errorf("priority", "%v", err)
	}
	switch c.AQM {
	case aqmCoDel, aqmOff:
	default:
		return elements.Errorf("aqm", "%q: want \"codel\" or \"off\"", c.AQM)
	}
	if c.Interval < time.Millisecond || c.Interval > 10*time.Second {
		return elements.Errorf("interval", "%v: want 1ms..10s (RFC 8289: about a round-trip time of the paths through it, 100ms)", c.Interval)
	}
	if c.Target <= 0 || c.Target >= c.Interval {
		return elements.Errorf("target", "%v: want more than 0 and less than interval (%v); RFC 8289: 5-10%% of it, 5ms", c.Target, c.Interval)
	}
	return nil
}

// ring is one band's FIFO of waiting packets: limit of them, in a slice
// of a power-of-two length so that a wrap is a mask, not a division.
type ring struct {
	q              []*packet.Packet
	ts             []int64 // when each packet was queued (CoDel's sojourn time)
	head, n, limit int
	mask           int
	bytes          int // what the queued packets cost (ipSize)
	cd             codel
}

// Shaper is one worker's shaper.
type Shaper struct {
	rate int64 // credits per nanosecond (bit/s)
	max  int64 // the bucket, in credits
	full int64 // nanoseconds after which an idle bucket is full
	// owed bounds the bucket while packets wait: the credits of a late
	// wake-up (up to maxLate of the rate beyond the burst) are kept, so
	// that the departures it delayed are made up for and the rate holds;
	// owedFull is full's bound for it.
	owed, owedFull int64
	tokens         int64
	last           int64

	bands  []ring
	byDSCP [64]uint8
	queued int
	next   int64 // NextWake's answer, kept current by every change

	out           *elements.Output
	ob            *packet.Batch
	st            *elements.Stats
	queueFull     elements.Reason
	stop          elements.Reason
	aqmDrop       elements.Reason
	delayed, sent *atomic.Uint64
	marked        *atomic.Uint64
	aqm           codelParams
	now           func() int64
}

func newShaper(cfg any, ctx *elements.Context) (elements.Element, error) {
	c := cfg.(*ShaperConfig)
	rate, burst := uint64(c.Rate), uint64(c.burst())
	if c.Share == shareSplit && ctx.Workers > 1 {
		w := uint64(ctx.Workers)
		rate, burst = max(rate/w, 1), max(burst/w, minShaperBurst)
	}
	byDSCP, bands, err := c.bandsOf()
	if err != nil {
		return nil, elements.Errorf("priority", "%v", err)
	}
	s := &Shaper{rate: int64(rate), max: int64(burst) * creditsPerByte, byDSCP: byDSCP,
		bands: make([]ring, bands), next: elements.NoWake, out: ctx.Outputs[0],
		ob: ctx.SideBatch(), st: ctx.Stats, now: elements.Nanotime}
	s.full = s.max/s.rate + 1
	s.owed = s.max + min(s.rate*maxLate, MaxBurst*creditsPerByte)
	s.owedFull = s.owed/s.rate + 1
	s.tokens, s.last = s.max, -1<<62 // full whenever the first packet comes
	size := 1 << bits.Len(uint(c.Queue-1))
	slab := make([]*packet.Packet, bands*size)
	ts := make([]int64, bands*size)
	for i := range s.bands {
		s.bands[i] = ring{q: slab[i*size : (i+1)*size : (i+1)*size], ts: ts[i*size : (i+1)*size : (i+1)*size],
			limit: c.Queue, mask: size - 1}
	}
	s.aqm = codelParams{on: c.AQM == aqmCoDel, target: int64(c.Target), interval: int64(c.Interval), ecn: c.ECN}
	s.aqmDrop = ctx.Stats.Reason("codel")
	s.marked = ctx.Stats.Counter("ce marked")
	s.queueFull = ctx.Stats.Reason("queue full")
	s.stop = ctx.Stats.Reason("shaper stopped")
	s.delayed = ctx.Stats.Counter("delayed")
	s.sent = ctx.Stats.Counter("sent")
	return s, nil
}

// refill adds the credits earned since the last refill: up to the burst
// while nothing waits, up to owed while packets wait (the worker woke
// later than the head's departure time, and what it owes them is sent
// now, back to back).
func (s *Shaper) refill(now int64) {
	dt := now - s.last
	if dt <= 0 {
		return
	}
	s.last = now
	limit, full := s.max, s.full
	if s.queued > 0 {
		limit, full = s.owed, s.owedFull
	}
	if dt >= full {
		s.tokens = limit
		return
	}
	s.tokens = min(s.tokens+dt*s.rate, limit)
}

// bandOf is the band a packet waits in.
func (s *Shaper) bandOf(p *packet.Packet) int {
	d := dscpOf(p)
	if d < 0 {
		return len(s.bands) - 1
	}
	return int(s.byDSCP[d])
}

// Push sends at once what the bucket allows while nothing waits, queues
// the rest (dropping what finds its band full), then releases what the
// bucket allows in band order.
func (s *Shaper) Push(_ int, b *packet.Batch) {
	now := s.now()
	s.refill(now)
	ob := s.ob
	var delayed uint64
	for _, p := range b.Pkts {
		cost := int64(ipSize(p)) * creditsPerByte
		if s.queued == 0 && s.tokens >= cost {
			s.tokens -= cost
			ob.Add(p) // ob holds a whole batch and is empty here
			continue
		}
		r := &s.bands[s.bandOf(p)]
		if r.n == r.limit {
			s.st.Drop(p, s.queueFull)
			continue
		}
		j := (r.head + r.n) & r.mask
		r.q[j], r.ts[j] = p, now
		r.n++
		r.bytes += ipSize(p)
		s.queued++
		delayed++
	}
	b.Reset()
	if delayed != 0 {
		s.delayed.Add(delayed)
	}
	s.release()
}

// NextWake is when the head packet may leave (elements.Waker).
func (s *Shaper) NextWake() int64 { return s.next }

// Wake releases what may leave at now (elements.Waker).
func (s *Shaper) Wake(now int64) int {
	s.refill(now)
	return s.release()
}

// release sends the waiting packets the bucket covers, highest band first,
// then the batch ob holds, and sets the next departure time. It returns
// the packets sent.
func (s *Shaper) release() int {
	ob := s.ob
	now := s.last
	var marked uint64
	for s.queued > 0 {
		i := 0
		for s.bands[i].n == 0 {
			i++
		}
		r := &s.bands[i]
		p := r.q[r.head]
		cost := int64(ipSize(p)) * creditsPerByte
		if s.tokens < cost {
			// It leaves when the bucket has earned the difference.
			s.next = s.last + (cost-s.tokens+s.rate-1)/s.rate
			break
		}
		queued := r.ts[r.head]
		r.q[r.head] = nil
		r.head = (r.head + 1) & r.mask
		r.n--
		r.bytes -= ipSize(p)
		s.queued--
		if s.aqm.on {
			v := r.cd.decide(&s.aqm, now-queued, now, r.bytes, s.aqm.ecn && ecnCapable(p))
			if r.n == 0 {
				r.cd.empty()
			}
			if v == drop {
				s.st.Drop(p, s.aqmDrop)
				continue
			}
			if v == mark {
				markCE(p)
				marked++
			}
		}
		s.tokens -= cost
		if ob.Full() {
			s.flush()
		}
		ob.Add(p)
	}
	if marked != 0 {
		s.marked.Add(marked)
	}
	if s.queued == 0 {
		// What a late wake-up owed is paid: the burst bounds the
		// bucket again.
		s.tokens = min(s.tokens, s.max)
		s.next = elements.NoWake
	}
	return s.flush()
}

// flush pushes ob downstream and returns how many packets it held.
func (s *Shaper) flush() int {
	n := len(s.ob.Pkts)
	if n > 0 {
		s.sent.Add(uint64(n))
		s.out.Push(s.ob)
	}
	return n
}

// HoldsPackets: input 0 queues packets (traces follow them).
func (s *Shaper) HoldsPackets(int) bool { return true }

// Retire drops what is queued when a reload removes the element.
func (s *Shaper) Retire() uint64 { return s.drain() }

// Close drops what is still queued.
func (s *Shaper) Close() error {
	s.drain()
	return nil
}

func (s *Shaper) drain() uint64 {
	var n uint64
	for i := range s.bands {
		r := &s.bands[i]
		for ; r.n > 0; r.n-- {
			s.st.Drop(r.q[r.head], s.stop)
			r.q[r.head] = nil
			r.bytes = 0
			r.cd.empty()
			r.head = (r.head + 1) & r.mask
			n++
		}
	}
	s.queued, s.next = 0, elements.NoWake
	return n
}
