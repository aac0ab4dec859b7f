package ip

import (
	"errors"
	"net/netip"
	"strconv"
	"sync/atomic"

	"github.com/junction-dataplane/junction/elements"
	"github.com/junction-dataplane/junction/elements/conntrack"
	"github.com/junction-dataplane/junction/elements/ip/route"
	"github.com/junction-dataplane/junction/elements/offloadkey"
	"github.com/junction-dataplane/junction/packet"
)

// IPLookupConfig is IPLookup's configuration.
type IPLookupConfig struct {
	Routes     []string `toml:"routes"`
	RoutesFile string   `toml:"routes_file"`
	Miss       int      `toml:"miss"`
	Source     string   `toml:"source"`
	KTable     string   `toml:"table"`
	Interfaces []string `toml:"interfaces"`
	// Interfaces6, with source = "kernel", gives IPv6 routes ports of
	// their own (after interfaces' ports), for dual-stack graphs whose
	// IPv4 and IPv6 packets leave through different elements.
	Interfaces6 []string `toml:"interfaces6"`
	NetNS       string   `toml:"netns"`
	MaxRoutes   int      `toml:"max_routes"`
	Offload     []string `toml:"offload"`

	routes  []route.Route   // parsed by Validate
	set     route.Set       // what routes came from: remembered in the router's SetCache when built
	cache   *route.SetCache // during ValidateState only
	checked bool            // routes passed precheck
	outs    int
	ktable  int
	limits  route.Limits
	srcName string // "config" or "kernel"
}

// ValidateState is Validate for a graph loaded for the router whose state
// s is (a reload): an unchanged routes_file that router's IPLookups were
// built with is not parsed and checked again (route.SetCache).
func (c *IPLookupConfig) ValidateState(s *elements.GraphState) error {
	c.cache = route.CacheOf(s)
	defer func() { c.cache = nil }()
	return c.Validate()
}

// Validate parses the routes and the routes file (at load time, so that a
// bad line stops the graph before it starts) and checks the table fits the
// limits before anything is built.
func (c *IPLookupConfig) Validate() error {
	if c.MaxRoutes < 0 {
		return elements.Errorf("max_routes", "%d: want a positive number (0 = %d)", c.MaxRoutes, route.DefaultMaxRoutes)
	}
	c.limits = route.Limits{MaxRoutes: c.MaxRoutes}
	if c.Miss < -1 || c.Miss > route.MaxPort {
		return elements.Errorf("miss", "%d out of range: -1 (drop) or a port 0..%d", c.Miss, route.MaxPort)
	}
	switch c.Source {
	case "", "config":
		c.srcName = "config"
		for _, k := range []struct{ key, val string }{{"table", c.KTable}, {"netns", c.NetNS}} {
			if k.val != "" {
				return elements.Errorf(k.key, "only with source = \"kernel\"")
			}
		}
		if len(c.Interfaces) > 0 {
			return elements.Errorf("interfaces", "only with source = \"kernel\"")
		}
		if len(c.Interfaces6) > 0 {
			return elements.Errorf("interfaces6", "only with source = \"kernel\"")
		}
	case "kernel":
		c.srcName = "kernel"
		if len(c.Routes) > 0 || c.RoutesFile != "" {
			return elements.Errorf("source", "source = \"kernel\" mirrors the kernel's routes: remove routes and routes_file")
		}
		if len(c.Interfaces) == 0 {
			return elements.Errorf("interfaces", "source = \"kernel\" needs interfaces: the kernel interface of each output port, in port order")
		}
		if len(c.Interfaces) > route.MaxPort+1 {
			return elements.Errorf("interfaces", "%d interfaces: at most %d", len(c.Interfaces), route.MaxPort+1)
		}
		if len(c.Interfaces)+len(c.Interfaces6) > route.MaxPort+1 {
			return elements.Errorf("interfaces6", "%d interfaces and %d interfaces6: at most %d ports", len(c.Interfaces), len(c.Interfaces6), route.MaxPort+1)
		}
		for _, key := range []string{"interfaces", "interfaces6"} {
			list, base := c.Interfaces, 0
			if key == "interfaces6" {
				list, base = c.Interfaces6, len(c.Interfaces)
			}
			seen := map[string]int{}
			for i, n := range list {
				if n == "" {
					return elements.Errorf(key, "entry %d is empty", i+1)
				}
				if j, dup := seen[n]; dup {
					return elements.Errorf(key, "%q is both port %d and port %d", n, j, base+i)
				}
				seen[n] = base + i
			}
		}
		t, err := parseKernelTable(c.KTable)
		if err != nil {
			return elements.Errorf("table", "%v", err)
		}
		c.ktable = t
		c.routes = nil
		c.outs = max(c.Miss+1, len(c.Interfaces)+len(c.Interfaces6))
		return c.checkOffload()
	default:
		return elements.Errorf("source", "%q: want \"config\" (routes, routes_file) or \"kernel\"", c.Source)
	}
	set, hit, err := route.LoadSet(c.cache, c.Routes, c.RoutesFile, c.limits.MaxRoutes)
	if err != nil {
		return err
	}
	routes := set.Routes()
	if len(routes) == 0 {
		if c.RoutesFile != "" {
			return elements.Errorf("routes_file", "%s holds no routes", c.RoutesFile)
		}
		return elements.Errorf("routes", "no routes: give routes or routes_file")
	}
	key := "routes"
	if c.RoutesFile != "" {
		key = "routes_file"
	}
	if len(routes) > c.limits.MaxRoutesOrDefault() {
		return elements.Errorf(key, "%d routes exceed max_routes %d", len(routes), c.limits.MaxRoutesOrDefault())
	}
	if !hit {
		if err := route.Precheck(routes); err != nil {
			return elements.Errorf(key, "%v", err)
		}
	}
	c.routes, c.set = routes, set
	c.checked = true
	c.outs = max(c.Miss+1, set.Ports())
	c.cache.Remember(set)
	return c.checkOffload()
}

