package ip

import (
	"net/netip"

	"github.com/junction-dataplane/junction/elements"
	"github.com/junction-dataplane/junction/packet"
)

// IPLookupConfig is IPLookup's configuration.
type IPLookupConfig struct {
	Routes     []string `toml:"routes"`
	RoutesFile string   `toml:"routes_file"`
	Miss       int      `toml:"miss"`

	routes []Route // parsed by Validate
	outs   int
}

// Validate parses the routes and the routes file (at load time, so that a
// bad line stops the graph before it starts).
func (c *IPLookupConfig) Validate() error {
	rs, err := parseRoutes(c.Routes, c.RoutesFile)
	if err != nil {
		return err
	}
	if len(rs) == 0 {
		if c.RoutesFile != "" {
			return elements.Errorf("routes_file", "%s holds no routes", c.RoutesFile)
		}
		return elements.Errorf("routes", "no routes: give routes or routes_file")
	}
	if c.Miss < -1 || c.Miss > MaxPort {
		return elements.Errorf("miss", "%d out of range: -1 (drop) or a port 0..%d", c.Miss, MaxPort)
	}
	c.routes = rs
	c.outs = c.Miss + 1
	for _, r := range rs {
		c.outs = max(c.outs, r.Out+1)
	}
	return nil
}

// Ports implements elements.PortCounter: one output per port a route or
// miss names, up to the highest.
func (c *IPLookupConfig) Ports() (in, out int) { return 1, c.outs }

func init() {
	elements.Register(elements.Type{
		Name:      "IPLookup",
		NewConfig: func() any { return &IPLookupConfig{Miss: -1} },
		New:       newIPLookup,
		In:        1, Out: -1,
		Doc: elements.Doc{
			Synopsis: "IPLookup(routes, [routes_file], [miss])",
			Summary:  "longest-prefix-match IPv4 routing: sets the next-hop annotation and picks the output",
			Ports: "input 0: IPv4 packets (header at the L3 offset).\n" +
				"outputs 0..N-1: N is one more than the highest port a route's out or miss names; " +
				"a packet leaves on its route's out port.",
			Keys: []elements.Key{
				{Name: "routes", Type: "[]string",
					Doc: "routes, each \"PREFIX [via NEXTHOP] out PORT\"; a bare address is a /32; without via the network is directly connected"},
				{Name: "routes_file", Type: "string",
					Doc: "a file of routes in the same syntax, one per line; # starts a comment; blank lines are skipped"},
				{Name: "miss", Type: "int", Default: "-1", Doc: "output port for packets without a route; -1 drops them"},
			},
			Stats: "drops: \"no route\" (no prefix matches and miss is -1), \"too short\" (no 20-byte header at L3), " +
				"\"not ipv4\" (version is not 4), \"no such port\" (a route installed at run time names a port this element does not have).",
			Example: "[elements.rt]\ntype = \"IPLookup\"\n" +
				"routes = [\"10.0.0.0/8 via 10.1.0.2 out 0\", \"192.168.1.0/24 out 1\", \"0.0.0.0/0 via 192.0.2.1 out 1\"]",
			SeeAlso: "ARPQuerier, EtherRewrite",
			Text: "The next-hop annotation becomes the route's via address, or the packet's destination " +
				"for a directly connected route; ARPQuerier resolves it. A prefix may appear once " +
				"(routes and routes_file together); host bits must be clear. The table is shared by " +
				"all workers and read without locks: a new version is built and swapped in atomically " +
				"(read-copy-update), see Table. Lookup is a 16-8-8 multibit trie: at most three " +
				"dependent loads per packet whatever the number of routes or destinations seen; " +
				"nothing is cached per destination.",
		},
	})
}

// IPLookup is one worker's instance. The table is shared by every worker's
// instance of the same graph element.
type IPLookup struct {
	table *Table
	outs  []*elements.Output
	split []*packet.Batch
	miss  int
	st    *elements.Stats

	noRoute, tooShort, notIPv4, noPort elements.Reason
}

func newIPLookup(cfg any, ctx *elements.Context) (elements.Element, error) {
	c := cfg.(*IPLookupConfig)
	v, err := ctx.Shared(func() (any, error) { return NewTable(c.routes) })
	if err != nil {
		return nil, err
	}
	e := &IPLookup{table: v.(*Table), outs: ctx.Outputs, miss: c.Miss, st: ctx.Stats,
		noRoute: ctx.Stats.Reason("no route"), tooShort: ctx.Stats.Reason("too short"),
		notIPv4: ctx.Stats.Reason("not ipv4"), noPort: ctx.Stats.Reason("no such port")}
	e.split = make([]*packet.Batch, len(ctx.Outputs))
	for i := range e.split {
		e.split[i] = packet.NewBatch(ctx.Batch)
	}
	return e, nil
}

// Table returns the route table this instance reads (shared by all
// workers), for control-plane code that updates it.
func (e *IPLookup) Table() *Table { return e.table }

// Push looks every packet up, records its port in p.Port, and then either
// passes the whole batch on (all to one port: the common case) or splits it.
func (e *IPLookup) Push(_ int, b *packet.Batch) {
	f := e.table.cur.Load() // one version for the whole batch
	routes := f.routes
	n0 := len(b.Pkts)
	n := 0
	first, same := -1, true
	for _, p := range b.Pkts {
		h, ok := ipv4At(p)
		if !ok {
			e.st.Drop(p, e.tooShort)
			continue
		}
		if h[0]>>4 != 4 {
			e.st.Drop(p, e.notIPv4)
			continue
		}
		dst := h.DstU32()
		var port int
		if i := f.lookup(dst); i != 0 {
			r := &routes[i]
			port = r.Out
			if r.NextHop.IsValid() {
				p.NextHop = r.NextHop
			} else {
				p.NextHop = netip.AddrFrom4(h.Dst4())
			}
		} else if e.miss >= 0 {
			port = e.miss
			p.NextHop = netip.Addr{}
		} else {
			e.st.Drop(p, e.noRoute)
			continue
		}
		if port >= len(e.outs) {
			// Only a table replaced through the Table API can name a port
			// this instance does not have; the loader checked the config.
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
		clear(b.Pkts[n:n0])
		b.Pkts = b.Pkts[:n]
	}
	if n == 0 {
		return
	}
	if same {
		e.outs[first].Push(b) // home run
		return
	}
	for _, p := range b.Pkts {
		e.split[p.Port].Add(p)
	}
	b.Reset()
	for i, sb := range e.split {
		if len(sb.Pkts) > 0 {
			e.outs[i].Push(sb)
		}
	}
}
