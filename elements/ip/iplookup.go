package ip

import (
	"net/netip"
	"sync/atomic"

	"github.com/junction-dataplane/junction/elements"
	"github.com/junction-dataplane/junction/elements/ip/route"
	"github.com/junction-dataplane/junction/elements/ip/route/kernelmirror"
	"github.com/junction-dataplane/junction/elements/ip/tables"
	"github.com/junction-dataplane/junction/packet"
)

// IPLookupConfig is IPLookup's configuration. IPLookup reads a route table
// of the graph ([tables.NAME], the table key: main by default), or, when it
// has routes, routes_file or source keys of its own, a table of its own made
// from them (the keys of a [tables] section, inline).
type IPLookupConfig struct {
	Routes     []string `toml:"routes"`
	RoutesFile string   `toml:"routes_file"`
	Miss       int      `toml:"miss"`
	Source     string   `toml:"source"`
	KTable     string   `toml:"table"`
	Interfaces []string `toml:"interfaces"`
	NetNS      string   `toml:"netns"`
	Offload    []string `toml:"offload"`
	MaxRoutes  int      `toml:"max_routes"`
	// Interfaces6, with source = "kernel", gives IPv6 routes ports of
	// their own (after interfaces' ports), for dual-stack graphs whose
	// IPv4 and IPv6 packets leave through different elements.
	Interfaces6 []string `toml:"interfaces6"`
	Unreachable int      `toml:"unreachable"`
	Prohibit    int      `toml:"prohibit"`

	own  tables.Config  // the table made of the inline keys
	tbl  *tables.Config // the table read: &own, or the graph's (UseTable)
	outs int
}

// ownTable reports whether the config makes a table of its own (the
// routes, routes_file or source keys are given) rather than reading one
// of the graph's.
func (c *IPLookupConfig) ownTable() bool {
	return len(c.Routes) > 0 || c.RoutesFile != "" || c.Source != ""
}

// ReadsTable names the graph's table the element reads (ok false: it has
// a table of its own), for the graph loader.
func (c *IPLookupConfig) ReadsTable() (name string, ok bool) {
	if c.ownTable() {
		return "", false
	}
	if c.KTable == "" {
		return tables.Main, true
	}
	return c.KTable, true
}

// Table is the configuration of the table the element reads (nil before
// Validate).
func (c *IPLookupConfig) Table() *tables.Config { return c.tbl }

// UseTable gives the config the graph's table it reads (validated), before
// Validate.
func (c *IPLookupConfig) UseTable(t *tables.Config) { c.tbl = t }

// ValidateState is Validate for a graph loaded for the router whose state
// s is (a reload): an unchanged routes_file that router's IPLookups were
// built with is not parsed and checked again (route.SetCache).
func (c *IPLookupConfig) ValidateState(s *elements.GraphState) error {
	return c.validate(s)
}

// Validate checks the keys; a table of the element's own is parsed and
// checked then (at load time, so that a bad line stops the graph before
// it starts), as the loader checks a [tables] section.
func (c *IPLookupConfig) Validate() error { return c.validate(nil) }

func (c *IPLookupConfig) validate(s *elements.GraphState) error {
	for _, k := range []struct {
		key string
		v   int
	}{{"miss", c.Miss}, {"unreachable", c.Unreachable}, {"prohibit", c.Prohibit}} {
		if k.v < -1 || k.v > route.MaxPort {
			return elements.Errorf(k.key, "%d out of range: -1 (drop) or a port 0..%d", k.v, route.MaxPort)
		}
	}
	if c.ownTable() {
		c.own = tables.Config{Routes: c.Routes, RoutesFile: c.RoutesFile, Source: c.Source, KernelTable: c.KTable,
			Interfaces: c.Interfaces, Interfaces6: c.Interfaces6, NetNS: c.NetNS, MaxRoutes: c.MaxRoutes,
			Offload: c.Offload, KernelTableKey: "table"}
		var err error
		if s != nil {
			err = c.own.ValidateState(s)
		} else {
			err = c.own.Validate()
		}
		if err != nil {
			return err
		}
		c.tbl = &c.own
	} else {
		for _, k := range []struct {
			key string
			set bool
		}{{"interfaces", len(c.Interfaces) > 0}, {"interfaces6", len(c.Interfaces6) > 0}, {"netns", c.NetNS != ""},
			{"max_routes", c.MaxRoutes != 0}, {"offload", len(c.Offload) > 0}} {
			if k.set {
				name, _ := c.ReadsTable()
				return elements.Errorf(k.key, "belongs to the table this IPLookup reads: set it in [tables.%s] (or give the IPLookup routes, routes_file or source of its own)", name)
			}
		}
		if c.tbl == nil {
			name, _ := c.ReadsTable()
			return elements.Errorf("table", "reads table %q: no [tables.%s] in the graph (give the table, or routes, routes_file or source = \"kernel\" of the element's own)", name, name)
		}
	}
	c.outs = max(c.Miss+1, c.Unreachable+1, c.Prohibit+1, c.tbl.Ports())
	return nil
}

