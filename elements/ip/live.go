package ip

import (
	"fmt"
	"net/netip"
	"sync"

	"github.com/junction-dataplane/junction/elements"
	"github.com/junction-dataplane/junction/elements/ip/route"
)

// Live routes: IPLookup implements elements.RouteTable, through which the
// control socket (forwarder show routes, forwarder route add|del|replace,
// and the routes_file re-read on SIGHUP) reads and changes the running
// table. Changes go through Table.Apply and Table.Replace, the
// copy-on-write publication the kernel mirror uses: workers keep looking
// up without a lock, each batch in one version, and the offload mirror
// follows the journal as it does for kernel changes.

// liveRoutes remembers which prefixes were set through the control socket,
// to mark them in listings. Only the control plane touches it.
type liveRoutes struct {
	mu  sync.Mutex
	set map[netip.Prefix]bool
}

func (l *liveRoutes) mark(p netip.Prefix, on bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.set == nil {
		l.set = map[netip.Prefix]bool{}
	}
	if on {
		l.set[p] = true
	} else {
		delete(l.set, p)
	}
}

func (l *liveRoutes) has(p netip.Prefix) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.set[p]
}

func (l *liveRoutes) reset() {
	l.mu.Lock()
	l.set = nil
	l.mu.Unlock()
}

var _ elements.RouteTable = (*IPLookup)(nil)

func (e *IPLookup) live(r Route) elements.LiveRoute {
	lr := elements.LiveRoute{Prefix: r.Prefix, Source: e.RouteSource()}
	if r.Type != route.Unicast {
		lr.Type = r.Type.String()
	}
	if e.ctl.live.has(r.Prefix) {
		lr.Source = "live"
	}
	for _, h := range r.Hops() {
		lr.Hops = append(lr.Hops, elements.RouteHop{Via: h.Via, Out: h.Out})
	}
	return lr
}

// RouteSource is "kernel" for a table mirroring a kernel table, else
// "config".
func (e *IPLookup) RouteSource() string { return e.ctl.cfg.SourceName() }

// RouteTableName is the name of the graph's table ([tables.NAME]) the
// element reads, "" for a table of its own.
func (e *IPLookup) RouteTableName() string {
	if e.ctl.key.own {
		return ""
	}
	return e.ctl.key.name
}

// RouteFamily is 4 or 6 for a table of one family, 0 for both.
func (e *IPLookup) RouteFamily() int { return e.ctl.cfg.FamilyNumber() }

// Unmirrored counts, by kernel route type, the kernel table's routes that
// the mirror (source = "kernel") does not copy; nil without a mirror.
func (e *IPLookup) Unmirrored() map[string]int {
	if e.ctl.ksync == nil {
		return nil
	}
	return e.ctl.ksync.Unmirrored()
}

// ports is the number of output ports every lookup reading the table has.
func (e *IPLookup) ports() int { return int(e.ctl.minOuts.Load()) }

// whoseOuts names the lookups whose ports a route must fit.
func (e *IPLookup) whoseOuts() string {
	if e.ctl.key.own {
		return "this IPLookup has"
	}
	return "the IPLookups reading table " + e.ctl.key.name + " have"
}

// RouteList returns the running routes, sorted.
func (e *IPLookup) RouteList() []elements.LiveRoute {
	rs := e.table.Routes()
	out := make([]elements.LiveRoute, len(rs))
	for i, r := range rs {
		out[i] = e.live(r)
	}
	return out
}

// RouteFor returns the route a packet to addr takes.
func (e *IPLookup) RouteFor(addr netip.Addr) (elements.LiveRoute, bool) {
	r, ok := e.table.Route(addr)
	if !ok {
		return elements.LiveRoute{}, false
	}
	return e.live(r), true
}

// RouteExact returns the route for exactly p.
func (e *IPLookup) RouteExact(p netip.Prefix) (elements.LiveRoute, bool) {
	r, ok := e.table.Exact(p)
	if !ok {
		return elements.LiveRoute{}, false
	}
	return e.live(r), true
}

func (e *IPLookup) checkWritable() error {
	if e.RouteSource() == "kernel" {
		return fmt.Errorf("this table mirrors a kernel routing table (source = \"kernel\"): change the kernel's routes (ip route) instead")
	}
	return nil
}

// SetRoute installs a route in IPLookup's syntax (see the routes key).
func (e *IPLookup) SetRoute(text string, replace bool) (elements.LiveRoute, error) {
	if err := e.checkWritable(); err != nil {
		return elements.LiveRoute{}, err
	}
	r, err := ParseRoute(text)
	if err != nil {
		return elements.LiveRoute{}, fmt.Errorf("%q: %w", text, err)
	}
	if !e.ctl.cfg.HasFamily(r.Prefix.Addr()) {
		return elements.LiveRoute{}, fmt.Errorf("%q: the table holds IPv%d routes only", text, e.ctl.cfg.FamilyNumber())
	}
	for _, h := range r.Hops() {
		if h.Out >= e.ports() {
			return elements.LiveRoute{}, fmt.Errorf("%q: out %d: %s output ports 0..%d", text, h.Out, e.whoseOuts(), e.ports()-1)
		}
	}
	_, exists := e.table.Exact(r.Prefix)
	switch {
	case exists && !replace:
		return elements.LiveRoute{}, fmt.Errorf("%v: a route for this prefix exists (use route replace)", r.Prefix)
	case !exists && replace:
		return elements.LiveRoute{}, fmt.Errorf("%v: no route for this prefix to replace (use route add)", r.Prefix)
	}
	if err := e.table.Insert(r); err != nil {
		return elements.LiveRoute{}, err
	}
	e.ctl.live.mark(r.Prefix, true)
	return e.live(r), nil
}

// DeleteRoute removes the route for exactly p.
func (e *IPLookup) DeleteRoute(p netip.Prefix) error {
	if err := e.checkWritable(); err != nil {
		return err
	}
	n, err := e.table.Delete(p)
	if err != nil {
		return err
	}
	if n == 0 {
		return fmt.Errorf("%v: no such route", p)
	}
	e.ctl.live.mark(p, false)
	return nil
}

// ReloadRoutes re-reads the routes file (and the routes key) and replaces
// the whole table with them, as one new version; routes set through the
// control socket are dropped. On any error the table is left as it was.
func (e *IPLookup) ReloadRoutes() (int, error) {
	if err := e.checkWritable(); err != nil {
		return 0, err
	}
	c := e.ctl.cfg
	routes, err := route.ParseConfig(c.Routes, c.RoutesFile, c.Limits().MaxRoutes)
	if err != nil {
		return 0, err
	}
	if err := route.Precheck(routes); err != nil {
		return 0, err
	}
	for _, r := range routes {
		for _, h := range r.Hops() {
			if h.Out >= e.ports() {
				return 0, fmt.Errorf("route %v: out %d: %s output ports 0..%d (ports are fixed while it runs)", r.Prefix, h.Out, e.whoseOuts(), e.ports()-1)
			}
		}
	}
	if err := e.table.Replace(routes); err != nil {
		return 0, err
	}
	e.ctl.live.reset()
	return len(routes), nil
}

// RoutesFile is the configured routes_file ("" if none).
func (e *IPLookup) RoutesFile() string {
	if e.ctl.cfg == nil {
		return ""
	}
	return e.ctl.cfg.RoutesFile
}
