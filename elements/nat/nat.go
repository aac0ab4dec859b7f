package nat

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/junction-dataplane/junction/drivers/rss"

	"github.com/junction-dataplane/junction/elements"
	"github.com/junction-dataplane/junction/elements/conntrack"
	"github.com/junction-dataplane/junction/elements/flowsteer"
	"github.com/junction-dataplane/junction/packet"
)

// Rule is one DNAT rule: packets of Proto to Addr, with a destination port
// in [Lo, Hi] (Lo == 0: any), are sent to one of Backends, chosen per flow.
type Rule struct {
	Proto    uint8
	Addr     uint32
	Lo, Hi   uint16
	Backends []Backend
}

// Backend is a DNAT target; Port 0 keeps the destination port. With a port
// range, Port is where the range starts on the backend (offsets are kept).
type Backend struct {
	Addr uint32
	Port uint16
}

func parseEndpoint(s string, allowRange bool) (addr uint32, lo, hi uint16, err error) {
	host, port, hasPort := strings.Cut(s, ":")
	a, perr := netip.ParseAddr(host)
	if perr != nil || !a.Is4() {
		return 0, 0, 0, fmt.Errorf("bad IPv4 address %q", host)
	}
	b := a.As4()
	addr = uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
	if !hasPort {
		return addr, 0, 0, nil
	}
	l, h, isRange := strings.Cut(port, "-")
	pl, e1 := strconv.ParseUint(l, 10, 16)
	ph := pl
	var e2 error
	if isRange {
		if !allowRange {
			return 0, 0, 0, fmt.Errorf("%q: a backend takes one port (where the range starts)", s)
		}
		ph, e2 = strconv.ParseUint(h, 10, 16)
	}
	if e1 != nil || e2 != nil || pl == 0 || ph < pl {
		return 0, 0, 0, fmt.Errorf("bad port %q: want N or LO-HI within 1-65535", port)
	}
	return addr, uint16(pl), uint16(ph), nil
}

// ParseRule reads "PROTO ADDR[:PORT[-PORT]] -> BACKEND [BACKEND ...]",
// where PROTO is tcp, udp or icmp and a BACKEND is ADDR[:PORT]; backends
// are separated by spaces or commas.
func ParseRule(s string) (Rule, error) {
	var r Rule
	lhs, rhs, ok := strings.Cut(s, "->")
	if !ok {
		return r, errors.New(`missing "->" (want e.g. "tcp 203.0.113.10:80 -> 10.0.0.10:8080")`)
	}
	f := strings.Fields(lhs)
	if len(f) != 2 {
		return r, errors.New(`want "PROTO ADDR[:PORT[-PORT]]" before "->"`)
	}
	switch strings.ToLower(f[0]) {
	case "tcp":
		r.Proto = packet.ProtoTCP
	case "udp":
		r.Proto = packet.ProtoUDP
	case "icmp":
		r.Proto = packet.ProtoICMP
	default:
		return r, fmt.Errorf("protocol %q: want tcp, udp or icmp", f[0])
	}
	var err error
	if r.Addr, r.Lo, r.Hi, err = parseEndpoint(f[1], true); err != nil {
		return r, err
	}
	if r.Proto == packet.ProtoICMP && r.Lo != 0 {
		return r, errors.New("icmp has no ports")
	}
	for _, b := range strings.FieldsFunc(rhs, func(c rune) bool { return c == ' ' || c == ',' || c == '\t' }) {
		a, p, _, err := parseEndpoint(b, false)
		if err != nil {
			return r, err
		}
		if r.Proto == packet.ProtoICMP && p != 0 {
			return r, errors.New("icmp has no ports")
		}
		if p != 0 && r.Hi > r.Lo && int(p)+int(r.Hi-r.Lo) > 65535 {
			return r, fmt.Errorf("backend %s: the range does not fit above port %d", b, p)
		}
		r.Backends = append(r.Backends, Backend{a, p})
	}
	if len(r.Backends) == 0 {
		return r, errors.New(`no backend after "->"`)
	}
	return r, nil
}