// Ports implements elements.PortCounter: one output per port a route or
// miss names, up to the highest (with source = "kernel": one per
// interface).
func (c *IPLookupConfig) Ports() (in, out int) { return 1, c.outs }

func init() {
	elements.Register(elements.Type{
		Name:      "IPLookup",
		NewConfig: func() any { return &IPLookupConfig{Miss: -1, Unreachable: -1, Prohibit: -1} },
		New:       newIPLookup,
		In:        1, Out: -1,
		Doc:        ipLookupManual,
		TakesState: true, // a reload keeps its table (shared.go)
	})
}

// IPLookup is one worker's instance. The table is shared by every worker's
// instance of every IPLookup that reads it (shared.go).
type IPLookup struct {
	table *route.Table
	sh    *sharedTable
	// ctl is sh for the control plane (live.go): Close clears sh, and a
	// control command may still run while the router stops.
	ctl   *sharedTable
	name  string
	outs  []*elements.Output
	split *elements.Dispatch // a batch bound for several ports
	miss  int
	st    *elements.Stats
	dst   []uint32
	val   []uint16

	// Ports for packets of unreachable and prohibit routes (-1: dropped).
	unreachPort, prohibitPort int

	noRoute, tooShort, notIP, noPort   elements.Reason
	blackhole, unreachable, prohibited elements.Reason
	unreachAnswered, prohibitAnswered  *atomic.Uint64
}

func newIPLookup(cfg any, ctx *elements.Context) (elements.Element, error) {
	c := cfg.(*IPLookupConfig)
	v, err := ctx.Shared(func() (any, error) { return acquireTable(ctx, c) })
	if err != nil {
		return nil, err
	}
	sh := v.(*sharedTable)
	sh.refs.Add(1)
	sh.noteOuts(len(ctx.Outputs))
	st := ctx.Stats
	e := &IPLookup{table: sh.table, sh: sh, ctl: sh, name: ctx.Name, outs: ctx.Outputs, miss: c.Miss, st: st,
		unreachPort: c.Unreachable, prohibitPort: c.Prohibit,
		noRoute: st.Reason("no route"), tooShort: st.Reason("too short"),
		notIP: st.Reason("not ip"), noPort: st.Reason("no such port"),
		blackhole: st.Reason("blackhole route"), unreachable: st.Reason("unreachable route"),
		prohibited:      st.Reason("prohibit route"),
		unreachAnswered: st.Counter("unreachable route answered"), prohibitAnswered: st.Counter("prohibit route answered"),
		dst: make([]uint32, max(ctx.Batch, packet.DefaultBatch)), val: make([]uint16, max(ctx.Batch, packet.DefaultBatch))}
	e.split = elements.NewDispatch(ctx, e.noPort)
	return e, nil
}

// Table returns the route table this instance reads (shared by all
// workers and lookups), for control-plane code that updates it.
func (e *IPLookup) Table() *route.Table { return e.table }

// Close releases the instance's hold on its table: the last one stops the
// kernel route mirror and the fast-path mirror.
func (e *IPLookup) Close() error {
	if e.sh == nil {
		return nil
	}
	sh := e.sh
	e.sh = nil
	return sh.release()
}

// stopped decides what becomes of a packet whose route's port is not one
// of this element's outputs: a route of another type than unicast (its
// port is -type) sends it to the unreachable or prohibit port, or drops
// it with the type's reason; a port the element lacks drops it. It returns
// the output, or -1 when the packet was dropped. Off the common path: a
// unicast route's port passed one comparison before it.
func (e *IPLookup) stopped(p *packet.Packet, port int) int {
	switch route.TypeOfOut(port) {
	case route.Blackhole:
		e.st.Drop(p, e.blackhole)
	case route.Unreachable:
		if e.unreachPort >= 0 {
			e.unreachAnswered.Add(1)
			return e.unreachPort
		}
		e.st.Drop(p, e.unreachable)
	case route.Prohibit:
		if e.prohibitPort >= 0 {
			e.prohibitAnswered.Add(1)
			return e.prohibitPort
		}
		e.st.Drop(p, e.prohibited)
	default:
		// Only a table changed at run time (the control socket, the
		// kernel mirror) can name a port this instance does not have;
		// the loader checked the config.
		e.st.Drop(p, e.noPort)
	}
	return -1
}

