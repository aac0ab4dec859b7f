package nat

import (
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/junction-dataplane/junction/elements"
	"github.com/junction-dataplane/junction/elements/conntrack"
	"github.com/junction-dataplane/junction/elements/flowsteer"
	"github.com/junction-dataplane/junction/packet"
)

// SNAT's endpoint-independent mapping (mapping.go holds the table): the
// keys, the bind of a new flow through the mapping, and the graph-wide
// registry DNAT reads to let in the new flows the filtering allows.

// Minimum mapping timeouts: RFC 4787 REQ-5 (UDP: 2 minutes) and RFC 5382
// REQ-5 (TCP: the transitory timeout, 4 minutes; an established
// connection keeps its mapping for as long as Conntrack tracks it, 5 days
// by default, above the RFC's 2 hours 4 minutes).
const (
	minUDPTimeout = 2 * time.Minute
	minTCPTimeout = 4 * time.Minute
)

// validateMapping reads the mapping keys.
func (c *SNATConfig) validateMapping() error {
	switch c.Mapping {
	case "endpoint-independent", "":
		c.eim = true
	case "address-and-port-dependent":
		c.eim = false
	default:
		return elements.Errorf("mapping", "%q: want endpoint-independent or address-and-port-dependent", c.Mapping)
	}
	c.filtering = -1
	for i, n := range filterNames {
		if c.Filtering == n || c.Filtering == "" && i == filterAPD {
			c.filtering = i
		}
	}
	if c.filtering < 0 {
		return elements.Errorf("filtering", "%q: want %s", c.Filtering, strings.Join(filterNames, ", "))
	}
	if c.filtering != filterAPD && !c.eim {
		return elements.Errorf("filtering", "%q needs mapping = \"endpoint-independent\"", c.Filtering)
	}
	for i, key := range []string{"tcp_timeout", "udp_timeout"} {
		v, min, def := c.TCPTimeout, minTCPTimeout, "4m"
		if i == 1 {
			v, min, def = c.UDPTimeout, minUDPTimeout, "5m"
		}
		if v == "" {
			v = def
		}
		d, err := time.ParseDuration(v)
		if err != nil || d < min {
			return elements.Errorf(key, "%q: want a duration of at least %v (e.g. \"5m\")", v, min)
		}
		c.timeout[i] = uint32((d + 1<<30 - 1) >> 30)
	}
	c.inside = c.inside[:0]
	for _, f := range strings.FieldsFunc(c.Inside, func(r rune) bool { return r == ' ' || r == ',' }) {
		p, err := netip.ParsePrefix(f)
		if err != nil || !p.Addr().Is4() {
			return elements.Errorf("inside", "%q: want IPv4 networks, e.g. \"192.168.1.0/24\"", f)
		}
		b := p.Masked().Addr().As4()
		c.inside = append(c.inside, flowsteer.Prefix{
			Addr: uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3]), Bits: p.Bits()})
	}
	return c.validatePortBlock()
}

// mapRegistry is the graph's list of mapping stores, for DNAT's inbound
// filtering. A store is counted once per instance holding it.
type mapRegistry struct {
	mu   sync.Mutex
	n    map[*mapStore]int
	list atomic.Pointer[[]*mapStore]
}

type registryKey struct{}

func registryOf(ctx *elements.Context) *mapRegistry {
	return elements.GraphValue(ctx, registryKey{}, func() *mapRegistry { return &mapRegistry{} })
}

func (r *mapRegistry) add(s *mapStore, d int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.n == nil {
		r.n = map[*mapStore]int{}
	}
	if r.n[s] += d; r.n[s] <= 0 {
		delete(r.n, s)
	}
	if len(r.n) == 0 {
		r.list.Store(nil)
		return
	}
	l := make([]*mapStore, 0, len(r.n))
	for s := range r.n {
		l = append(l, s)
	}
	r.list.Store(&l)
}

