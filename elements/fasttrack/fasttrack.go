package fasttrack

import (
	"encoding/binary"
	"math/bits"
	"strings"
	"sync/atomic"
	"time"

	"github.com/junction-dataplane/junction/elements"
	"github.com/junction-dataplane/junction/elements/conntrack"
	"github.com/junction-dataplane/junction/packet"
)

// Config is FastTrack's config.
type Config struct {
	After       int      `toml:"after"`
	Policy      string   `toml:"policy"`
	IdleTimeout string   `toml:"idle_timeout"`
	Outputs     int      `toml:"outputs"`
	Offload     []string `toml:"offload"`
	NoCache     bool     `toml:"no_cache"`

	both bool
	idle int64
}

// Validate checks the keys.
func (c *Config) Validate() error {
	if c.After < 0 || c.After > 1<<30 {
		return elements.Errorf("after", "%d: want packets ≥ 0", c.After)
	}
	switch strings.ToLower(c.Policy) {
	case "either-direction":
		c.both = false
	case "both-directions":
		c.both = true
	default:
		return elements.Errorf("policy", "%q: want either-direction or both-directions", c.Policy)
	}
	c.idle = 0
	if c.IdleTimeout != "" && c.IdleTimeout != "0" {
		d, err := time.ParseDuration(c.IdleTimeout)
		if err != nil || d <= 0 {
			return elements.Errorf("idle_timeout", "%q: want a duration such as 30s (or 0: the flow's own timeout)", c.IdleTimeout)
		}
		c.idle = int64(d)
	}
	if c.Outputs < 1 || c.Outputs > 254 {
		return elements.Errorf("outputs", "%d: want 1..254 fast outputs", c.Outputs)
	}
	if len(c.Offload) > c.Outputs {
		return elements.Errorf("offload", "%d devices for %d fast outputs: one per output, in order (\"\" for none)", len(c.Offload), c.Outputs)
	}
	return nil
}

// Ports: one input; output 0 is the slow path, 1..outputs the fast outputs.
func (c *Config) Ports() (in, out int) { return 1, 1 + c.Outputs }

// LearnConfig is FastTrackLearn's config.
type LearnConfig struct {
	Outputs int `toml:"outputs"`
}

// Validate checks the port count.
func (c *LearnConfig) Validate() error {
	if c.Outputs < 1 || c.Outputs > 254 {
		return elements.Errorf("outputs", "%d: want 1..254 ports", c.Outputs)
	}
	return nil
}

// Ports: input i passes to output i.
func (c *LearnConfig) Ports() (in, out int) { return c.Outputs, c.Outputs }

const graphDoc = `Graph shape (one FastTrack per input device or one for all, one FastTrackLearn in front of the transmitters):

  FromDevice(lan) -> ft :: FastTrack(2)          FromDevice(wan) -> ft
  ft[0] -> Classifier -> Conntrack -> DNAT -> IPLookup -> DecTTL -> ... -> SNAT -> EtherRewrite/ARPQuerier -> [i]ftl
  ftl :: FastTrackLearn(2)
  ftl[0] -> ToDevice(lan)     ft[1] -> ToDevice(lan)
  ftl[1] -> ToDevice(wan)     ft[2] -> ToDevice(wan)

FastTrackLearn's port i and FastTrack's output i+1 lead to the same transmitter.`

func init() {
	elements.Register(elements.Type{
		Name:      "FastTrack",
		FlowState: true,
		NewConfig: func() any { return &Config{After: 2, Policy: "either-direction", Outputs: 2} },
		New:       newFastTrack,
		In:        1, Out: -1,
		Doc:        fastTrackManual(),
		TakesState: true, // a reload keeps its state (reload.go)
	})
	elements.Register(elements.Type{
		Name:      "FastTrackLearn",
		FlowState: true,
		NewConfig: func() any { return &LearnConfig{Outputs: 2} },
		New:       newLearn,
		In:        -1, Out: -1,
		Doc: fastTrackLearnManual,
	})
}

