package kernelmirror

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"

	"github.com/junction-dataplane/junction/elements"
	"github.com/junction-dataplane/junction/elements/ip/route"
)

// The kernel source mirrors a kernel routing table into a Table: subscribe
// to route events first, then dump the table (so that no change falls
// between the two), then apply events as they come. Events are read in
// batches (events.go: the mirror's own reader and decoder) and the
// changes of a burst are published together, at most one version every
// publishEvery, so a routing daemon that flaps routes costs one publish
// per burst, never a stall: the workers keep forwarding on the previous
// version meanwhile. The event socket's buffer holds a full table's burst (subscribeBuffer). If the
// subscription dies all the same (the buffer overflowed, ENOBUFS), the
// mirror resubscribes, dumps the table again and applies only what
// differs from its state, as one version (resync); each such dump is a
// "kernel resyncs". The state is one small map entry per prefix
// (state.go).
//
// route.Unicast routes are mirrored with their paths (several: ECMP, weighted by
// repeating a path), blackhole, unreachable and prohibit routes as routes
// of those types; routes of the other kernel types (throw, local,
// broadcast, anycast, multicast, nat) are not mirrored, and are counted
// by type while the kernel holds them (Unmirrored). A route through a
// nexthop object (ip route ... nhid N) is mirrored by the paths the kernel
// reports with it (a group's as RTA_MULTIPATH: ECMP), which it does while
// net.ipv4.nexthop_compat_mode is on, the default; with it off the
// message names no path (the netlink library does not read the objects)
// and the route is counted as a "nexthop object". Routes whose paths
// leave by no interface of the mirror's are "kernel routes skipped".

// Options choose what a kernel mirror copies: the kernel table, the
// interfaces (their order gives the output ports; Interfaces6, if any,
// give IPv6 routes ports of their own, after Interfaces') and the network
// namespace ("": the process's).
type Options struct {
	Table       int
	Interfaces  []string
	Interfaces6 []string
	NetNS       string
	Family      int // 4 or 6: mirror that family's routes only; 0: both
}

// Sync mirrors a kernel routing table into a route.Table (Start), until
// Close.
type Sync struct {
	t    *route.Table
	opt  Options
	ns   netns.NsHandle
	h    *netlink.Handle
	stop chan struct{}
	wg   sync.WaitGroup

	ports   map[int]int                    // ifindex -> output port
	ports6  map[int]int                    // ifindex -> output port of IPv6 routes (nil: ports)
	routes  prefixMap                      // each prefix's best route (state.go)
	multi   map[netip.Prefix][]kernelRoute // every route of the prefixes that have several
	hopSets hopSets
	peak    int // the most routes held since the map was last rebuilt (shrink)
	// other holds the kernel's routes of types not mirrored, by prefix
	// and metric, for Unmirrored.
	other   map[otherKey]uint8
	otherMu sync.Mutex

	applied, skipped, resyncs *atomic.Uint64
	lastErr                   atomic.Pointer[error]
	epoch                     uint32 // the current dump's number
	// noForce: SO_RCVBUFFORCE was refused (no CAP_NET_ADMIN).
	noForce bool
	// recheck: the last dump was interrupted by changes to the table
	// (NLM_F_DUMP_INTR), so it may have missed a route; another is made
	// when the events pause.
	recheck bool
	// pending holds the prefixes events changed since the last version
	// (publishEvery), lastPub when that version was published.
	pending touchedSet
	lastPub time.Time
	changes []route.Change // applyTouched's, reused
	hopBuf  []route.Hop    // hops', reused
}

// otherKey is one kernel route of a type not mirrored.
type otherKey struct {
	p         netip.Prefix
	prio, tos int
}

// kernelTypes are the kernel route types mirrored as Table types.
var kernelTypes = map[int]route.Type{
	unix.RTN_UNICAST:     route.Unicast,
	unix.RTN_BLACKHOLE:   route.Blackhole,
	unix.RTN_UNREACHABLE: route.Unreachable,
	unix.RTN_PROHIBIT:    route.Prohibit,
}