// setupMapping gives the instance its worker's side of the element's
// mapping store (made by the first instance), and publishes the steering
// by port when there are several workers.
func (e *SNAT) setupMapping(c *SNATConfig, ctx *elements.Context) error {
	if !c.eim || c.Hairpin || len(c.to) == 0 || e.workers > 1 && len(c.inside) == 0 {
		return nil // per destination (snatports.go)
	}
	v, err := ctx.Shared(func() (any, error) {
		s := newMapStore(ctx.Name, c.to, c.lo, c.hi, e.workers, c.filtering, c.timeout)
		s.inside = c.inside
		if c.PortBlock > 0 {
			s.setupBlocks(c.PortBlock, c.bulk, ctx.Logf)
		}
		if e.workers > 1 {
			s.masq = &flowsteer.Masq{Addrs: c.to, Lo: c.lo, Hi: c.hi, Inside: c.inside, Workers: e.workers}
		}
		return s, nil
	})
	if err != nil {
		return err
	}
	e.attach(v.(*mapStore))
	e.made = ctx.Stats.Counter("mappings made")
	e.fellBack = ctx.Stats.Counter("mapping fallback")
	return nil
}

// attach makes s the instance's store and registers it.
func (e *SNAT) attach(s *mapStore) {
	if e.ms != nil {
		e.regs.add(e.ms, -1)
		if e.ms.release1() && e.ms.masq != nil {
			e.steer.WithdrawMasq(e.ms.name, e.ms.masq)
		}
	}
	s.refs.Add(1)
	e.ms = s
	e.mw = s.worker(e.worker, e.steer)
	e.regs.add(s, 1)
	if s.masq != nil {
		e.steer.SetMasq(s.name, s.masq)
	}
}

// Close withdraws the instance's store and steering.
func (e *SNAT) Close() error {
	if e.ms != nil {
		e.regs.add(e.ms, -1)
		if e.ms.release1() && e.ms.masq != nil {
			e.steer.WithdrawMasq(e.ms.name, e.ms.masq)
		}
		e.ms, e.mw = nil, nil
	}
	return nil
}

// mapped reports whether new flow c goes through the mapping: TCP or UDP
// from an inside port this worker owns.
func (e *SNAT) mapped(k *conntrack.Tuple) bool {
	return e.mw != nil && (k.Proto == packet.ProtoTCP || k.Proto == packet.ProtoUDP) &&
		(e.workers == 1 || flowsteer.Port(k.Sport, e.workers) == e.worker)
}

// bindMapped binds new flow c through its inside endpoint's mapping,
// making one if there is none: the inside port when it is free, else a
// free port of the same parity, else any free port of this worker. It
// reports false when no mapping could be had or its reply tuple is held
// by another flow (the caller then chooses per destination).
func (e *SNAT) bindMapped(t *conntrack.Table, c *conntrack.Conn, idx uint32, pos int) bool {
	k := &c.T[0]
	s, m := e.ms, e.mw
	addr := e.address(k)
	mt := &m.tabs[protoIndex(k.Proto)][s.addrIndex(addr)]
	key := endpointKey(k.Src, k.Sport)
	if e.now == 0 {
		e.now = t.Now() // once a batch
	}
	now := e.now
	if pos < len(e.mat) {
		if j := int(e.mat[pos]) - 1 + claimAhead; e.mat[pos] != 0 && e.mat[pos] != matFull && j < e.nm {
			e.warmLines(j)
		}
	}
	reply := c.T[1]
	reply.Dst = addr
	if o, ok := s.find(m, mt, key, k.Sport); ok {
		reply.Dport = o
		if !e.claimMapped(t, c, idx, &reply, pos) {
			return false
		}
		s.use(mt, o, c, idx, k.Dst, now)
		return true
	}
	o, ok := e.allocate(t, mt, addr, k, now, pos)
	if !ok {
		return false
	}
	reply.Dport = o
	if !e.claimMapped(t, c, idx, &reply, pos) {
		s.putFree(mt, o)
		return false
	}
	s.install(m, mt, key, k.Sport, o, now)
	s.use(mt, o, c, idx, k.Dst, now)
	e.mapsMade++
	return true
}