// FastTrack is one worker's fast path.
type FastTrack struct {
	t     *conntrack.Table
	gen   *conntrack.Generation // the graph's
	idle  int64
	outs  []*elements.Output
	split *elements.Dispatch // output 0: misses; 1..N: hits by output

	// Per chunk of up to 64 packets (see Push): with the flow cache,
	// raw keys and their cache hashes; without, tuples and buckets.
	raws  [chunk]conntrack.RawKey // B == 0: not eligible
	hx    [chunk]uint64
	slots [chunk]*conntrack.CacheEntry // where each raw key's entry is, if cached
	// pushCached's packets for the flow table, by index in the chunk,
	// and its entries to fold: it leaves both to after its loop, which
	// then calls nothing (see pushCached).
	later [chunk]uint8
	folds [chunk]*conntrack.CacheEntry
	outOf [chunk]uint8           // each packet's output (0: left for later)
	keys  [chunk]conntrack.Tuple // Proto 0: not eligible
	hs    [chunk]uint32

	pkts, bytes, hits, misses *atomic.Uint64
	useCache                  bool   // no offload, no no_cache: compile hits into the flow cache
	compiled                  uint64 // flow-cache compiles not yet added to compiles
	compiles                  *atomic.Uint64
	policy                    conntrack.FastPolicy

	off *offload // nil without the offload key

	// maxFrame: a batch with a longer packet takes the slow path
	// (mtu.go); 0: no limit.
	maxFrame int
	tooLong  *atomic.Uint64

	// deferCache: built for a reload, the cache and policy are set up by
	// TakeState (reload.go).
	deferCache bool
}

var (
	_ elements.TickScheduler = (*FastTrack)(nil)
	_ elements.Closer        = (*FastTrack)(nil)
)

func newFastTrack(cfg any, ctx *elements.Context) (elements.Element, error) {
	c := cfg.(*Config)
	if err := c.Validate(); err != nil {
		return nil, err
	}
	e := &FastTrack{t: conntrack.Acquire(ctx), gen: conntrack.GenerationOf(ctx), idle: c.idle,
		policy: conntrack.FastPolicy{After: uint32(c.After), Both: c.both, Idle: c.idle},
		outs:   ctx.Outputs, pkts: ctx.Stats.Counter("fasttracked packets"), bytes: ctx.Stats.Counter("fasttracked bytes"),
		hits: ctx.Stats.Counter("hits"), misses: ctx.Stats.Counter("misses"), compiles: ctx.Stats.Counter("cache compiles")}
	e.split = elements.NewDispatch(ctx, 0) // every port has an output
	e.maxFrame, e.tooLong = maxFrameOf(ctx), ctx.Stats.Counter("slow: longer than the mtu")
	if len(c.Offload) == 0 && !c.NoCache {
		// With offload the devices' own fast path takes the flows
		// (and folds their counters into the flow table itself).
		e.useCache = true
		if ctx.Reloading() {
			// The running graph uses the table: TakeState, between
			// rounds, does this (reload.go).
			e.deferCache = true
		} else {
			e.t.EnableCache()
			// FastTrackLearn compiles the directions this policy
			// makes fast-trackable (conntrack.Table.CompilePolicy).
			e.t.AddFastPolicy(e.policy)
		}
	}
	if len(c.Offload) > 0 {
		var err error
		if e.off, err = newOffload(c.Offload, ctx); err != nil {
			e.Close()
			return nil, err
		}
	}
	return e, nil
}

// Tick hands flows to the devices' fast path and folds back what it
// forwarded (with the offload key).
// NextTick: every millisecond while hits wait to be offloaded; otherwise
// nothing is due (the folding of the kernel's counters is paced by the time
// since the last Tick).
func (e *FastTrack) NextTick(now int64) int64 {
	if o := e.off; o != nil && len(o.v4.pending)+len(o.v6.pending) != 0 {
		return now
	}
	return elements.NoWake
}

func (e *FastTrack) Tick(now int64) {
	if e.off != nil && e.t != nil {
		e.tick(now)
	}
}

// Close takes this worker's flows out of the devices' fast path and
// releases the flow table.
func (e *FastTrack) Close() error {
	if e.off != nil && e.t != nil {
		e.removeAll()
		e.removeAll6()
	}
	if e.t != nil {
		if e.useCache && !e.deferCache {
			e.t.RemoveFastPolicy()
		}
		e.t.Release()
		e.t = nil
	}
	return nil
}