// otherNexthop marks, among the unmirrored routes, a unicast route
// through a nexthop object (no kernel route type has this number).
const otherNexthop = 0xff

// kernelTypeNames name the kernel route types that are not mirrored.
var kernelTypeNames = map[uint8]string{
	otherNexthop:   "nexthop object",
	unix.RTN_LOCAL: "local", unix.RTN_BROADCAST: "broadcast", unix.RTN_ANYCAST: "anycast",
	unix.RTN_MULTICAST: "multicast", unix.RTN_THROW: "throw", unix.RTN_NAT: "nat", unix.RTN_XRESOLVE: "xresolve",
}

// Unmirrored counts the routes of the kernel table the mirror does not
// copy because of their type, by type name ("throw": 2).
func (k *Sync) Unmirrored() map[string]int {
	k.otherMu.Lock()
	defer k.otherMu.Unlock()
	out := map[string]int{}
	for _, t := range k.other {
		n, ok := kernelTypeNames[t]
		if !ok {
			n = fmt.Sprintf("type %d", t)
		}
		out[n]++
	}
	return out
}

// maxBurst bounds the prefixes a version holds before it is published
// early.
const maxBurst = 8192

// publishEvery is the shortest time between two versions while events
// keep coming: the events that arrive meanwhile are noted in the mirror
// and published together when it has passed (or maxBurst prefixes are
// pending). A change after a pause is published at once. Each version
// costs the table a new root (tens of kilobytes) and copies of the pages
// it changes; publishing every burst the channel happened to hold (a
// few events each while a full table arrives, over a thousand versions
// a second) made gigabytes of garbage per table, kept the collector
// running (its mark worker holding one of the two processors the
// workers share) and took CPU from the workers: forwarding paused for
// up to seconds (benchmarks/routing.md, "Kernel mirror at Internet
// scale").
const publishEvery = 10 * time.Millisecond

// Start loads the kernel table into t and keeps it in step.
func Start(t *route.Table, opt Options, st *elements.Stats) (*Sync, error) {
	k := &Sync{t: t, opt: opt, stop: make(chan struct{}), ns: netns.None(), pending: newTouchedSet(),
		routes: newPrefixMap(0, 0), multi: map[netip.Prefix][]kernelRoute{}, other: map[otherKey]uint8{}}
	if st != nil {
		k.applied = st.Counter("kernel routes applied")
		k.skipped = st.Counter("kernel routes skipped")
		k.resyncs = st.Counter("kernel resyncs")
	} else {
		k.applied, k.skipped, k.resyncs = new(atomic.Uint64), new(atomic.Uint64), new(atomic.Uint64)
	}
	if opt.NetNS != "" {
		ns, err := netns.GetFromName(opt.NetNS)
		if err != nil {
			return nil, fmt.Errorf("source = \"kernel\": netns %q: %v", opt.NetNS, err)
		}
		k.ns = ns
	}
	h, err := netlink.NewHandleAt(k.ns)
	if err != nil {
		k.closeNS()
		return nil, fmt.Errorf("source = \"kernel\": netlink: %v", err)
	}
	k.h = h
	ch, done, err := k.subscribe()
	if err != nil {
		k.closeAll()
		return nil, err
	}
	// The first dump is made before the graph starts, so that forwarding
	// begins with the kernel's table.
	if err := k.resync(true); err != nil {
		close(done)
		k.closeAll()
		return nil, err
	}
	k.wg.Add(1)
	go k.run(ch, done)
	return k, nil
}

func (k *Sync) subscribe() (*events, chan struct{}, error) {
	done := make(chan struct{})
	errf := func(err error) { k.lastErr.Store(&err) }
	// A daemon announcing a full table sends a million events in a few
	// seconds; the socket must hold what arrives while the mirror is
	// busy publishing, or it overflows and the mirror has to dump the
	// table again. net.core.rmem_max (4 MiB by default) caps an ordinary
	// request; SO_RCVBUFFORCE (CAP_NET_ADMIN) passes it.
	ev, err := subscribeEvents(k.ns, subscribeBuffer, !k.noForce, done, errf)
	if err != nil && !k.noForce {
		// Without the capability: as large as rmem_max allows.
		k.noForce = true
		ev, err = subscribeEvents(k.ns, subscribeBuffer, false, done, errf)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("source = \"kernel\": subscribing to route changes: %v", err)
	}
	return ev, done, nil
}