// warmMapped notes new flow k at batch position pos for bind, and queues
// its filter line for prefetching (in groups of warmGroup). On a
// worker without free ports that found none to free a moment ago (the
// state of one whose ports are all mapped) a new endpoint has nothing to
// do but fall back: the flow is only marked (matFull) and bind, once the
// line is in, tests the bits and falls back unless all are set. Any other
// flow is the batch's next through the mapping: warmLines prefetches what
// its bind will read, if anything, once the filter line is in (prepare
// for the first claimAhead such flows, bind each further one claimAhead
// flows before it).
func (e *SNAT) warmMapped(t *conntrack.Table, k *conntrack.Tuple, pos int) {
	s := e.ms
	pi := protoIndex(k.Proto)
	fb := e.queueFilter(endpointKey(k.Src, k.Sport) | uint64(pi)<<1)
	if e.now == 0 {
		e.now = t.Now() // once a batch (warmLines, bind)
	}
	if s.block == 0 {
		var full bool
		if len(s.addrs) == 1 {
			// Decided once a batch per protocol (nothing in
			// prepare changes it).
			if e.full1[pi] == 0 {
				e.full1[pi] = 1
				s.tidy(&e.mw.tabs[pi][0]) // before the batch's guesses and pops
				if e.fullDry(t, pi, 0) {
					e.full1[pi] = 2
				}
			}
			full = e.full1[pi] == 2
		} else {
			ai := s.addrIndex(e.address(k))
			s.tidy(&e.mw.tabs[pi][ai])
			full = e.fullDry(t, pi, ai)
		}
		if full {
			e.mat[pos], e.fbit[pos] = matFull, fb
			return
		}
	}
	j := e.nm
	e.nm++
	e.mat[pos] = uint16(e.nm)
	e.mah[j] = mapAhead{k: k, bit: fb, pos: uint16(pos)}
}

// queueFilter is the filter place of index key k, whose line it queues
// for prefetching (in groups of warmGroup).
func (e *SNAT) queueFilter(k uint64) uint64 {
	fb := e.mw.filt.pos(k)
	e.fpf[e.nq&(packet.MaxBatch-1)] = e.mw.filt.line(fb)
	if e.nq++; e.nq%warmGroup == 0 {
		conntrack.Prefetch(e.fpf[e.nq-warmGroup : e.nq])
	}
	return fb
}

// fullDry reports whether the worker has no free port of table (pi, ai)
// and none can be had this batch: its last look for mappings to free
// found none less than a second ago (none is freed before the dry spell
// ends, none is made).
func (e *SNAT) fullDry(t *conntrack.Table, pi, ai int) bool {
	m := e.mw
	if f := &m.nfree[pi][ai]; f[0]+f[1] != 0 {
		return false
	}
	if e.now == 0 {
		e.now = t.Now() // once a batch
	}
	return uint32(e.now>>30) < m.dry[pi][ai]
}

// fullNoMapping reports whether the new flow at batch position pos, which
// warmMapped found on a worker without a port to give, has no mapping
// either (its filter bits are not all set): it then falls back without
// bindMapped.
func (e *SNAT) fullNoMapping(pos int) bool {
	return pos < len(e.mat) && e.mat[pos] == matFull && !e.mw.filt.test(e.fbit[pos])
}

// matFull in SNAT.mat marks a new flow warmMapped found on a worker with
// no port to give (fullNoMapping).
const matFull = 0xffff

// warmGroup is how many filter lines prepare asks for at once (one call).
const warmGroup = 8

// mapAhead is what warmMapped notes of one new flow through the mapping.
type mapAhead struct {
	k   *conntrack.Tuple
	bit uint64 // the endpoint's place in the filter
	pos uint16 // its place in the batch
	// guess is the port warmLines guessed for a new mapping other than
	// the inside port, h the hash of the reply tuple with it (hashed).
	guess  uint16
	hashed bool
	h      uint32
	// skip is how many of the endpoint's drawn ports guess found not
	// free (mapped, or another worker's), rel the worker's releases
	// then: while no mapping has ended since, allocate need not look
	// at them again.
	skip uint8
	rel  uint32
}