// Packet kinds found by Push's first pass (the dst slot holds the IPv4
// destination; other kinds use the value slot as the marker).
const (
	kindV4 = iota
	kindV6
	kindShort
	kindNotIP
)

// Push looks every packet up, records its port in p.Port, and then either
// passes the whole batch on (all to one port: the common case) or splits it.
// The batch is looked up in one table version, in three passes: headers,
// then all IPv4 lookups together (their cache misses overlap), then the
// next hops.
func (e *IPLookup) Push(_ int, b *packet.Batch) {
	f := e.table.Current() // one version for the whole batch
	n0 := len(b.Pkts)
	if n0 > len(e.dst) {
		e.dst = make([]uint32, n0) // only for batches larger than configured
		e.val = make([]uint16, n0)
	}
	dst, val := e.dst[:n0], e.val[:n0]
	kinds := 0 // bit per kind seen
	for i, p := range b.Pkts {
		l3 := int(p.L3)
		d := p.Data
		k := kindShort
		var a uint32
		if l3 < len(d) {
			switch d[l3] >> 4 {
			case 4:
				if len(d)-l3 >= packet.IPv4MinLen {
					k = kindV4
					a = packet.IPv4(d[l3:]).DstU32()
				}
			case 6:
				if len(d)-l3 >= packet.IPv6Len {
					k = kindV6
				}
			default:
				k = kindNotIP
			}
		}
		dst[i] = a
		val[i] = uint16(k)
		kinds |= 1 << k
	}
	if kinds == 1<<kindV4 {
		f.Lookup4Batch(dst, val)
	} else if kinds == 1<<kindV6 {
		f.Lookup6Batch(b.Pkts, val)
	} else {
		for i := range val {
			switch val[i] {
			case kindV4:
				val[i] = f.Lookup4(dst[i])
			case kindV6:
				p := b.Pkts[i]
				a := packet.IPv6(p.Data[p.L3:]).Dst16()
				val[i] = f.Lookup6(&a)
			case kindShort:
				e.st.Drop(b.Pkts[i], e.tooShort)
				b.Pkts[i] = nil
			default:
				e.st.Drop(b.Pkts[i], e.notIP)
				b.Pkts[i] = nil
			}
		}
	}
	n := 0
	first, same := -1, true
	for i, p := range b.Pkts {
		if p == nil {
			continue
		}
		var port int
		if v := val[i]; v != 0 {
			hops := f.Hops(v)
			h := &hops[0]
			if len(hops) > 1 {
				fh := p.FlowHash
				if fh == 0 {
					fh = packet.FlowHash(p)
					p.FlowHash = fh
				}
				h = &hops[route.Pick(len(hops), fh)]
			}
			port = h.Out
			if h.Via.IsValid() {
				p.NextHop = h.Via
			} else if l3 := p.Data[p.L3:]; l3[0]>>4 == 4 {
				p.NextHop = netip.AddrFrom4(packet.IPv4(l3).Dst4())
			} else {
				p.NextHop = netip.AddrFrom16(packet.IPv6(l3).Dst16())
			}
		} else if e.miss >= 0 {
			port = e.miss
			p.NextHop = netip.Addr{}
		} else {
			e.st.Drop(p, e.noRoute)
			continue
		}
		if uint(port) >= uint(len(e.outs)) {
			// A blackhole, unreachable or prohibit route (negative
			// port), or a port this instance lacks.
			if port = e.stopped(p, port); port < 0 {
				continue
			}
		}
		p.Port = uint16(port)
		if first < 0 {
			first = port
		} else if port != first {
			same = false
		}
		b.Pkts[n] = p
		n++
	}
	if n != n0 {
		b.Truncate(n)
	}
	if n == 0 {
		return
	}
	if same {
		e.outs[first].Push(b) // home run
		return
	}
	e.split.Split(b)
}

// BuildTable builds the table an IPLookup with this (validated) config
// would use, for tools such as `forwarder routes`; with source = "kernel" it
// mirrors the kernel table until stop is called.
func BuildTable(c *IPLookupConfig) (t *route.Table, stop func() error, err error) {
	return BuildTableOf(c.tbl)
}

// BuildTableOf builds the table of a validated table config (BuildTable).
func BuildTableOf(c *tables.Config) (t *route.Table, stop func() error, err error) {
	t, err = route.NewTableChecked(c.Parsed(), c.Limits(), c.Checked())
	if err != nil {
		return nil, nil, err
	}
	if !c.Kernel() {
		return t, func() error { return nil }, nil
	}
	ks, err := kernelmirror.Start(t, c.KernelOptions(), nil)
	if err != nil {
		return nil, nil, err
	}
	return t, ks.Close, nil
}