// subscribeBuffer is the event socket's receive buffer: about 200 000
// route events (the kernel charges each about a kilobyte).
const subscribeBuffer = 256 << 20

// Close stops the mirror; the table keeps its last state.
func (k *Sync) Close() error {
	select {
	case <-k.stop:
		return nil
	default:
	}
	close(k.stop)
	k.wg.Wait()
	k.closeAll()
	return nil
}

func (k *Sync) closeNS() {
	if k.opt.NetNS != "" {
		k.ns.Close()
	}
}

func (k *Sync) closeAll() {
	if k.h != nil {
		k.h.Close()
	}
	k.closeNS()
}

func (k *Sync) run(ev *events, done chan struct{}) {
	defer k.wg.Done()
	var scratch routeScratch
	// quiet fires when the events have paused for recheckQuiet while a
	// recheck is due.
	quiet := time.NewTimer(recheckQuiet)
	defer quiet.Stop()
	// pub fires when the pending changes are due (publishEvery).
	pub := time.NewTimer(publishEvery)
	pub.Stop()
	defer pub.Stop()
	// drain fires while the mirror's map shrinks a step at a time (shrink).
	drain := time.NewTimer(drainEvery)
	drain.Stop()
	defer drain.Stop()
	drainArmed := false
	for {
		if !k.recheck {
			quiet.Stop()
		}
		if !drainArmed && k.routes.draining() {
			drain.Reset(drainEvery)
			drainArmed = true
		}
		select {
		case <-k.stop:
			k.flush()
			close(done)
			return
		case <-drain.C:
			drainArmed = false
			k.shrink()
		case <-pub.C:
			k.flush()
		case <-quiet.C:
			if k.recheck {
				k.flush()
				if err := k.resync(false); err != nil {
					k.lastErr.Store(&err)
				}
				k.resyncs.Add(1)
				quiet.Reset(recheckQuiet)
			}
		case b, ok := <-ev.ch:
			if !ok {
				// The subscription died (e.g. its buffer overflowed and
				// events were lost): start over with a fresh dump.
				k.flush()
				ev, done = k.restart(done)
				if ev == nil {
					return
				}
				quiet.Reset(recheckQuiet)
				continue
			}
			k.noteBurst(b, &scratch)
			b.ev, b.paths = b.ev[:0], b.paths[:0]
			ev.free <- b
			if wait := publishEvery - time.Since(k.lastPub); wait <= 0 || k.pending.len() >= maxBurst {
				pub.Stop()
				k.flush()
			} else if k.pending.len() > 0 {
				// Due at lastPub+publishEvery, whichever burst set it.
				pub.Reset(wait)
			}
			if k.recheck {
				quiet.Reset(recheckQuiet)
			}
		}
	}
}

// recheckQuiet is how long the events must pause before an interrupted
// dump is repeated: during a burst, a dump would be interrupted again.
const recheckQuiet = 250 * time.Millisecond

func (k *Sync) restart(done chan struct{}) (*events, chan struct{}) {
	close(done)
	for backoff := 10 * time.Millisecond; ; backoff = min(2*backoff, time.Second) {
		ch, d, err := k.subscribe()
		if err == nil {
			if err = k.resync(false); err == nil {
				k.resyncs.Add(1)
				return ch, d
			}
			close(d)
		}
		k.lastErr.Store(&err)
		select {
		case <-k.stop:
			return nil, nil
		case <-time.After(backoff):
		}
	}
}