// Push sends hits to their learned outputs and misses to output 0, in
// order per output.
func (e *FastTrack) Push(_ int, b *packet.Batch) {
	if e.maxFrame != 0 && e.slowIfLong(b) {
		return
	}
	t := e.t
	if t.Capacity() <= 0 {
		e.outs[0].Push(b)
		return
	}
	cached := e.useCache && t.CacheEnabled()
	// complete: a packet the cache does not hold, at an unhinted slot,
	// is a miss with nothing to look up (conntrack.Table.CacheComplete).
	complete := cached && t.CacheComplete()
	pkts := b.Pkts
	if complete && t.PendingN() == 0 && t.CacheEmpty() {
		// Nothing fast-tracked at all: every packet misses, unless it
		// is IPv6 (fast6.go).
		hits, bytes := e.misses6(b)
		e.countBatch(hits, bytes, uint64(len(b.Pkts)))
		e.outs[0].Push(b)
		if hits != 0 {
			e.pushSplit6()
		}
		return
	}
	gen := e.gen.Current()
	now := t.Now()
	if complete && t.PendingN() != 0 {
		e.compilePending(t, gen, now)
	}
	split := e.split.Queues() // a batch of the graph fits in each
	miss := split[0]          // the slow path's
	var hits, bytes uint64
	if cached && len(pkts) <= chunk {
		// One chunk, the common case (a batch of 64): when every packet
		// hit the cache for one output, or (complete) every packet
		// missed, the batch itself goes on.
		hits, bytes, one := e.pushCached(t, pkts, gen, now, true, complete)
		if one >= 0 {
			var misses, h6, n6 uint64
			if one == 0 {
				h6, n6 = e.misses6(b)
				misses = uint64(len(b.Pkts))
			}
			e.countBatch(hits+h6, bytes+n6, misses)
			e.outs[one].Push(b)
			if h6 != 0 {
				e.pushSplit6()
			}
			return
		}
		e.flush(b, hits, bytes)
		return
	}
	for off := 0; off < len(pkts); off += chunk {
		ps := pkts[off:min(off+chunk, len(pkts))]
		// Parse every packet, prefetch what their lookups touch
		// (conntrack.Table.WarmCache or Warm), then look up and
		// rewrite: the cache misses of a chunk overlap.
		if cached {
			h, n, _ := e.pushCached(t, ps, gen, now, false, complete)
			hits += h
			bytes += n
			continue
		}
		keys, raws := e.keys[:len(ps)], e.raws[:len(ps)]
		fastRaws(ps, raws)
		for i := range raws {
			if keys[i].Proto = 0; raws[i].B != 0 {
				raws[i].ToTuple(&keys[i])
			}
		}
		t.Warm(keys, e.hs[:])
		for i, p := range ps {
			out, n := 0, 0
			if keys[i].Proto != 0 {
				out, n = e.hit(t, p, &keys[i], e.hs[i], gen, now)
			}
			if out == 0 {
				miss.Add(p)
				continue
			}
			hits++
			bytes += uint64(n)
			split[out].Add(p)
		}
	}
	e.flush(b, hits, bytes)
}

// flush pushes the split batches on, b having been sorted into them, and
// counts.
func (e *FastTrack) flush(b *packet.Batch, hits, bytes uint64) {
	h6, n6 := e.misses6(e.split.Queues()[0])
	hits, bytes = hits+h6, bytes+n6
	misses := uint64(e.split.Pending(0))
	b.Reset()
	e.split.Flush()
	e.countBatch(hits, bytes, misses)
}

// countBatch adds a batch's hits, bytes and misses, and the compiles since the
// last call, to the counters.
func (e *FastTrack) countBatch(hits, bytes, misses uint64) {
	if hits != 0 {
		e.pkts.Add(hits)
		e.hits.Add(hits)
		e.bytes.Add(bytes)
	}
	if misses != 0 {
		e.misses.Add(misses)
	}
	if e.compiled != 0 {
		e.compiles.Add(e.compiled)
		e.compiled = 0
	}
}