// DNATConfig is DNAT's config.
type DNATConfig struct {
	Rules []string `toml:"rules"`
	rules []Rule
}

// Validate parses the rules.
func (c *DNATConfig) Validate() error {
	c.rules = c.rules[:0]
	for i, s := range c.Rules {
		r, err := ParseRule(s)
		if err != nil {
			return elements.Errorf("rules", "rule %d %q: %v", i, s, err)
		}
		c.rules = append(c.rules, r)
	}
	return nil
}

// SNATConfig is SNAT's config.
type SNATConfig struct {
	To    string `toml:"to"`
	Ports string `toml:"ports"`
	// ReplyDevice names the device replies arrive on (snatrss.go).
	ReplyDevice string `toml:"reply_device"`
	// Hairpin limits the bindings to flows DNAT translated: the SNAT on
	// the path back into the inside network (hairpinning).
	Hairpin bool `toml:"hairpin"`
	// Inside, Mapping, Filtering and the timeouts set the
	// endpoint-independent mapping (mapping.go, snatmap.go).
	Mapping    string `toml:"mapping"`
	Inside     string `toml:"inside"`
	Filtering  string `toml:"filtering"`
	UDPTimeout string `toml:"udp_timeout"`
	TCPTimeout string `toml:"tcp_timeout"`
	// PortBlock: port blocks per inside host, given deterministically or
	// in bulk (PortBlockAlloc) (portblock.go).
	PortBlock      int    `toml:"port_block"`
	PortBlockAlloc string `toml:"port_block_alloc"`

	to        []uint32
	lo, hi    uint16
	inside    []flowsteer.Prefix
	eim       bool
	filtering int
	timeout   [2]uint32
	bulk      bool
}

// Validate parses the addresses and the port range.
func (c *SNATConfig) Validate() error {
	c.to = c.to[:0]
	for _, s := range strings.FieldsFunc(c.To, func(r rune) bool { return r == ' ' || r == ',' }) {
		a, p, _, err := parseEndpoint(s, false)
		if err != nil || p != 0 {
			return elements.Errorf("to", "%q: want IPv4 addresses (no port: see ports)", s)
		}
		c.to = append(c.to, a)
	}
	l, h, ok := strings.Cut(strings.TrimSpace(c.Ports), "-")
	pl, e1 := strconv.ParseUint(l, 10, 16)
	ph, e2 := pl, error(nil)
	if ok {
		ph, e2 = strconv.ParseUint(h, 10, 16)
	}
	if e1 != nil || e2 != nil || pl == 0 || ph < pl {
		return elements.Errorf("ports", "%q: want LO-HI within 1-65535, e.g. 1024-65535", c.Ports)
	}
	c.lo, c.hi = uint16(pl), uint16(ph)
	return c.validateMapping()
}

func init() {
	elements.Register(elements.Type{
		Name:      "DNAT",
		NewConfig: func() any { return &DNATConfig{} },
		New:       newDNAT,
		In:        1, Out: 1,
		Doc:        dnatManual,
		TakesState: true, // a reload keeps its state (reload.go)
	})
	elements.Register(elements.Type{
		Name: "SNAT",
		NewConfig: func() any {
			return &SNATConfig{Ports: "1024-65535", Mapping: "endpoint-independent",
				Filtering: "address-and-port-dependent", UDPTimeout: "5m", TCPTimeout: "4m"}
		},
		New: newSNAT,
		In:  1, Out: 1,
		Doc:        snatManual,
		TakesState: true, // a reload keeps its bindings (reload.go)
	})
}

// DNAT is one worker's instance.
type DNAT struct {
	translator
	nf    newFlows
	rules []Rule
	steer *flowsteer.Table // the graph's, where the rules' reverses are published

	flows    conntrack.TableRef // the worker's flow table, for a reload
	ruleGone *atomic.Uint64     // flows a reload removed (reload.go)
	maps     *mapRegistry       // SNAT mappings that let new flows in (snatmap.go)
	// open: a store of maps may let this batch's new flows in (it has
	// inside networks, whose hosts reach each other's mappings, or a
	// filtering other than address-and-port-dependent); decided once a
	// batch (lettingIn), so that the new flows of a graph whose stores
	// let nothing in do not look at them.
	open bool
}