// checkOffload checks the offload key's shape; the devices are resolved
// when the element is built.
func (c *IPLookupConfig) checkOffload() error {
	if len(c.Offload) > c.outs {
		return elements.Errorf("offload", "%d devices for %d output ports: one per port, in port order (\"\" for a port that is not offloaded)", len(c.Offload), c.outs)
	}
	named := false
	for _, n := range c.Offload {
		named = named || n != ""
	}
	if len(c.Offload) > 0 && !named {
		return elements.Errorf("offload", "names no device")
	}
	return nil
}

func parseKernelTable(s string) (int, error) {
	switch s {
	case "", "main":
		return 254, nil
	case "local":
		return 255, nil
	case "default":
		return 253, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n <= 0 || n > 1<<31-1 {
		return 0, errBadTable(s)
	}
	return n, nil
}

type errBadTable string

func (e errBadTable) Error() string {
	return strconv.Quote(string(e)) + ": want main, local, default or a table number"
}

// Ports implements elements.PortCounter: one output per port a route or
// miss names, up to the highest (with source = "kernel": one per
// interface).
func (c *IPLookupConfig) Ports() (in, out int) { return 1, c.outs }

func init() {
	elements.Register(elements.Type{
		Name:      "IPLookup",
		NewConfig: func() any { return &IPLookupConfig{Miss: -1} },
		New:       newIPLookup,
		In:        1, Out: -1,
		Doc: elements.Doc{
			Synopsis: "IPLookup(routes, [routes_file], [miss], [source], [table], [interfaces], [netns], [max_routes], [offload], [interfaces6])",
			Summary:  "longest-prefix-match IPv4 and IPv6 routing with ECMP: sets the next-hop annotation and picks the output",
			Ports: "input 0: IPv4 or IPv6 packets (header at the L3 offset; the version nibble decides).\n" +
				"outputs 0..N-1: N is one more than the highest port a route's out or miss names " +
				"(with source = \"kernel\": one per interface); a packet leaves on its route's out port.",
			Keys: []elements.Key{
				{Name: "routes", Type: "[]string",
					Doc: "routes, each \"PREFIX [via NEXTHOP]... out PORT...\" (IPv4 or IPv6); a bare address is a host route; " +
						"without via the network is directly connected; several via make an ECMP route " +
						"(\"0.0.0.0/0 via 10.1.0.2 via 10.2.0.2 out 0 out 1\": the i-th via leaves on the i-th out, or all on a single out)"},
				{Name: "routes_file", Type: "string",
					Doc: "a file of routes in the same syntax, one per line; # starts a comment; blank lines are skipped; " +
						"a full Internet table (1M prefixes) loads in about a second"},
				{Name: "miss", Type: "int", Default: "-1", Doc: "output port for packets without a route; -1 drops them"},
				{Name: "source", Type: "string", Default: "config",
					Doc: "\"config\": the routes and routes_file keys; \"kernel\": mirror the IPv4 and IPv6 unicast routes of a kernel " +
						"routing table through netlink (an initial dump, then every change, applied live), so that any " +
						"routing daemon that programs the kernel (BIRD, FRR, ip route) drives the forwarder"},
				{Name: "table", Type: "string", Default: "main", Doc: "with source = \"kernel\": the kernel table (main, local, default or a number)"},
				{Name: "interfaces", Type: "[]string",
					Doc: "with source = \"kernel\": the kernel interface behind each output port, in port order; " +
						"routes through other interfaces are not mirrored (counted as \"kernel routes skipped\")"},
				{Name: "netns", Type: "string", Doc: "with source = \"kernel\": a named network namespace (ip netns) to read; default: the forwarder's own"},
				{Name: "offload", Type: "[]string",
					Doc: "devices with a fast path (driver = \"afxdp\", fastpath = true), one per output port in port order " +
						"(\"\" for a port that is not offloaded): the IPv4 and IPv6 routes leaving on those ports are mirrored into the " +
						"devices' in-kernel fast path, which forwards plain IPv4 packets, and IPv6 TCP and UDP, to a next hop " +
						"ARPQuerier or NDPQuerier resolved, before the graph sees them (see the afxdp driver); ECMP routes and " +
						"routes to other ports stay in the graph. A dual-stack graph whose IPv6 routes leave on their own ports " +
						"names the devices again for those (offload = [\"lan\", \"wan\", \"lan\", \"wan\"]). " +
						"A change reaches the fast path within about 10 ms: every 10 ms the mirror sets what the versions since its last " +
						"round changed (the table journals changed prefixes while a mirror follows it); it walks the whole table only at " +
						"start, after a rebuild (routes_file reload, Replace) or after the fast path refused a change"},
				{Name: "max_routes", Type: "int", Default: "4000000",
					Doc: "the most routes the table may hold; a routes file or a change that would exceed it (or the " +
						"structure's fixed capacity: 32767 /24s holding a longer prefix, 32767 distinct next-hop sets) " +
						"is refused before anything is replaced"},
				{Name: "interfaces6", Type: "[]string",
					Doc: "with source = \"kernel\": the kernel interface behind each IPv6 output port, numbered after " +
						"interfaces' ports (interfaces = [\"lan0\", \"wan0\"], interfaces6 = [\"lan0\", \"wan0\"]: IPv6 routes leave " +
						"on ports 2 and 3), for dual-stack graphs that resolve IPv4 and IPv6 next hops with different " +
						"elements (ARPQuerier, NDPQuerier); without it IPv6 routes leave on interfaces' ports"},
			},
			Stats: "drops: \"no route\" (no prefix matches and miss is -1), \"too short\" (no IPv4 or IPv6 header at L3), " +
				"\"not ip\" (version is neither 4 nor 6), \"no such port\" (a route installed at run time names a port this element " +
				"does not have). With source = \"kernel\": counters \"kernel routes applied\", \"kernel routes skipped\", " +
				"\"kernel resyncs\". With offload: \"offload routes applied\" (fast-path entries set or deleted), \"offload errors\" " +
				"(rounds in which the fast path refused a change; retried every 10 ms).",
			Example: "[elements.rt]\ntype = \"IPLookup\"\n" +
				"routes = [\"10.0.0.0/8 via 10.1.0.2 out 0\", \"192.168.1.0/24 out 1\", \"2001:db8::/32 via 2001:db8:1::1 out 1\",\n" +
				"          \"0.0.0.0/0 via 192.0.2.1 via 198.51.100.1 out 1 out 2\"]\n\n" +
				"[elements.kernel_rt]\ntype = \"IPLookup\"\nsource = \"kernel\"\ninterfaces = [\"lan0\", \"wan0\"]",
			SeeAlso: "ARPQuerier, EtherRewrite, CheckIP6Header, DecHopLimit, forwarder routes, forwarder show routes and forwarder route add|del|replace|reload (the running table; SIGHUP re-reads routes_file)",
			Text: "The next-hop annotation becomes the path's via address, or the packet's destination for a directly " +
				"connected route; ARPQuerier resolves it. An ECMP route's path is chosen by the packet's symmetric flow " +
				"hash (packet.FlowHash, computed once and kept in the FlowHash annotation), so a flow keeps one path. " +
				"A prefix may appear once (routes and routes_file together); host bits must be clear. " +
				"IPv4 lookups use DIR-24-8 (as DPDK's rte_lpm, with 16-bit entries: 32 MiB, plus 512 bytes per /24 " +
				"holding a longer prefix): one memory access per packet, two under a /25../32, whatever the number of " +
				"routes or of destinations seen — nothing is cached per destination, so the rate does not depend on " +
				"the traffic's spread. A batch's first-level loads are issued together so that their cache misses " +
				"overlap. IPv6 uses a stride-8 multibit trie. The table is shared by all workers and read without " +
				"locks: changes build a new version by copy-on-write of the pages they touch and publish it " +
				"atomically (read-copy-update); each batch is looked up in one version. `forwarder routes -config " +
				"FILE [ADDR]` prints the table size, its memory and the route chosen for an address.",
		},
		TakesState: true, // a reload keeps its shared state (reload.go)
	})
}

// sharedTable is what all workers' instances of one IPLookup share.
type sharedTable struct {
	table *route.Table
	ksync *route.KernelSync
	off   *route.OffloadSync
	refs  atomic.Int32
	live  liveRoutes // what the control socket changed (live.go)
	cfg   *IPLookupConfig
}

// IPLookup is one worker's instance. The table is shared by every worker's
// instance of the same graph element.
type IPLookup struct {
	table *route.Table
	sh    *sharedTable
	// ctl is sh for the control plane (live.go): Close clears sh, and a
	// control command may still run while the router stops.
	ctl   *sharedTable
	outs  []*elements.Output
	split *elements.Dispatch // a batch bound for several ports
	miss  int
	st    *elements.Stats
	dst   []uint32
	val   []uint16

	noRoute, tooShort, notIP, noPort elements.Reason
}

func newIPLookup(cfg any, ctx *elements.Context) (elements.Element, error) {
	c := cfg.(*IPLookupConfig)
	prev, _ := ctx.Previous().Shared.(*sharedTable) // a reload's running table
	v, err := ctx.Shared(keepTable(ctx, func() (any, error) {
		t, err := route.NewTableChecked(c.routes, c.limits, c.checked)
		if err != nil {
			return nil, err
		}
		sh := &sharedTable{table: t, cfg: c}
		// The routes added live to the running table stay (livecarry.go).
		if err := applyLive(prev, c, t, sh); err != nil {
			return nil, err
		}
		// The router's next reload finds these routes validated.
		route.ContextCache(ctx).Remember(c.set)
		// Every new version makes the graph's fast-path entries stale.
		t.OnChange(conntrack.GenerationOf(ctx).Invalidate)
		if c.srcName == "kernel" {
			ks, err := route.StartKernelSync(t, route.KernelOptions{Table: c.ktable, Interfaces: c.Interfaces, Interfaces6: c.Interfaces6, NetNS: c.NetNS}, ctx.Stats)
			if err != nil {
				return nil, err
			}
			sh.ksync = ks
		}
		if len(c.Offload) > 0 {
			ports, _, fp, err := offloadkey.Resolve(ctx.Devices, "offload", c.Offload)
			if err == nil {
				sh.off, err = route.StartOffload(t, fp, ports, ctx.Stats)
			}
			if err != nil {
				if sh.ksync != nil {
					sh.ksync.Close()
				}
				return nil, err
			}
		}
		return sh, nil
	}))
	if err != nil {
		return nil, err
	}
	sh := v.(*sharedTable)
	sh.refs.Add(1)
	e := &IPLookup{table: sh.table, sh: sh, ctl: sh, outs: ctx.Outputs, miss: c.Miss, st: ctx.Stats,
		noRoute: ctx.Stats.Reason("no route"), tooShort: ctx.Stats.Reason("too short"),
		notIP: ctx.Stats.Reason("not ip"), noPort: ctx.Stats.Reason("no such port"),
		dst: make([]uint32, max(ctx.Batch, packet.DefaultBatch)), val: make([]uint16, max(ctx.Batch, packet.DefaultBatch))}
	e.split = elements.NewDispatch(ctx, e.noPort)
	return e, nil
}

// Table returns the route table this instance reads (shared by all
// workers), for control-plane code that updates it.
func (e *IPLookup) Table() *route.Table { return e.table }

// Close stops the kernel route mirror and the fast-path mirror when the
// last worker's instance closes.
func (e *IPLookup) Close() error {
	if e.sh == nil {
		return nil
	}
	sh := e.sh
	e.sh = nil
	if sh.refs.Add(-1) != 0 {
		return nil
	}
	var errs []error
	if sh.off != nil {
		errs = append(errs, sh.off.Close())
	}
	if sh.ksync != nil {
		errs = append(errs, sh.ksync.Close())
	}
	return errors.Join(errs...)
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
		if port >= len(e.outs) {
			// Only a table changed through the Table API (or the kernel
			// mirror) can name a port this instance does not have; the
			// loader checked the config.
			e.st.Drop(p, e.noPort)
			continue
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
	t, err = route.NewTableChecked(c.routes, c.limits, c.checked)
	if err != nil {
		return nil, nil, err
	}
	if c.srcName != "kernel" {
		return t, func() error { return nil }, nil
	}
	ks, err := route.StartKernelSync(t, route.KernelOptions{Table: c.ktable, Interfaces: c.Interfaces, Interfaces6: c.Interfaces6, NetNS: c.NetNS}, nil)
	if err != nil {
		return nil, nil, err
	}
	return t, ks.Close, nil
}