// compilePending compiles the learned directions of the flows the tracker
// listed (conntrack.Table.TakePending) that are fast-trackable and not
// cached: what this element's flow-table path would compile on their next
// packet, done before it so that a packet the cache does not hold is a
// miss. The list holds only flows the tracker found fast-trackable or whose
// cached directions it dropped: a flow that does not engage never comes
// here.
func (e *FastTrack) compilePending(t *conntrack.Table, gen uint32, now int64) {
	pend := t.TakePending()
	t.WarmPending(pend, gen) // the slots' lines, all at once
	for _, pf := range pend {
		c := t.Live(pf.Idx, pf.Tag)
		if c == nil || now >= c.Expires || !e.policy.FlowEligible(c) {
			continue
		}
		for d := range uint8(2) {
			if f := &c.Fast[d]; f.Valid && f.Gen == gen && !t.Cached(pf.Idx, d) {
				if compile(t, pf.Idx, d, c, e.idle) {
					e.compiled++
				}
			}
		}
	}
}

// chunk is how many packets Push prepares at once.
const chunk = 64

// fastMin is the shortest frame fastRaws accepts: Ethernet, an IPv4 header
// without options and the first 8 bytes of the transport header (UDP
// header; ICMP type, code, checksum, identifier; TCP ports and sequence).
const fastMin = packet.EthernetLen + packet.IPv4MinLen + 8

// fastRaws reads into raws[i] the raw key (conntrack.RawKey) of ps[i] if
// it may take the fast path: an untagged IPv4 header without options or
// fragmentation, TCP with ACK and no SYN, FIN or RST, UDP, or ICMP echo.
// For any other packet it leaves raws[i].B 0. It is the one parse of the
// fast path (the flow-table path turns its keys into Tuples).
//
// The checks read words as they lie in the frame: bytes 12-14 (EtherType
// 0x0800, version 4 with a 20-byte header) as one little-endian word, and
// the flags and fragment offset (bytes 20-21) as another, masked to MF and
// the offset. UDP is decided in the loop, everything else by
// fastRawOther: a loop that called the whole parse for every packet spent
// ≈ 1 ns a packet spilling and reloading its registers around the call
// (Go's calls preserve none).
func fastRaws(ps []*packet.Packet, raws []conntrack.RawKey) {
	raws = raws[:len(ps)]
	for i, p := range ps {
		d := p.Data
		if p.L3 == packet.EthernetLen && len(d) >= fastMin {
			f := (*[fastMin]byte)(d)
			tl := int(binary.BigEndian.Uint16(f[16:]))
			if binary.LittleEndian.Uint32(f[12:])&0xff_ffff == 0x45_0008 && binary.LittleEndian.Uint16(f[20:])&0xff3f == 0 &&
				f[23] == packet.ProtoUDP && tl <= len(d)-packet.EthernetLen && tl >= packet.IPv4MinLen+8 {
				raws[i].A = binary.LittleEndian.Uint64(f[26:])
				raws[i].B = uint64(binary.LittleEndian.Uint32(f[34:])) | packet.ProtoUDP<<32
				continue
			}
		}
		fastRawOther(p, &raws[i])
	}
}

// fastRawOther is fastRaws for one packet that is not valid UDP.
func fastRawOther(p *packet.Packet, r *conntrack.RawKey) {
	r.B = 0
	d := p.Data
	if p.L3 != packet.EthernetLen || len(d) < fastMin {
		return
	}
	f := (*[fastMin]byte)(d)
	const ip, l4 = packet.EthernetLen, packet.EthernetLen + packet.IPv4MinLen
	if binary.LittleEndian.Uint32(f[12:])&0xff_ffff != 0x45_0008 ||
		binary.LittleEndian.Uint16(f[ip+6:])&0xff3f != 0 {
		return
	}
	tl := int(binary.BigEndian.Uint16(f[ip+2:]))
	if tl > len(d)-packet.EthernetLen || tl < packet.IPv4MinLen+8 {
		return
	}
	ports := binary.LittleEndian.Uint32(f[l4:])
	proto := f[ip+9]
	switch proto {
	case packet.ProtoTCP:
		if tl < packet.IPv4MinLen+packet.TCPMinLen {
			return
		}
		if fl := d[l4+13]; fl&(packet.TCPSyn|packet.TCPFin|packet.TCPRst) != 0 || fl&packet.TCPAck == 0 {
			return
		}
	case packet.ProtoICMP:
		if f[l4] != packet.ICMPEchoRequest && f[l4] != packet.ICMPEchoReply {
			return
		}
		id := uint32(binary.LittleEndian.Uint16(f[l4+4:]))
		ports = id | id<<16
	default:
		return // UDP is fastRaws': a UDP packet here failed its checks
	}
	r.A = binary.LittleEndian.Uint64(f[ip+12:])
	r.B = uint64(ports) | uint64(proto)<<32
}