func newDNAT(cfg any, ctx *elements.Context) (elements.Element, error) {
	c := cfg.(*DNATConfig)
	if len(c.rules) != len(c.Rules) {
		if err := c.Validate(); err != nil {
			return nil, err
		}
	}
	e := &DNAT{rules: c.rules, flows: conntrack.RefOf(ctx), ruleGone: ctx.Stats.Counter("reload: rule removed"),
		maps: registryOf(ctx)}
	e.translator = translator{manip: manipDst, done: conntrack.FlagDNATDone, active: len(c.rules) > 0,
		bind: e.bindNew, out: ctx.Outputs[0], st: ctx.Stats,
		fail: ctx.Stats.Reason("reply tuple in use"), translated: ctx.Stats.Counter("translated")}
	e.steer = flowsteer.Of(ctx)
	e.steer.Set(e, reverses(e.rules))
	return e, nil
}

// Close withdraws the element's rules from the graph's steering table.
func (e *DNAT) Close() error {
	e.steer.Set(e, nil)
	return nil
}

// Push decides new flows and rewrites destinations.
func (e *DNAT) Push(_ int, b *packet.Batch) {
	if len(e.rules) > 0 {
		e.prepare(b)
	}
	// Mappings whose filtering lets new flows in bind them too.
	l := e.maps.list.Load()
	e.active = len(e.rules) > 0 || l != nil
	e.open = l != nil && lettingIn(*l)
	e.push(b)
}

// bindNew decides a new flow: its Done flag is set first, so that a flow
// whose reply tuple was taken is not tried again.
func (e *DNAT) bindNew(t *conntrack.Table, c *conntrack.Conn, idx uint32, pos int) (ok, made bool) {
	c.Flags |= conntrack.FlagDNATDone
	if !e.bind(t, c, idx, pos) {
		return false, false
	}
	return true, c.Flags&conntrack.FlagDNAT != 0
}

// bind looks the flow's original tuple up in the rules and, on a match,
// changes its reply tuple to come from the chosen backend.
func (e *DNAT) bind(t *conntrack.Table, c *conntrack.Conn, idx uint32, pos int) bool {
	reply, match := e.target(c)
	if !match && e.open {
		reply, match = e.inbound(t, c)
	}
	if !match || reply == c.T[1] {
		return true
	}
	if !t.ClaimReply(idx, &reply, e.nf.hash(t, &reply, pos)) {
		return false
	}
	c.Flags |= conntrack.FlagDNAT
	return true
}

// prepare prefetches the lookups of the batch's new flows that a rule
// translates.
func (e *DNAT) prepare(b *packet.Batch) {
	var t *conntrack.Table
	m := 0
	for i, p := range b.Pkts {
		e.nf.at[i] = 0
		tt, c := undecided(p, conntrack.FlagDNATDone)
		if c == nil {
			continue
		}
		if r, match := e.target(c); match && r != c.T[1] {
			if t != nil && tt != t {
				continue // another table's flow: hashed by bind
			}
			t = tt
			e.nf.keys[m] = r
			m++
			e.nf.at[i] = uint16(m)
		}
	}
	e.nf.t = t
	e.nf.warm(t, m)
}

// target is the reply tuple the first rule matching flow c gives it
// (match false: no rule matches).
func (e *DNAT) target(c *conntrack.Conn) (reply conntrack.Tuple, match bool) {
	k := &c.T[0]
	for i := range e.rules {
		r := &e.rules[i]
		if r.Proto != k.Proto || r.Addr != k.Dst || r.Lo != 0 && (k.Dport < r.Lo || k.Dport > r.Hi) {
			continue
		}
		be := &r.Backends[0]
		if len(r.Backends) > 1 {
			fh := packet.FlowHashV4(k.Src, k.Dst, k.Sport, k.Dport, k.Proto)
			be = &r.Backends[int(uint64(fh)*uint64(len(r.Backends))>>32)]
		}
		port := k.Dport
		if be.Port != 0 {
			port = be.Port + (k.Dport - r.Lo)
			if r.Lo == 0 {
				port = be.Port
			}
		}
		reply = c.T[1]
		reply.Src = be.Addr
		if k.Proto != packet.ProtoICMP {
			reply.Sport = port
		}
		return reply, true
	}
	return reply, false
}