// warmLines prefetches the lines the batch's j-th new flow through the
// mapping will read: its inside port's entry, word and metadata in one
// line (a mapping it may have, or one whose end allocate checks, or the
// new mapping that keeps the port; none for a new mapping when the port
// is mapped and no mapping can have ended yet), and, with its filter bits
// set, its index slot; with the bits not all set, none when there is no
// free port (the flow falls back at once), else also those of the new
// mapping it will make when that does not keep the inside port: the entry
// of the port allocate will most likely give it (guess), its
// index slot, and the flow table's line for the reply tuple with that port
// (prepare prefetched the one with the inside port), whose hash is kept
// for the claim. Each of these was a miss a new mapping waited for.
func (e *SNAT) warmLines(j int) {
	s, m := e.ms, e.mw
	a := &e.mah[j]
	k := a.k
	set := m.filt.test(a.bit)
	pi := protoIndex(k.Proto)
	addr := e.address(k)
	ai := s.addrIndex(addr)
	mt := &m.tabs[pi][ai]
	f := mt.nfree
	free := f[0]+f[1] > 0
	if !set && !free {
		return
	}
	p := k.Sport
	if p < s.lo || p > s.hi {
		p = s.lo // no slot of its own: any line will do
	}
	i := int(p - s.lo)
	var lines [8]uintptr
	n := 0
	if set || !mt.inUse(uint16(i)) || e.now == 0 || !mt.noneEnded(e.now) {
		// The word and metadata of a mapping the flow may find, of
		// the new one that keeps the inside port, or of one whose
		// end allocate checks; none when the port is mapped and
		// that mapping cannot have ended (the new mapping gets
		// another port and reads and writes nothing of the inside
		// port's).
		lines[0] = uintptr(unsafe.Pointer(&mt.ents[i])) // word and metadata: one line
		n = 1
	}
	if !set && s.block == 0 {
		// A new mapping, certainly.
		if e.gtab != mt {
			e.gtab, e.gtop = mt, [2]int{-1, -1}
		}
		o, skip := s.guess(mt, k, addr, e.worker, &e.gtop)
		a.skip, a.rel = skip, m.releases
		if int(o-s.lo) != i {
			oi := int(o - s.lo)
			x := &m.idx[pi]
			lines[n] = uintptr(unsafe.Pointer(&mt.ents[oi]))
			lines[n+1] = uintptr(unsafe.Pointer(&x.slots[x.slot(endpointKey(k.Src, k.Sport))]))
			n += 2
			if at := e.nf.at[a.pos]; at != 0 && e.nf.t != nil {
				// The claim of the reply tuple with that port: prepare
				// prefetched the one with the inside port.
				r := e.nf.keys[at-1]
				r.Dport = o
				a.guess, a.hashed, a.h = o, true, e.nf.t.Bucket(&r)
				e.nf.t.WarmClaim(a.h)
			}
		}
		conntrack.Prefetch(lines[:n])
		return
	}
	if set {
		x := &m.idx[pi]
		lines[n] = uintptr(unsafe.Pointer(&x.slots[x.slot(endpointKey(k.Src, k.Sport))]))
		n++
	}
	conntrack.Prefetch(lines[:n])
}