// hit applies the fast path to p, whose tuple k (in bucket hb) fastRaws
// accepted, and returns its output (0: miss) and IP length.
func (e *FastTrack) hit(t *conntrack.Table, p *packet.Packet, k *conntrack.Tuple, hb uint32, gen uint32, now int64) (int, int) {
	idx, dir, ok := t.LookupIn(k, hb)
	if !ok {
		return 0, 0
	}
	t.Sync(idx) // the flow cache's hits, if it holds the flow
	d := p.Data
	h := d[packet.EthernetLen:]
	c := t.Conn(idx)
	f := &c.Fast[dir]
	if !f.Valid || f.Gen != gen || now >= c.Expires || !e.policy.FlowEligible(c) || h[8] <= f.TTLDec ||
		k.Proto == packet.ProtoICMP && (h[packet.IPv4MinLen] == packet.ICMPEchoRequest) != (dir == 0) {
		return 0, 0
	}
	tl := int(binary.BigEndian.Uint16(h[2:]))
	ttl := h[8]
	rewrite(h, h[packet.IPv4MinLen:tl], k, &c.T[1-dir], f.TTLDec)
	copy(d[:12], f.Eth[:])
	c.Packets[dir]++
	c.Bytes[dir] += uint64(tl)
	if e.idle > 0 {
		c.Expires = now + e.idle
	} else {
		c.Expires = now + t.TimeoutOf(c)
	}
	st := uint8(packet.CtEstablished)
	if c.Flags&conntrack.FlagSeenReply == 0 {
		st = packet.CtNew
	}
	// Only the fields that differ from what the packet may carry: the
	// table (a pointer, whose store needs a write barrier) is written
	// once per packet buffer's life in practice.
	ct := &p.Ct
	if h := t.CtTable(); ct.Table != h {
		ct.Table = h
	}
	ct.Flow, ct.Tag, ct.State, ct.Dir, ct.TTL = idx, c.Tag, st, dir, ttl
	if e.off != nil && f.Offload == offNone {
		e.off.queue(idx, c, dir)
	}
	if e.useCache && t.CacheEnabled() && compile(t, idx, dir, c, e.idle) {
		e.compiled++
	}
	return int(f.Out), tl
}

// compile puts direction dir of flow idx, whose fast path is learned and
// valid, into the flow cache, with its rewrite's checksum deltas computed
// once (packet.FlowDeltas: the sums packet.RewriteFlow applies on the
// flow-table path, so the bytes are identical); a hit gives the flow idle
// (0: the tracker's timeout for its state).
func compile(t *conntrack.Table, idx uint32, dir uint8, c *conntrack.Conn, idle int64) bool {
	f := &c.Fast[dir]
	k := &c.T[dir] // the tuple its packets arrive with
	o := &c.T[1-dir]
	to := conntrack.RawKeyOf(&conntrack.Tuple{Src: o.Dst, Dst: o.Src, Sport: o.Dport, Dport: o.Sport, Proto: o.Proto})
	ce := conntrack.CacheEntry{Out: f.Out, TTLDec: f.TTLDec, Gen: f.Gen, NAddrs: to.A, NPorts: uint32(to.B)}
	ipSum, l4Sum := packet.FlowDeltas(k.Proto, k.Src, k.Dst, o.Dst, o.Src, k.Sport, k.Dport, o.Dport, o.Sport, f.TTLDec)
	ce.IPSum, ce.L4Sum = bits.ReverseBytes16(ipSum), bits.ReverseBytes16(l4Sum) // frame byte order
	timeout := idle
	if timeout <= 0 {
		timeout = t.TimeoutOf(c)
	}
	return t.CompileCache(ce, idx, dir, &f.Eth, timeout)
}