// newFlows is what the NAT elements keep to prepare a batch's new flows:
// the reply tuple each will look up first, and its hash.
type newFlows struct {
	keys [packet.MaxBatch]conntrack.Tuple
	hs   [packet.MaxBatch]uint32
	// at maps a position in the batch to its packet's key (index + 1;
	// 0: none).
	at [packet.MaxBatch]uint16
	// t is the table the hashes are of (all keys are its flows').
	t *conntrack.Table
	// n is the number of keys (SNAT).
	n int
}

// prepared is the key (index + 1; 0: none) prepared for the packet at pos
// in the batch when it is a flow of table t.
func (w *newFlows) prepared(t *conntrack.Table, pos int) uint16 {
	if t != w.t || pos >= len(w.at) {
		return 0
	}
	return w.at[pos]
}

// hash is the table's hash of reply tuple k for the packet at pos in the
// batch: the one warm computed when k is the key prepared for it (the
// usual case: the first tuple a new flow tries), else computed now.
func (w *newFlows) hash(t *conntrack.Table, k *conntrack.Tuple, pos int) uint32 {
	if t == w.t && pos < len(w.at) {
		if a := w.at[pos]; a != 0 && w.keys[a-1] == *k {
			return w.hs[a-1]
		}
	}
	return t.Bucket(k)
}

// warm prefetches the flow-table memory the lookups of the first n keys
// will read (conntrack's Warm): the new flows of a batch look up tuples no
// packet has used, scattered over the table, so done one flow at a time
// each lookup waits for memory in turn.
func (w *newFlows) warm(t *conntrack.Table, n int) {
	if t != nil && n > 0 {
		t.WarmTuples(w.keys[:n], w.hs[:n])
	}
}

// undecided reports whether p is the first packet of a flow in its original
// direction that the NAT element whose done flag is done has not decided,
// and returns the flow (the annotation is tested first: the packets of
// established flows are not new).
func undecided(p *packet.Packet, done uint8) (*conntrack.Table, *conntrack.Conn) {
	if p.Ct.State != packet.CtNew || p.Ct.Dir != 0 {
		return nil, nil
	}
	t, c := conntrack.FlowOf(p)
	if c == nil || c.Flags&(done|conntrack.FlagSeenReply) != 0 {
		return nil, nil
	}
	return t, c
}

// SNAT is one worker's instance.
type SNAT struct {
	translator
	nf              newFlows
	to              []uint32
	lo, hi          uint16
	worker, workers int
	probes          *atomic.Uint64 // conntrack lookups made choosing ports
	lookups         uint64         // this batch's, published once per batch
	pos             int            // the batch position of the flow bind decides (newFlows.hash)
	seed            [2]uint64      // destHash's key
	cursors         [cursorSlots]uint16

	flows    conntrack.TableRef   // the worker's flow table, for a reload
	addrGone *atomic.Uint64       // flows a reload removed (reload.go)
	rss      *rss.Config          // the reply device's RSS (snatrss.go), or nil
	steer    *flowsteer.Table     // the graph's, for its pins (pins.go) and the replies' steering
	hairpin  bool                 // bind only DNAT'd flows
	ct       *conntrack.Table     // the table of the last new flow a bulk block served (Tick's sweep)
	logf     func(string, ...any) // the element's log (Context.Logf)
	// hsrc, hsport are the source of the reply tuple bind is choosing a
	// port for, as FromDevice steers it (flowsteer.Table.Public).
	hsrc   uint32
	hsport uint16
	// byPort: the reply of the flow bind is choosing for is steered by
	// its port's owner (flowsteer's Masq), not by the flow hash;
	// toMapping: the flow is hairpinned to a mapping (bindHairpinMapped),
	// whose replies are.
	byPort, toMapping bool

	// The endpoint-independent mapping (snatmap.go); ms nil: per
	// destination.
	ms                  *mapStore
	mw                  *mapWorker
	regs                *mapRegistry
	made, fellBack      *atomic.Uint64
	mapsMade, fallbacks uint64 // this batch's, published once per batch
	now                 int64  // the batch's clock reading (0: not read yet)
	// The batch's new flows through the mapping (warmMapped): nm of
	// them, each one's tuple and place in the filter, and each
	// position's (index + 1, or matFull with the place in fbit); the filter
	// lines of nq new flows, to prefetch.
	nm   int
	nq   int
	mah  [packet.MaxBatch]mapAhead
	fpf  [packet.MaxBatch]uintptr
	mat  [packet.MaxBatch]uint16
	fbit [packet.MaxBatch]uint64
	// gtab, gtop: the table and, per parity, the free-stack place of
	// the batch's last guess from its free stacks (guess).
	gtab *mapTable
	gtop [2]int
	// full1[protocol index]: with one outside address, whether the
	// worker can give no port this batch (fullDry; 0: not asked yet,
	// 1: no, 2: yes).
	full1 [2]uint8
}