// guess is the port allocate will most likely give a new mapping of k's
// inside endpoint (a worker with free ports, no port blocks), from the
// worker's bitmaps and free stacks alone, for warmLines: flows bound in
// between, DNAT ports and mappings that ended may make allocate choose
// another, which only wastes the prefetch. top is, per parity, where on
// the free stack the batch's previous guess from it was (-1: none): the
// flows between them and this one pop the stack down to it first, so
// this guess looks below it (each guess from the top would name the same
// port, right for the first flow only: on a table nearly full, where most
// new mappings come from the stacks, three in five guesses were wrong).
func (s *mapStore) guess(mt *mapTable, k *conntrack.Tuple, addr uint32, w int, top *[2]int) (uint16, uint8) {
	a := k.Sport
	if a >= s.lo && a <= s.hi && !mt.inUse(a-s.lo) {
		return a, 0
	}
	x := drawSeed(k, addr)
	for d := range uint8(flowCandidates) {
		if p, ok := s.nextDraw(&x, a); ok && s.owner(p) == w && !mt.inUse(p-s.lo) {
			return p, d
		}
	}
	for _, par := range [2]uint16{a & 1, 1 - a&1} {
		if mt.nfree[par] == 0 {
			continue // pop gives none of this parity
		}
		st := mt.free[par]
		from := len(st)
		if t := top[par]; t >= 0 && t < from {
			from = t
		}
		// Ports mapped out of order stay on the stack (take): pop
		// skips them, and so does the guess, up to guessDepth.
		for i := from - 1; i >= max(from-guessDepth, 0); i-- {
			if !mt.inUse(st[i] - s.lo) {
				top[par] = i
				return st[i], flowCandidates
			}
		}
		top[par] = max(from-guessDepth, 0) // not looked at again this batch
		break                              // pop goes deeper into this stack
	}
	return s.lo, flowCandidates
}

// guessDepth bounds the free-stack places one guess looks at.
const guessDepth = 64

// drawSeed starts the draw of ports for a new mapping of k's inside
// endpoint on outside address addr (allocate, guess).
func drawSeed(k *conntrack.Tuple, addr uint32) uint64 {
	x := uint64(k.Src)<<32 | uint64(k.Sport)<<16 | uint64(k.Proto)
	return x ^ uint64(addr)*0x9e3779b97f4a7c15
}

// nextDraw advances the draw x and returns its next port, of inside port
// a's parity (ok false: the draw fell on the range's last port, of the
// other parity). A port of the other parity is moved up by one without a
// branch: which parity a draw gives is a coin toss, and its branch was
// mispredicted every other draw.
func (s *mapStore) nextDraw(x *uint64, a uint16) (uint16, bool) {
	span := uint64(s.hi-s.lo) + 1
	*x = (*x ^ *x>>29) * 0xbf58476d1ce4e5b9
	p := uint32(s.lo) + uint32(uint64(uint32(*x>>32))*span>>32)
	p += (p ^ uint32(a)) & 1
	return uint16(p), p <= uint32(s.hi)
}

// claimMapped makes reply (with the mapping's port) the flow's reply
// tuple, unless a reload pinned it elsewhere or another flow holds it.
func (e *SNAT) claimMapped(t *conntrack.Table, c *conntrack.Conn, idx uint32, reply *conntrack.Tuple, pos int) bool {
	if *reply == c.T[1] {
		return true
	}
	if e.steer.Pins() != nil && e.pinned(reply) {
		return false
	}
	h, ok := e.guessHash(t, pos, reply.Dport)
	if !ok {
		h = e.nf.hash(t, reply, pos)
	}
	return e.claim(t, c, idx, reply, h)
}

// guessHash is the hash warmLines computed of the reply tuple with port,
// when port is its guess for the new flow at batch position pos.
func (e *SNAT) guessHash(t *conntrack.Table, pos int, port uint16) (uint32, bool) {
	if pos < len(e.mat) && t == e.nf.t {
		if j := e.mat[pos]; j != 0 && j != matFull {
			if a := &e.mah[j-1]; a.hashed && a.guess == port {
				return a.h, true
			}
		}
	}
	return 0, false
}

// guessSkip is how many of the drawn ports of the new flow at batch
// position pos allocate need not look at: those warmLines' guess found
// not free, when no mapping has ended since (a mapped port becomes free
// only by release).
func (e *SNAT) guessSkip(pos int) uint8 {
	if pos < len(e.mat) {
		if j := e.mat[pos]; j != 0 && j != matFull {
			if a := &e.mah[j-1]; a.rel == e.mw.releases {
				return a.skip
			}
		}
	}
	return 0
}