// resync dumps the kernel table into the mirror. The first load replaces
// the table with it; later ones (after events were lost, or to recheck an
// interrupted dump) apply only what differs from the mirror, as one
// version, so that a resync of a full table republishes only the routes
// the lost events concerned instead of reloading a million. The dump is
// read route by route (a full table's messages are never held at once).
//
// Routes the mirror holds and the dump does not are deleted only after a
// complete dump: one interrupted by changes (NLM_F_DUMP_INTR) may have
// missed routes, and is repeated once the events pause (recheck).
func (k *Sync) resync(first bool) error {
	if err := k.refreshPorts(); err != nil {
		return err
	}
	k.epoch++
	k.otherMu.Lock()
	clear(k.other)
	k.otherMu.Unlock()
	// Callers publish the pending changes first: a route recorded there
	// must not outlive what the dump finds.
	touched := newTouchedSet()
	interrupted := false
	var err error
	for _, fam := range []int{netlink.FAMILY_V4, netlink.FAMILY_V6} {
		if !k.wantFamily(fam) {
			continue
		}
		err = k.h.RouteListFilteredIter(fam, &netlink.Route{Table: k.opt.Table}, netlink.RT_FILTER_TABLE, func(r netlink.Route) bool {
			if p, best, has, ok := k.note(&r, true); ok && !first {
				touched.set(p, best, has)
			}
			return true
		})
		if errors.Is(err, netlink.ErrDumpInterrupted) {
			interrupted, err = true, nil
		}
		if err != nil {
			err = fmt.Errorf("source = \"kernel\": listing routes: %v", err)
			break
		}
	}
	k.recheck = interrupted || err != nil
	if !k.recheck {
		k.routes.each(func(p netip.Prefix, _ kernelRoute) {
			if k.sweep(p) && !first {
				best, has := k.routes.get(p)
				touched.set(p, best, has)
			}
		})
	}
	if first {
		if err != nil {
			return err
		}
		all := make([]route.Route, 0, k.routes.len())
		k.routes.each(func(p netip.Prefix, kr kernelRoute) {
			all = append(all, k.route(p, kr))
		})
		if err := k.t.Replace(all); err != nil {
			return fmt.Errorf("source = \"kernel\": %v", err)
		}
		k.applied.Add(uint64(len(all)))
		return nil
	}
	k.shrink()
	// What the dump changed is the kernel's state even if it failed
	// half-way: the mirror holds it, so the table must too.
	k.applyTouched(&touched)
	return err
}

func (k *Sync) refreshPorts() error {
	links, err := k.h.LinkList()
	if err != nil {
		return fmt.Errorf("source = \"kernel\": listing interfaces: %v", err)
	}
	k.ports = map[int]int{}
	k.ports6 = nil
	if len(k.opt.Interfaces6) > 0 {
		k.ports6 = map[int]int{}
	}
	for _, l := range links {
		if i := slices.Index(k.opt.Interfaces, l.Attrs().Name); i >= 0 {
			k.ports[l.Attrs().Index] = i
		}
		if i := slices.Index(k.opt.Interfaces6, l.Attrs().Name); i >= 0 {
			k.ports6[l.Attrs().Index] = len(k.opt.Interfaces) + i
		}
	}
	return nil
}