// pushCached sorts one chunk by output, through the flow cache: one cache
// line holds a direction's key, rewrite and counters. A packet the cache
// does not take (its direction is not cached, the rewrite is of an older
// generation, the flow would have expired, or the packet differs from what
// was compiled: TTL about to expire, ICMP echo the wrong way) is a miss
// when the cache is complete (conntrack.Table.CacheComplete) and its first
// slot has no hint; otherwise it takes the flow-table path (hit).
//
// It returns the hits, their IP bytes and, with whole, the output the
// whole chunk goes to (every packet hit for that output, or, complete,
// every packet missed: 0), or -1 when it sorted the chunk into the split
// batches.
//
// The cache hit is written out in the loop rather than called: as a
// function it was too large to inline, and the call cost about a
// nanosecond a packet (benchmarks/nat.md). For the same reason the loop calls nothing
// at all: a call anywhere in it, even on a path never taken, makes the
// compiler keep the loop's values on the stack. So the packets the cache
// does not take, and the rare fold, wait for a second loop.
//
// The rewrite is packet.ApplyFlow's stores at fixed frame offsets
// (fastRaws checked the frame's length and that the IPv4 header has no
// options), with the new addresses and ports stored as the entry keeps
// them, in frame byte order: calling ApplyFlow cost a few nanoseconds a
// packet (benchmarks/nat.md).
// TestCacheTransparent and TestRandomEquivalence check the bytes against
// the slow path, which uses ApplyFlow.
func (e *FastTrack) pushCached(t *conntrack.Table, ps []*packet.Packet, gen uint32, now int64, whole, complete bool) (hits, bytes uint64, one int) {
	raws := e.raws[:len(ps)]
	fastRaws(ps, raws)
	t.WarmCache(raws, e.hx[:], e.slots[:])
	slots := e.slots[:len(ps)]
	split := e.split.Queues()
	// Not append, whose growth path is a call.
	later, folds, outOf := &e.later, &e.folds, &e.outOf
	nl, nf := 0, 0
	// The hits' outputs, ORed and ANDed: equal when all hits went to one.
	var anyOut, allOut uint8 = 0, 0xff
	const ip, l4 = packet.EthernetLen, packet.EthernetLen + packet.IPv4MinLen
	for i, p := range ps {
		r := &raws[i]
		if r.B == 0 {
			later[nl&(chunk-1)] = uint8(i)
			nl++
			outOf[i&(chunk-1)] = 0
			continue
		}
		ce := slots[i]
		f := (*[fastMin]byte)(p.Data)
		ttl := f[ip+8]
		if !conntrack.CacheMatch(ce, r) || ce.Gen != gen || now >= ce.Deadline || ttl <= ce.TTLDec ||
			ce.Proto == packet.ProtoICMP && (f[l4] == packet.ICMPEchoRequest) != (ce.CtDir == 0) {
			later[nl&(chunk-1)] = uint8(i) // not in the cache as it is
			nl++
			outOf[i&(chunk-1)] = 0
			continue
		}
		tl := binary.BigEndian.Uint16(f[ip+2:])
		f[ip+8] = ttl - ce.TTLDec
		binary.LittleEndian.PutUint64(f[ip+12:], ce.NAddrs)
		// The checksums are patched as the frame holds them (little-endian
		// loads, byte-swapped deltas: see packet.AddOnes).
		binary.LittleEndian.PutUint16(f[ip+10:], ^packet.AddOnes(^binary.LittleEndian.Uint16(f[ip+10:]), ce.IPSum))
		// TCP and UDP first: a switch would test ICMP first (by value).
		if pr := ce.Proto; pr == packet.ProtoTCP {
			g := (*[l4 + packet.TCPMinLen]byte)(p.Data) // fastRaws checked the TCP header's length
			binary.LittleEndian.PutUint32(g[l4:], ce.NPorts)
			binary.LittleEndian.PutUint16(g[l4+16:], ^packet.AddOnes(^binary.LittleEndian.Uint16(g[l4+16:]), ce.L4Sum))
		} else if pr == packet.ProtoUDP {
			binary.LittleEndian.PutUint32(f[l4:], ce.NPorts)
			if old := binary.LittleEndian.Uint16(f[l4+6:]); old != 0 { // 0: no checksum (RFC 768)
				cs := ^packet.AddOnes(^old, ce.L4Sum)
				if cs == 0 {
					cs = 0xffff
				}
				binary.LittleEndian.PutUint16(f[l4+6:], cs)
			}
		} else if id := uint16(ce.NPorts); binary.LittleEndian.Uint16(f[l4+4:]) != id { // ICMP echo
			binary.LittleEndian.PutUint16(f[l4+4:], id)
			binary.LittleEndian.PutUint16(f[l4+2:], ^packet.AddOnes(^binary.LittleEndian.Uint16(f[l4+2:]), ce.L4Sum))
		}
		// The Ethernet addresses as one 8-byte and one 4-byte move
		// (copy would call memmove).
		eth := t.Adj(ce.Adj)
		binary.LittleEndian.PutUint64(f[0:], binary.LittleEndian.Uint64(eth[0:]))
		binary.LittleEndian.PutUint32(f[8:], binary.LittleEndian.Uint32(eth[8:]))
		ce.Pkts++
		ce.Bytes += uint32(tl)
		ce.Deadline = now + t.CacheTimeout(ce)
		if ce.Bytes >= conntrack.CacheFoldAt {
			folds[nf&(chunk-1)] = ce
			nf++
		}
		ct := &p.Ct
		if h := t.CtTable(); ct.Table != h {
			ct.Table = h
		}
		ct.Flow, ct.Tag, ct.State, ct.Dir, ct.TTL = ce.Idx, ce.Tag, ce.CtState, ce.CtDir, ttl
		bytes += uint64(tl)
		outOf[i&(chunk-1)] = ce.Out
		anyOut |= ce.Out
		allOut &= ce.Out
	}
	hits = uint64(len(ps) - nl) // every packet not left for later hit the cache
	// Folding an entry more than once is harmless, and a chunk cannot
	// take a 32-bit byte count from CacheFoldAt to overflow.
	for _, ce := range folds[:nf] {
		t.FoldCache(ce)
	}
	if whole && nl == 0 && anyOut == allOut {
		return hits, bytes, int(anyOut) // the caller sends the whole batch
	}
	// With a complete cache only a packet at a hinted slot needs the
	// flow table; when none does and none hit, the batch itself goes to
	// the slow path.
	hinted := false
	if complete && t.CacheHints() {
		for _, i := range later[:nl] {
			if raws[i].B != 0 && t.CacheHinted(e.hx[i]) {
				hinted = true
				break
			}
		}
	}
	if whole && complete && !hinted && nl == len(ps) && nl > 0 {
		return 0, 0, 0
	}
	// The hits to their outputs, in order, before the packets left for
	// later: those that go to the same output are other flows' (see
	// below).
	for i, p := range ps {
		if o := outOf[i&(chunk-1)]; o != 0 {
			split[o].Add(p)
		}
	}
	// The packets the cache did not take, in their order: the flow table
	// decides, or they miss. (A flow's packets are either all here or,
	// but for those that miss anyway, all cache hits: what is not in the
	// cache now is compiled only by this loop.)
	miss := split[0]
	for _, i := range later[:nl] {
		p := ps[i]
		if raws[i].B != 0 && (!complete || hinted && t.CacheHinted(e.hx[i])) {
			k := &e.keys[0]
			raws[i].ToTuple(k)
			if out, n := e.hit(t, p, k, t.Bucket(k), gen, now); out != 0 {
				hits++
				bytes += uint64(n)
				split[out].Add(p)
				continue
			}
		}
		miss.Add(p)
	}
	return hits, bytes, -1
}