// allocate picks a free port of this worker for a new mapping of k's
// inside endpoint: its own port (RFC 4787 REQ-3 port preservation), else
// one of the same parity (REQ-4), drawn from the endpoint first, else any;
// when none is free, a few mappings that ended are freed first.
func (e *SNAT) allocate(t *conntrack.Table, mt *mapTable, addr uint32, k *conntrack.Tuple, now int64, pos int) (uint16, bool) {
	s, m := e.ms, e.mw
	if s.block > 0 {
		return e.allocateBlock(t, mt, addr, k, now) // portblock.go
	}
	if f := mt.nfree; f[0]+f[1] == 0 {
		// No free port (the usual state of a worker whose ports are
		// all mapped): free some mappings that ended, if a look a
		// second ago found any, else give up at once.
		s.reclaim(t, m, mt, e.worker, now)
		if f[0]+f[1] == 0 {
			return 0, false
		}
	}
	a := k.Sport
	if a >= s.lo && a <= s.hi && (!mt.inUse(a-s.lo) || !mt.noneEnded(now)) && !e.steer.IsPublic(k.Proto, addr, a) {
		// Whether it is mapped is read from the worker's bitmap (a
		// port of this worker's: mapped checked the owner), its
		// metadata only when the mapping may have ended; nothing
		// more (not whether it is a DNAT port either) when it is
		// mapped and no mapping can have ended yet.
		if mt.inUse(a-s.lo) && s.expired(t, mt, a, now) {
			s.release(m, mt, a)
		}
		if !mt.inUse(a - s.lo) {
			s.take(mt, a)
			return a, true
		}
	}
	// Then ports drawn from the inside endpoint and the outside address
	// alone, of the same parity: the same after a restart (a flow picked
	// up again mid-stream by Conntrack's loose pickup gets the port it
	// had, as the per-destination choice's flow candidates do), and
	// the same in two instances that see the same flows.
	x := drawSeed(k, addr)
	skip := e.guessSkip(pos)
	for d := range uint8(flowCandidates) {
		// Whether the port is mapped is read from the worker's bitmap
		// (its word's bit, without a random line a candidate); not
		// at all for the draws guess found mapped, when none has
		// ended since.
		if p, ok := s.nextDraw(&x, a); d >= skip && ok && s.owner(p) == e.worker && !mt.inUse(p-s.lo) && !e.steer.IsPublic(k.Proto, addr, p) {
			s.take(mt, p)
			return p, true
		}
	}
	par := int(a & 1)
	if o, ok := s.pop(e.steer, k.Proto, addr, mt, par); ok {
		return o, true
	}
	return s.pop(e.steer, k.Proto, addr, mt, 1-par)
}

// lettingIn reports whether any of stores l may let a new flow in
// (inbound): through hairpinning, when it has inside networks, or
// through its filtering. DNAT asks once a batch.
func lettingIn(l []*mapStore) bool {
	for _, s := range l {
		if len(s.inside) > 0 || s.filtering != filterAPD {
			return true
		}
	}
	return false
}

// inbound is DNAT's binding of a new flow to an outside address and port
// of a mapping whose filtering lets it in: the reply tuple that sends it
// to the inside endpoint (RFC 4787 REQ-8, RFC 5382 REQ-3).
func (e *DNAT) inbound(t *conntrack.Table, c *conntrack.Conn) (conntrack.Tuple, bool) {
	k := &c.T[0]
	l := e.maps.list.Load()
	if l == nil || k.Proto != packet.ProtoTCP && k.Proto != packet.ProtoUDP {
		return conntrack.Tuple{}, false
	}
	var now int64
	for _, s := range *l {
		if !s.outside(k.Dst, k.Dport) {
			// Neither a mapping's address and port: nothing
			// to hairpin to or let in (the common case, a flow
			// from an inside host to the internet, decided by
			// this test alone).
			continue
		}
		if s.fromInside(k.Src) {
			// Hairpinning (RFC 4787 REQ-9, RFC 5382 REQ-8): an
			// inside host reaches another's mapping whatever the
			// filtering. The mapping may be another worker's: only
			// its word is read (atomic).
			if a, p, ok := s.hairpinTarget(k.Proto, k.Dst, k.Dport); ok {
				reply := c.T[1]
				reply.Src, reply.Sport = a, p
				return reply, true
			}
			continue
		}
		if s.filtering == filterAPD {
			continue // only replies come in: nothing to bind
		}
		if now == 0 {
			now = t.Now()
		}
		if a, p, ok := s.inbound(t, k.Proto, k.Src, k.Dst, k.Dport, now); ok {
			reply := c.T[1]
			reply.Src, reply.Sport = a, p
			return reply, true
		}
	}
	return conntrack.Tuple{}, false
}