// note records a kernel route add (or delete) in k.routes and reports the
// prefix it concerns, the prefix's best route after it (has false: none
// left), and whether the mirror changed (false too when the route is not
// mirrored at all).
func (k *Sync) note(r *netlink.Route, add bool) (p netip.Prefix, best kernelRoute, has, changed bool) {
	if r.Table != k.opt.Table || !k.wantFamily(r.Family) {
		return netip.Prefix{}, best, false, false
	}
	typ, mirrored := kernelTypes[r.Type]
	p, ok := kernelPrefix(r)
	if !ok {
		return p, best, false, false
	}
	other := uint8(r.Type)
	if mirrored && typ == route.Unicast && r.LinkIndex == 0 && r.Gw == nil && len(r.MultiPath) == 0 {
		// A unicast route without a device or paths names a nexthop
		// object (ip route ... nhid N) without its paths
		// (nexthop_compat_mode off), and the netlink library does not
		// read the objects: not mirrored, and said so.
		mirrored, other = false, otherNexthop
	}
	// The prefix's routes are looked up once (a million-entry map).
	var buf routeBuf
	list := k.routesOf(p, &buf)
	ok = k.noteOther(p, r, other, add && !mirrored, list)
	if !mirrored {
		// A route of another type replacing a mirrored one (ip route
		// replace throw ...) takes that metric's place.
		add = false
		if !ok {
			return p, best, false, false
		}
	}
	kr := kernelRoute{prio: uint32(r.Priority), tos: uint8(r.Tos), typ: typ, seen: k.epoch}
	var hops []route.Hop
	if add && typ == route.Unicast {
		if hops, ok = k.hops(r); !ok {
			k.skipped.Add(1)
			// A replace by a route we cannot mirror still removes the
			// old one from the kernel's view of this metric.
			add = false
		}
	}
	at := func(o kernelRoute) bool { return o.prio == kr.prio && o.tos == kr.tos }
	if i := slices.IndexFunc(list, at); add && i >= 0 && list[i].typ == kr.typ && list[i].hops == k.hopSets.find(hops) {
		// The route the mirror has (a dump's, or an identical replace):
		// nothing to publish.
		list[i].seen = k.epoch
		k.setRoutes(p, list)
		return p, best, false, false
	}
	list = slices.DeleteFunc(list, func(o kernelRoute) bool {
		if at(o) {
			k.hopSets.release(o.hops)
			return true
		}
		return false
	})
	if add {
		if typ == route.Unicast {
			kr.hops = k.hopSets.acquire(hops)
		}
		list = append(list, kr)
		sortKernelRoutes(list)
	}
	k.setRoutes(p, list)
	if len(list) > 0 {
		return p, list[0], true, true
	}
	return p, best, false, true
}

// wantFamily reports whether the mirror copies routes of the netlink
// address family fam.
func (k *Sync) wantFamily(fam int) bool {
	switch k.opt.Family {
	case 4:
		return fam == netlink.FAMILY_V4
	case 6:
		return fam == netlink.FAMILY_V6
	}
	return true
}

// noteOther records (on) or forgets the unmirrored route r to p, of kernel
// type typ (or otherNexthop), and reports whether list (p's routes in
// k.routes) holds one at r's metric.
func (k *Sync) noteOther(p netip.Prefix, r *netlink.Route, typ uint8, on bool, list []kernelRoute) bool {
	k.otherMu.Lock()
	if on {
		k.other[otherKey{p, r.Priority, r.Tos}] = typ
	} else if len(k.other) > 0 {
		delete(k.other, otherKey{p, r.Priority, r.Tos})
	}
	k.otherMu.Unlock()
	return slices.ContainsFunc(list, func(o kernelRoute) bool { return o.prio == uint32(r.Priority) && o.tos == uint8(r.Tos) })
}

func kernelPrefix(r *netlink.Route) (netip.Prefix, bool) {
	if r.Dst == nil {
		switch r.Family {
		case netlink.FAMILY_V4:
			return netip.PrefixFrom(netip.IPv4Unspecified(), 0), true
		case netlink.FAMILY_V6:
			return netip.PrefixFrom(netip.IPv6Unspecified(), 0), true
		}
		return netip.Prefix{}, false
	}
	a, ok := netip.AddrFromSlice(r.Dst.IP)
	if !ok {
		return netip.Prefix{}, false
	}
	a = a.Unmap()
	ones, _ := r.Dst.Mask.Size()
	p := netip.PrefixFrom(a, ones).Masked()
	// Link-local and multicast destinations are never forwarded.
	if a.Is6() && (a.IsLinkLocalUnicast() || a.IsMulticast()) {
		return p, false
	}
	return p, p.IsValid()
}

func (k *Sync) port(ifindex int, v4 bool) (int, bool) {
	if !v4 && k.ports6 != nil {
		p, ok := k.ports6[ifindex]
		return p, ok
	}
	p, ok := k.ports[ifindex]
	return p, ok
}