// rewrite applies a flow direction's whole slow-path rewrite to IPv4 header
// h (no options) and its L4 header l4: the packet's tuple k becomes the
// inverse of the other direction's tuple o — which is what DNAT and SNAT
// produce in either direction, since the reply tuple records both
// translations (FastTrackLearn checked that the slow path did exactly
// that) — and its TTL drops by ttlDec, each checksum patched once
// (packet.RewriteFlow).
func rewrite(h, l4 []byte, k, o *conntrack.Tuple, ttlDec uint8) {
	packet.RewriteFlow(h, l4, k.Proto, k.Src, k.Dst, k.Sport, k.Dport, o.Dst, o.Src, o.Dport, o.Sport, ttlDec)
}

// Learn is one worker's FastTrackLearn.
type Learn struct {
	gen                  *conntrack.Generation // the graph's
	outs                 []*elements.Output
	learned, unlearnable *atomic.Uint64
}

func newLearn(cfg any, ctx *elements.Context) (elements.Element, error) {
	return &Learn{gen: conntrack.GenerationOf(ctx), outs: ctx.Outputs, learned: ctx.Stats.Counter("learned"), unlearnable: ctx.Stats.Counter("not learnable")}, nil
}

// Push learns from every tracked packet and passes the batch on.
func (e *Learn) Push(in int, b *packet.Batch) {
	gen := e.gen.Current()
	var learned, bad uint64
	out := uint8(in + 1)
	for _, p := range b.Pkts {
		if p.Ct.Learned == out {
			continue // the tracker saw this direction learned for out
		}
		_, c := conntrack.FlowOf(p)
		if c == nil {
			if l, nl := learn6(p, uint8(in+1), gen); l {
				learned++
			} else if nl {
				bad++
			}
			continue
		}
		if p.Ct.State == packet.CtRelated || p.Ct.State == packet.CtInvalid {
			continue
		}
		dir := p.Ct.Dir
		f := &c.Fast[dir]
		if f.Valid && f.Gen == gen && f.Out == uint8(in+1) {
			continue // already known
		}
		if !learnable(p, c, dir) {
			bad++
			continue
		}
		copy(f.Eth[:], p.Data[:12])
		f.Out = uint8(in + 1)
		f.TTLDec = p.Ct.TTL - p.Data[packet.EthernetLen+8]
		f.Gen = gen
		f.Valid = true
		f.Offload = offNone // a new rewrite: FastTrack may hand it to the device again
		learned++
	}
	if learned != 0 {
		e.learned.Add(learned)
	}
	if bad != 0 {
		e.unlearnable.Add(bad)
	}
	e.outs[in].Push(b)
}