func newSNAT(cfg any, ctx *elements.Context) (elements.Element, error) {
	c := cfg.(*SNATConfig)
	if c.lo == 0 {
		if err := c.Validate(); err != nil {
			return nil, err
		}
	}
	rc, err := replyRSS(c.ReplyDevice, ctx)
	if err != nil {
		return nil, err
	}
	e := &SNAT{to: c.to, lo: c.lo, hi: c.hi, worker: ctx.Worker, workers: max(ctx.Workers, 1),
		seed:  [2]uint64{rand.Uint64(), rand.Uint64()},
		flows: conntrack.RefOf(ctx), addrGone: ctx.Stats.Counter("reload: address removed"), steer: flowsteer.Of(ctx),
		hairpin: c.Hairpin, logf: ctx.Logf}
	e.translator = translator{manip: manipSrc, done: conntrack.FlagSNATDone, active: len(c.to) > 0,
		bind: e.bindNew, out: ctx.Outputs[0], st: ctx.Stats,
		fail: ctx.Stats.Reason("ports exhausted"), translated: ctx.Stats.Counter("translated")}
	e.probes = ctx.Stats.Counter("port probes")
	e.SetReplyRSS(rc)
	e.regs = registryOf(ctx)
	if err := e.setupMapping(c, ctx); err != nil {
		return nil, err
	}
	return e, nil
}

// Push decides new flows and rewrites sources.
func (e *SNAT) Push(_ int, b *packet.Batch) {
	if e.active {
		e.prepare(b)
	}
	e.push(b)
	if e.nm != 0 {
		// The tuples point into the flow table's memory, which a
		// reload may unmap: none is kept past the batch.
		clear(e.mah[:e.nm])
		e.nm = 0
	}
	if e.lookups != 0 {
		e.probes.Add(e.lookups)
		e.lookups = 0
	}
	if e.mapsMade|e.fallbacks != 0 {
		e.made.Add(e.mapsMade)
		e.fellBack.Add(e.fallbacks)
		e.mapsMade, e.fallbacks = 0, 0
	}
}

// bindNew decides a new flow; only a bound one is marked done.
func (e *SNAT) bindNew(t *conntrack.Table, c *conntrack.Conn, idx uint32, pos int) (ok, made bool) {
	if e.hairpin && c.Flags&conntrack.FlagDNAT == 0 {
		return true, false // not hairpinned: forwarded as it is
	}
	e.toMapping = false
	if e.hairpin && e.bindHairpinMapped(t, c, idx, pos) {
		c.Flags |= conntrack.FlagSNATDone
		return true, true
	}
	if !e.bind(t, c, idx, pos) {
		return false, false
	}
	c.Flags |= conntrack.FlagSNATDone
	return true, true
}

// Target is the worker a symmetric flow hash is steered to among workers:
// the multiply-shift mapping FromDevice's software spreading uses.
func Target(hash uint32, workers int) int { return int(uint64(hash) * uint64(workers) >> 32) }