// outside reports whether addr:port is one of the store's outside
// addresses with a port of its range (where every mapping is).
func (s *mapStore) outside(addr uint32, port uint16) bool {
	return port >= s.lo && port <= s.hi && s.addrs[s.addrIndex(addr)] == addr
}

// fromInside reports whether a is in the store's inside networks.
func (s *mapStore) fromInside(a uint32) bool {
	for _, p := range s.inside {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// hairpinTarget is the inside endpoint of the mapping addr:port (proto),
// read from its word alone (any worker may ask).
func (s *mapStore) hairpinTarget(proto uint8, addr uint32, port uint16) (uint32, uint16, bool) {
	if port < s.lo || port > s.hi {
		return 0, 0, false
	}
	ai := s.addrIndex(addr)
	if s.addrs[ai] != addr {
		return 0, 0, false
	}
	v := s.ents[protoIndex(proto)][ai][port-s.lo].word.Load()
	if v&wordUsed == 0 {
		return 0, 0, false
	}
	return uint32(v >> 32), uint16(v >> 16), true
}

// bindHairpinMapped is the hairpin SNAT's binding of a flow DNAT sent from
// one inside endpoint to another's mapping: its source becomes the
// sender's own mapping (RFC 4787 REQ-9a: "External source IP address and
// port"), read from its port's word when the mapping kept its port (any
// worker may), or from the index when this worker owns it. Otherwise it
// gets a port of this worker's, chosen per destination (bind with byPort):
// FromDevice steers both directions of a flow between two inside
// endpoints through mappings to the lower of their ports' owners, this
// worker, and a port it owns keeps the reply here. It reports false for
// flows not DNAT'd by a mapping (the DNAT rules' hairpinning).
func (e *SNAT) bindHairpinMapped(t *conntrack.Table, c *conntrack.Conn, idx uint32, pos int) bool {
	k := &c.T[0]
	if k.Proto != packet.ProtoTCP && k.Proto != packet.ProtoUDP || e.steer.IsPublic(k.Proto, k.Dst, k.Dport) {
		return false
	}
	l := e.regs.list.Load()
	if l == nil {
		return false
	}
	for _, s := range *l {
		if _, _, ok := s.hairpinTarget(k.Proto, k.Dst, k.Dport); !ok {
			continue
		}
		e.toMapping = true
		reply := c.T[1]
		reply.Dst = k.Dst
		pi, ai := protoIndex(k.Proto), s.addrIndex(k.Dst)
		key := endpointKey(k.Src, k.Sport)
		o, found := uint16(0), false
		if a := k.Sport; a >= s.lo && a <= s.hi && s.ents[pi][ai][a-s.lo].word.Load()&endpoint == key {
			o, found = a, true
		} else if m := s.mw[e.worker]; m != nil && (s.workers == 1 || flowsteer.Port(k.Sport, s.workers) == e.worker) {
			o, found = s.find(m, &m.tabs[pi][ai], key, k.Sport)
		}
		if found {
			reply.Dport = o
			if e.claimMapped(t, c, idx, &reply, pos) {
				return true
			}
		}
		return e.bind(t, c, idx, pos)
	}
	return false
}