// hops returns r's paths, in a buffer of k's that the next call reuses
// (hopSets keeps copies).
func (k *Sync) hops(r *netlink.Route) ([]route.Hop, bool) {
	v4 := r.Family == netlink.FAMILY_V4
	via := func(ip net.IP) (netip.Addr, bool) {
		if ip == nil {
			return netip.Addr{}, true
		}
		a, ok := netip.AddrFromSlice(ip)
		if !ok {
			return a, false
		}
		if v4 {
			a = a.Unmap()
		}
		return a, route.CheckVia(a, v4) == nil
	}
	hops := k.hopBuf[:0]
	defer func() { k.hopBuf = hops[:0] }()
	if len(r.MultiPath) == 0 {
		port, ok := k.port(r.LinkIndex, v4)
		if !ok {
			return nil, false
		}
		a, ok := via(r.Gw)
		if !ok {
			return nil, false
		}
		hops = append(hops, route.Hop{Via: a, Out: port})
		return hops, true
	}
	for _, nh := range r.MultiPath {
		port, ok := k.port(nh.LinkIndex, v4)
		if !ok {
			continue // a path through an interface we do not forward on
		}
		a, ok := via(nh.Gw)
		if !ok || !a.IsValid() {
			continue // ECMP paths need a gateway each
		}
		// The kernel's weight is Hops+1: repeat the path to weigh it.
		for range min(nh.Hops+1, 8) {
			if len(hops) < route.MaxPaths {
				hops = append(hops, route.Hop{Via: a, Out: port})
			}
		}
	}
	return hops, len(hops) > 0
}

// noteBurst applies a batch of kernel events to the mirror's state; the
// prefixes they change are pending until flush publishes them.
func (k *Sync) noteBurst(b *eventBatchBuf, s *routeScratch) {
	refreshed := false
	for i := range b.ev {
		u := &b.ev[i]
		if u.add && !refreshed && int(u.table) == k.opt.Table && u.typ == unix.RTN_UNICAST && u.np == 0 {
			// A route through an interface we have not seen may mean the
			// interface is new: look the interfaces up again, once.
			if _, ok := k.port(int(u.oif), u.family == unix.AF_INET); !ok {
				refreshed = true
				k.refreshPorts()
			}
		}
		if p, best, has, ok := k.note(s.route(u, b.paths), u.add); ok {
			k.pending.set(p, best, has)
		}
	}
}

// flush publishes the pending changes as one table version.
func (k *Sync) flush() {
	if k.pending.len() > 0 {
		k.applyTouched(&k.pending)
		k.pending.clear()
		k.lastPub = time.Now()
	}
	k.shrink()
}

// applyTouched publishes the routes of the prefixes touched (their best
// route, or a deletion) as one table version.
func (k *Sync) applyTouched(touched *touchedSet) {
	if touched.len() == 0 {
		return
	}
	// The changes' slice is reused from version to version (a full
	// table is a million changes, maxBurst at a time); a resync's,
	// larger, is not kept.
	cs := k.changes[:0]
	defer func() {
		if cap(cs) <= 2*maxBurst {
			clear(cs) // no paths held for the collector
			k.changes = cs[:0]
		}
	}()
	touched.each(func(p netip.Prefix, kr kernelRoute, has bool) {
		if has {
			cs = append(cs, route.Change{Route: k.route(p, kr)})
		} else {
			cs = append(cs, route.Change{Route: route.Route{Prefix: p}, Delete: true})
		}
	})
	if err := k.t.Apply(cs); err != nil {
		// The table is full: keep forwarding on what it has, and say so.
		err = errors.Join(errors.New("source = \"kernel\": changes refused"), err)
		k.lastErr.Store(&err)
		k.skipped.Add(uint64(len(cs)))
		return
	}
	k.applied.Add(uint64(len(cs)))
}

// Err returns the last error the mirror met (nil if none).
func (k *Sync) Err() error {
	if e := k.lastErr.Load(); e != nil {
		return *e
	}
	return nil
}