// learnable checks that the packet leaving the slow path is what FastTrack
// would make of it: an untagged IPv4 header without options whose
// addresses and ports are the flow's translated tuple, and a TTL no higher
// than on arrival.
func learnable(p *packet.Packet, c *conntrack.Conn, dir uint8) bool {
	d := p.Data
	if p.L3 != packet.EthernetLen || len(d) < packet.EthernetLen+packet.IPv4MinLen+8 ||
		binary.BigEndian.Uint16(d[12:]) != packet.EtherTypeIPv4 || d[14] != 0x45 {
		return false
	}
	h := d[packet.EthernetLen:]
	if h[8] > p.Ct.TTL {
		return false
	}
	want := c.T[dir]
	o := &c.T[1-dir]
	if dir == 0 && c.Flags&conntrack.FlagDNAT != 0 || dir == 1 && c.Flags&conntrack.FlagSNAT != 0 {
		want.Dst, want.Dport = o.Src, o.Sport
	}
	if dir == 0 && c.Flags&conntrack.FlagSNAT != 0 || dir == 1 && c.Flags&conntrack.FlagDNAT != 0 {
		want.Src, want.Sport = o.Dst, o.Dport
	}
	if binary.BigEndian.Uint32(h[12:]) != want.Src || binary.BigEndian.Uint32(h[16:]) != want.Dst || h[9] != want.Proto {
		return false
	}
	switch want.Proto {
	case packet.ProtoTCP, packet.ProtoUDP:
		return binary.BigEndian.Uint16(h[20:]) == want.Sport && binary.BigEndian.Uint16(h[22:]) == want.Dport
	case packet.ProtoICMP:
		return binary.BigEndian.Uint16(h[24:]) == want.Sport
	}
	return false
}
