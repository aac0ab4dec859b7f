package afxdp

import (
	"errors"
	"fmt"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/junction-dataplane/junction/conf"
	"github.com/junction-dataplane/junction/drivers"
	"github.com/junction-dataplane/junction/drivers/afxdp/fastpath"
	"github.com/junction-dataplane/junction/drivers/internal/nlink"
	"github.com/junction-dataplane/junction/drivers/kfeature"
	"github.com/junction-dataplane/junction/packet"
)

// Fast-path table sizes: routes (the IPv4 table's groups for prefixes
// longer than /24, and the IPv6 LPM trie, whose nodes the kernel
// allocates as routes arrive) and the neighbour hash; limits, not
// allocations, but for the IPv4 table's fixed 32 MiB and its groups'
// 512 bytes each (fastpath.NewTables).
const (
	fastMaxRoutes    = 1 << 20
	fastMaxNeighbors = 1 << 16
	// fastMaxFlows bounds the offloaded flow directions (the kernel
	// preallocates the hash map: a 20-byte key and a 44-byte value per
	// entry, plus its element header, and a 16-byte counter slot).
	fastMaxFlows = 1 << 18
)

// fastTable is the process's one fast-path table, shared by every afxdp
// device with fastpath = true (so that a route may lead from one to
// another), counted by the devices that use it and closed with the last.
// It implements drivers.FastPathTable on top of fastpath.Tables: devices
// become interface indexes, and the devices' own addresses stay local
// whatever routes are set over them.
type fastTable struct {
	mu sync.Mutex
	// t is nil when the kernel cannot hold the fast path's maps
	// (kfeature): the table then programs nothing, refuses flows with
	// drivers.ErrNoFastPath, and every device's fast path is off (tErr
	// says why).
	t      *fastpath.Tables
	tErr   error
	refs   int
	locals map[netip.Prefix]int // /32s of device addresses: how many devices hold each

	// Outputs (fastpath/egress.go): every fast-path device is
	// one. watching says whether the kernel's refusals are seen; without
	// it every output stays off.
	watching bool
	outs     map[int]*egressOut // by ifindex, under mu
	// noTC: a device's TC ingress program could not be attached, so no
	// output may be reached through TC (the frames would reach that
	// input's stack): every output redirects with XDP. Under mu.
	noTC    bool
	stop    chan struct{} // closed by release: ends watch
	stopped chan struct{} // closed by watch when it returns
}

// fastShared is the process's fast-path table. It is process-wide, not a
// graph's, because what it mirrors is: the BPF maps every fast-path XDP
// program of the process reads, which must be one so that a route may
// lead from any fast-path interface to any other. A reload keeps it as
// long as one device holds it. Two routers in one process with fast-path
// devices would share it (and its routes): give each its own interfaces
// and routes, or run them as two processes.
var (
	fastMu     sync.Mutex
	fastShared *fastTable
)

// acquireFastTable returns the shared table, made on first use: l, the
// first device's log, also gets the table's own messages.
func acquireFastTable(l opLog) (*fastTable, error) {
	fastMu.Lock()
	defer fastMu.Unlock()
	if fastShared == nil {
		f := &fastTable{locals: map[netip.Prefix]int{}, outs: map[int]*egressOut{},
			stop: make(chan struct{}), stopped: make(chan struct{})}
		t, err := fastpath.NewTables(fastMaxRoutes, fastMaxNeighbors, fastMaxFlows)
		if err != nil {
			// No maps, no fast path: the devices open with the plain
			// program (openFastPath), the table stays for the elements
			// whose offload key names them.
			f.tErr = err
			close(f.stopped)
			fastShared = f
			fastShared.refs++
			return fastShared, nil
		}
		f.t = t
		if err := kfeature.Have(kfeature.LPMTrieBatch); err != nil {
			l.Printf("fast path: %v: each IPv6 route goes into the fast path's table with a system call of its own (more CPU while a routing daemon loads a full table; forwarding is the same)", err)
		}
		if err := t.WatchRedirects(); err != nil {
			l.Printf("fast path: %v: without it a device that refuses redirected frames would lose them, so the fast path forwards nothing (everything takes the graph's path)", err)
		} else {
			f.watching = true
		}
		go f.watch()
		fastShared = f
	}
	fastShared.refs++
	return fastShared, nil
}

func (f *fastTable) release() error {
	fastMu.Lock()
	defer fastMu.Unlock()
	if f.refs--; f.refs > 0 {
		return nil
	}
	fastShared = nil
	close(f.stop)
	<-f.stopped
	if f.t == nil {
		return nil
	}
	return f.t.Close()
}

// addLocal marks the device address a as the router's own: never
// forwarded by the fast path.
func (f *fastTable) addLocal(a netip.Addr) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.t == nil {
		return nil
	}
	p := netip.PrefixFrom(a, a.BitLen())
	if err := f.t.SetRoute(p, fastpath.Route{Local: true}); err != nil {
		return err
	}
	if err := f.t.SetLocal(a); err != nil { // policed (Police)
		return err
	}
	f.locals[p]++
	return nil
}

func (f *fastTable) removeLocal(a netip.Addr) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.t == nil {
		return
	}
	p := netip.PrefixFrom(a, a.BitLen())
	if f.locals[p]--; f.locals[p] > 0 {
		return
	}
	delete(f.locals, p)
	_ = f.t.DeleteRoute(p)
	_ = f.t.DeleteLocal(a)
}

// isLocal reports whether p is one of the router's own addresses (under
// mu). Those are host prefixes: a table's other prefixes (a million, each
// set and deleted) skip the map and its hash.
func (f *fastTable) isLocal(p netip.Prefix) bool {
	return p.Bits() == p.Addr().BitLen() && f.locals[p] > 0
}

// fastPort is what the table needs of a fast-path device: an afxdp
// device with fastpath, or another driver's TCPort. input: it runs a
// fast-path program; output: it is one of the fast path's outputs.
type fastPort struct {
	ifindex       int
	mac           packet.MAC
	mtu           int
	input, output bool
}

// fastDevice is the fast-path device behind out.
func fastDevice(out drivers.Device) (fastPort, error) {
	if p, ok := out.(TCPorter); ok && p.TCPort() != nil {
		return p.TCPort().port(), nil
	}
	d, ok := out.(*Device)
	if !ok || d.ft == nil {
		return fastPort{}, fmt.Errorf("device %T is not an afxdp device with fastpath = true nor an afpacket device with a fastpath", out)
	}
	return fastPort{ifindex: d.ifindex, mac: d.info.MAC, mtu: d.mtu, input: d.fp != nil, output: d.out != nil}, nil
}

// RoutesToGraph implements drivers.FastPathRouteUse: the /24s the fast
// path's IPv4 table pinned to the graph and the routes it had no next-hop
// number for.
func (f *fastTable) RoutesToGraph() uint64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.t == nil {
		return 0
	}
	u := f.t.RouteTableUse()
	return uint64(u.Pinned + u.Fallbacks)
}

// SetRoute implements drivers.FastPathTable.
func (f *fastTable) SetRoute(p netip.Prefix, gw netip.Addr, out drivers.Device) error {
	c, err := routeChange(p, gw, out)
	if err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.t == nil || f.isLocal(c.Prefix) {
		return nil // no fast path; or the router's own address stays local
	}
	return f.t.SetRoute(c.Prefix, c.Route)
}

// routeChange is the fast path's route for p via gw out of out (nil: a
// prefix the fast path leaves to the graph), p masked.
func routeChange(p netip.Prefix, gw netip.Addr, out drivers.Device) (fastpath.RouteChange, error) {
	if p.Addr().Is4In6() || gw.IsValid() && (gw.Is4() != p.Addr().Is4() || gw.Is4In6()) {
		return fastpath.RouteChange{}, fmt.Errorf("fast path: %s via %s: IPv4 or IPv6 (not IPv4-mapped), the prefix and the gateway of one family", p, gw)
	}
	r := fastpath.Route{Local: out == nil}
	if out != nil {
		d, err := fastDevice(out)
		if err != nil {
			return fastpath.RouteChange{}, err
		}
		r.Ifindex, r.Gateway = d.ifindex, gw
	}
	return fastpath.RouteChange{Prefix: p.Masked(), Route: r}, nil
}

// SetRoutes implements drivers.FastPathRouteBatcher: SetRoute for each,
// the valid ones given to the kernel in batches.
func (f *fastTable) SetRoutes(rs []drivers.FastRoute, errs []error) {
	cs := make([]fastpath.RouteChange, 0, len(rs))
	at := make([]int, 0, len(rs))
	for i, x := range rs {
		c, err := routeChange(x.Prefix, x.Gw, x.Out)
		if errs[i] = err; err == nil {
			cs, at = append(cs, c), append(at, i)
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.t == nil {
		return
	}
	// The router's own addresses stay local (as SetRoute leaves them).
	n := 0
	for j, c := range cs {
		if !f.isLocal(c.Prefix) {
			cs[n], at[n] = c, at[j]
			n++
		}
	}
	cerrs := make([]error, n)
	f.t.SetRoutes(cs[:n], cerrs)
	for j, err := range cerrs {
		errs[at[j]] = err
	}
}

// DeleteRoutes implements drivers.FastPathRouteBatcher.
func (f *fastTable) DeleteRoutes(ps []netip.Prefix, errs []error) {
	del := make([]netip.Prefix, 0, len(ps))
	at := make([]int, 0, len(ps))
	f.mu.Lock()
	defer f.mu.Unlock()
	for i, p := range ps {
		errs[i] = nil
		if p.Addr().Is4In6() || f.t == nil {
			continue
		}
		if p = p.Masked(); !f.isLocal(p) {
			del, at = append(del, p), append(at, i)
		}
	}
	if len(del) == 0 {
		return
	}
	derrs := make([]error, len(del))
	f.t.DeleteRoutes(del, derrs)
	for j, err := range derrs {
		errs[at[j]] = err
	}
}

// DeleteRoute implements drivers.FastPathTable.
func (f *fastTable) DeleteRoute(p netip.Prefix) error {
	if p.Addr().Is4In6() {
		return nil
	}
	p = p.Masked()
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.t == nil || f.isLocal(p) {
		return nil
	}
	return f.t.DeleteRoute(p)
}

// SetNeighbor implements drivers.FastPathTable: frames to ip leave out
// with the device's own MAC as source. Next hops carry the device's MTU
// (read at open): longer datagrams take the graph, which sends packet too
// big or fragmentation needed.
func (f *fastTable) SetNeighbor(out drivers.Device, ip netip.Addr, mac packet.MAC, lifetime time.Duration) error {
	d, err := fastDevice(out)
	if err != nil || f.t == nil {
		return err
	}
	if ip.Is6() && !ip.Is4In6() {
		return f.t.SetNeighbor6(d.ifindex, ip, mac, d.mac, d.mtu, lifetime)
	}
	return f.t.SetNeighborMTU(d.ifindex, ip, mac, d.mac, d.mtu, lifetime)
}

// DeleteNeighbor implements drivers.FastPathTable.
func (f *fastTable) DeleteNeighbor(out drivers.Device, ip netip.Addr) error {
	d, err := fastDevice(out)
	if err != nil || f.t == nil {
		return err
	}
	return f.t.DeleteNeighbor(d.ifindex, ip)
}

// flowOf translates a FastFlow to the program's key and action.
func flowOf(f drivers.FastFlow) (fastpath.FlowKey, fastpath.FlowAction, error) {
	in, err := fastDevice(f.In)
	if err != nil {
		return fastpath.FlowKey{}, fastpath.FlowAction{}, err
	}
	out, err := fastDevice(f.Out)
	if err != nil {
		return fastpath.FlowKey{}, fastpath.FlowAction{}, err
	}
	if !in.input || !out.output {
		// The input runs no fast-path program, or the output is none of
		// its outputs: the flow stays in the graph.
		return fastpath.FlowKey{}, fastpath.FlowAction{}, drivers.ErrNoFastPath
	}
	return fastpath.FlowKey{Ifindex: in.ifindex, Proto: f.Proto, Src: f.Src, Dst: f.Dst, Sport: f.Sport, Dport: f.Dport},
		fastpath.FlowAction{Ifindex: out.ifindex, EthDst: f.EthDst, EthSrc: f.EthSrc, Src: f.NewSrc, Dst: f.NewDst,
			Sport: f.NewSport, Dport: f.NewDport, TTLDec: f.TTLDec, ICMPType: f.ICMPType, Gen: f.Gen, MTU: out.mtu}, nil
}

// SetFlow implements drivers.FastPathTable.
func (f *fastTable) SetFlow(fl drivers.FastFlow) (int, error) {
	k, a, err := flowOf(fl)
	if err != nil {
		return 0, err
	}
	// AddFlow, not SetFlow: a direction another worker's tracker
	// installed (it reached two workers) stays that worker's, counted in
	// its slot.
	slot, err := f.t.AddFlow(k, a)
	switch {
	case errors.Is(err, fastpath.ErrFlowsFull):
		return 0, drivers.ErrFlowsFull
	case errors.Is(err, fastpath.ErrFlowExists):
		return 0, drivers.ErrFlowExists
	}
	return slot, err
}

// DeleteFlow implements drivers.FastPathTable.
func (f *fastTable) DeleteFlow(fl drivers.FastFlow, slot int) error {
	k, _, err := flowOf(fl)
	if errors.Is(err, drivers.ErrNoFastPath) {
		return nil // never installed
	}
	if err != nil {
		return err
	}
	return f.t.DeleteFlow(k, slot)
}

// FlowCounters implements drivers.FastPathTable.
func (f *fastTable) FlowCounters(slot int) (uint64, uint64) {
	if f.t == nil {
		return 0, 0
	}
	return f.t.FlowCounters(slot)
}

// SetFlowGeneration implements drivers.FastPathTable.
func (f *fastTable) SetFlowGeneration(g uint32) error {
	if f.t == nil {
		return nil
	}
	return f.t.SetFlowGeneration(g)
}

// FastPathTable implements drivers.FastPath: the shared table, or nil when
// the device was opened without fastpath.
func (d *Device) FastPathTable() drivers.FastPathTable {
	if d.ft == nil {
		return nil
	}
	return d.ft
}

var _ drivers.FastPath = (*Device)(nil)
var _ drivers.FastPathRouteBatcher = (*fastTable)(nil)

// openFastPath loads the device's fast-path program (in place of v0.3.3's
// plain one) and its TC ingress program, makes the device an output
// (reached as fastpath_redirect says; kind is its link kind) and marks
// its addresses local.
//
// What the kernel cannot run is left out, step by step (kfeature): no
// hand-off to TC (bpf_xdp_adjust_meta refused, no tcx or
// bpf_redirect_peer): every output is reached by XDP redirects; no
// fast-path program or maps at all: the device runs the plain program
// and the graph forwards all its traffic. Each step is logged once,
// counted (fastpath_fallbacks) and shown (Modes). Only an explicit
// fastpath_redirect the kernel cannot honour is an error.
func (d *Device) openFastPath(queues int, kind string) error {
	ft, err := acquireFastTable(d.log)
	if err != nil {
		return err
	}
	d.ft = ft
	key := d.cfg.FastPathRedirect
	if key == "" {
		key = "auto"
	}
	if ft.t == nil {
		return d.fastPathOff(key, ft.tErr, queues)
	}
	pol, err := d.cfg.police()
	if err != nil {
		return err
	}
	if d.fp, err = fastpath.NewPolicedProgram(ft.t, queues, d.info.MAC, pol); err != nil {
		return d.fastPathOff(key, err, queues)
	}
	d.prog = d.fp.XDP()
	via := redirectVia(key, kind)
	// Before the XDP program is attached, so that no frame this device
	// receives is passed up for a TC program that is not there.
	var noTC error
	if !d.fp.HandOff {
		noTC = kfeature.Have(kfeature.XDPAdjustMeta)
		if noTC == nil {
			noTC = errors.New("the kernel refused the program variant with bpf_xdp_adjust_meta")
		}
	} else if d.tc, err = fastpath.AttachTC(d.ifindex); err != nil {
		noTC = err
	}
	if noTC != nil {
		if key == "tc" {
			return tcRedirectErr(d.ifname, noTC)
		}
		quiet := via != fastpath.ViaXDP
		if quiet { // this device's own step down says it all
			d.fallback(viaXDPInstead(key, noTC))
		}
		ft.tcFailed(d.log, noTC, quiet)
	}
	if d.out, err = ft.addOut(d.ifindex, d.log, via); err != nil {
		return err
	}
	how := "XDP redirects"
	if m := d.fastPathMode(); m == "tc" {
		how = "its input's TC program (the hand-off to TC)"
	}
	d.log.Printf("fast path on (program %s); as an output it is reached by %s", d.fp.Variant, how)
	for _, a := range d.info.Addresses {
		// IPv4 and global IPv6 addresses (link-local ones are never
		// forwarded by the fast path anyway).
		if a.Addr().Is4() || a.Addr().Is6() && !a.Addr().Is4In6() && !a.Addr().IsLinkLocalUnicast() {
			if err := ft.addLocal(a.Addr()); err != nil {
				return err
			}
			d.locals = append(d.locals, a.Addr())
		}
	}
	return nil
}

// fastPathOff opens the device without an in-kernel fast path (the plain
// AF_XDP program: the graph forwards everything) because of why, unless
// fastpath_redirect (key) asked explicitly for a way the fast path
// cannot take.
func (d *Device) fastPathOff(key string, why error, queues int) error {
	if key != "auto" {
		return explicitRedirectErr(d.ifname, key, why)
	}
	d.fp = nil
	d.fallback(noFastPathWhy(why))
	var err error
	if d.prog, err = newProgram(queues); err != nil {
		return conf.Errorf("interface", "%s: loading the XDP program: %v", d.ifname, err)
	}
	return nil
}

// fallback records and logs, once, one step down from what the file
// asked of the fast path.
func (d *Device) fallback(what string) {
	d.fallbacks = append(d.fallbacks, what)
	d.log.Printf("fast path: %s", what)
}

// fastPathMode is the fast path the device settled on, as Modes shows
// it: "tc" (forwards in the kernel; reached as an output through TC),
// "xdp" (reached by XDP redirects), "off" (no fast-path program), or ""
// without fastpath.
func (d *Device) fastPathMode() string {
	if d.ft == nil {
		return ""
	}
	if d.fp == nil {
		return "off"
	}
	via := fastpath.ViaXDP
	if d.out != nil {
		d.ft.mu.Lock()
		via = d.out.via
		d.ft.mu.Unlock()
	}
	if via != fastpath.ViaXDP {
		return "tc"
	}
	return "xdp"
}

// closeFastPath undoes openFastPath but for the program, which d.prog's
// Close releases.
func (d *Device) closeFastPath() error {
	if d.ft == nil {
		return nil
	}
	if d.out != nil {
		d.ft.removeOut(d.out)
	}
	if d.tc != nil {
		_ = d.tc.Close()
		d.tc = nil
	}
	for _, a := range d.locals {
		d.ft.removeLocal(a)
	}
	d.locals = nil
	err := d.ft.release()
	d.ft = nil
	return err
}

// Outputs that refuse redirected frames. Two things turn an output off
// (its frames then take the graph's path):
//
//   - the kernel's XDP features of the device lack ndo_xdp_xmit
//     (fastpath.XmitProbe, asked every egressFeaturePoll, at open too):
//     it would refuse every redirected frame, so none is lost. A veth has
//     the feature exactly while its peer runs an XDP program or has GRO
//     on, so turning GRO on or off at the peer turns offloading to it on
//     or off within egressFeaturePoll;
//   - the kernel refused a frame anyway (the fast path's watcher on
//     xdp:xdp_redirect_err turns the output off in the kernel at that
//     first frame; watch sees it within egressPoll). That frame is lost
//     and counted (fastpath_redirect_errors). watch turns the output on
//     again after egressFirstProbe, then after twice as long each time
//     the kernel refuses again, up to egressMaxProbe: a probe costs the
//     one frame per CPU forwarding at that moment.
//
// Each outage is logged once, when it starts (with its reason), and its
// end once the output has stayed on for egressConfirm.
const (
	egressPoll        = 10 * time.Millisecond
	egressFeaturePoll = 100 * time.Millisecond
	egressFirstProbe  = time.Second
	egressMaxProbe    = 32 * time.Second
	egressConfirm     = time.Second
)

// redirectVia is how the fast path reaches an output whose
// fastpath_redirect is key and whose link kind is kind: "auto" sends
// through TC into a veth's peer (an XDP redirect into a veth needs its
// peer in NAPI mode, runs through its 256-frame ring, and is refused
// while the peer runs neither XDP nor GRO: benchmarks/e2e-tcp.md) and
// redirects with XDP to every other device (a NIC's ndo_xdp_xmit).
func redirectVia(key, kind string) fastpath.Via {
	switch {
	case key == "xdp":
		return fastpath.ViaXDP
	case kind == "veth":
		return fastpath.ViaTCPeer
	case key == "tc":
		return fastpath.ViaTC
	}
	return fastpath.ViaXDP
}

// egressOut is one output's state; its counters outlive the device's
// Close (Stats reads them after it).
type egressOut struct {
	ifindex int
	log     opLog               // its device's (watch logs its outages)
	probe   *fastpath.XmitProbe // nil: the kernel does not say
	via     fastpath.Via        // under fastTable.mu
	// links asks whether a TC output is up and has carrier; nil for XDP
	// outputs, or if it could not be opened (then a TC output stays on).
	links *nlink.Conn

	// Under fastTable.mu (watch).
	off       bool      // not redirected to
	probing   bool      // on since since, not yet confirmed
	logged    bool      // this outage was logged
	noXmit    bool      // the last XDP features lacked ndo_xdp_xmit
	down      bool      // through TC: the last look found it down or without carrier
	featureAt time.Time // when they were last asked
	probeAt   time.Time // when off: not on again before
	since     time.Time
	backoff   time.Duration

	refused  atomic.Uint64 // frames the kernel refused (fp_egress_errs)
	disabled atomic.Uint64 // times offloading to it was turned off
	isOff    atomic.Bool
}

// counters are the output's driver counters (see Doc).
func (o *egressOut) counters() []drivers.Counter {
	if o == nil {
		return nil
	}
	var off uint64
	if o.isOff.Load() {
		off = 1
	}
	return []drivers.Counter{
		{Name: "fastpath_redirect_errors", Value: o.refused.Load()},
		{Name: "fastpath_egress_disabled", Value: o.disabled.Load()},
		{Name: "fastpath_egress_off", Value: off},
	}
}

// addOut makes the device ifindex, whose log is l, an output of the
// fast path, reached via via (XDP if no TC program may be relied on),
// off until watch's first look (at once when the watcher runs, never
// otherwise). Call it in the device's network namespace: the device map
// and the features probe resolve ifindex there.
func (f *fastTable) addOut(ifindex int, l opLog, via fastpath.Via) (*egressOut, error) {
	o := &egressOut{ifindex: ifindex, log: l, off: true}
	o.isOff.Store(true)
	if p, err := fastpath.NewXmitProbe(); err == nil {
		o.probe = p
	} else if !errors.Is(err, fastpath.ErrNoXDPFeatures) {
		l.Printf("fast path: %v (refused redirects are still noticed, one lost frame each)", err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.noTC {
		via = fastpath.ViaXDP
	}
	o.via = via
	if via != fastpath.ViaXDP {
		if c, err := nlink.Open(); err == nil {
			o.links = c
		}
	}
	if err := f.t.SetEgressVia(ifindex, via); err != nil {
		o.close()
		return nil, err
	}
	if err := f.t.AddEgress(ifindex, false); err != nil {
		o.close()
		return nil, err
	}
	f.outs[ifindex] = o
	if f.watching {
		f.step(o, time.Now())
	}
	return o, nil
}

// tcFailed records that a device cannot hand frames to TC (its program
// lacks the hand-off, or its TC program could not be attached): every
// output, now and later, is reached with XDP.
// l is the device's log; quiet: the caller logged it.
func (f *fastTable) tcFailed(l opLog, err error, quiet bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.noTC && !quiet {
		l.Printf("fast path: %v: every output is reached by XDP redirects instead of through TC", err)
	}
	f.noTC = true
	for _, o := range f.outs {
		if o.via != fastpath.ViaXDP && f.t.SetEgressVia(o.ifindex, fastpath.ViaXDP) == nil {
			o.via = fastpath.ViaXDP
			_ = f.t.SetEgress(o.ifindex, !o.off)
		}
	}
}

func (f *fastTable) removeOut(o *egressOut) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.outs[o.ifindex] == o {
		delete(f.outs, o.ifindex)
		_ = f.t.RemoveEgress(o.ifindex)
	}
	o.close()
	o.isOff.Store(true)
}

// close releases the output's netlink sockets.
func (o *egressOut) close() {
	o.probe.Close()
	if o.links != nil {
		o.links.Close()
	}
}

// watch polls the outputs' kernel state every egressPoll until release.
func (f *fastTable) watch() {
	defer close(f.stopped)
	tick := time.NewTicker(egressPoll)
	defer tick.Stop()
	for {
		select {
		case <-f.stop:
			return
		case now := <-tick.C:
			f.mu.Lock()
			if f.watching {
				for _, o := range f.outs {
					f.step(o, now)
				}
			}
			f.mu.Unlock()
		}
	}
}

// step advances one output's state machine (f.mu held).
func (f *fastTable) step(o *egressOut, now time.Time) {
	s, err := f.t.Egress(o.ifindex)
	if err != nil {
		return
	}
	o.refused.Store(s.Errors)
	// Through TC nothing asks for ndo_xdp_xmit, but the kernel drops
	// what it redirects into a device that is down or has no carrier
	// (a veth whose peer is down) without a trace: ask for that instead.
	if now.Sub(o.featureAt) >= egressFeaturePoll {
		o.featureAt = now
		if o.via != fastpath.ViaXDP {
			o.noXmit = false
			if o.links != nil {
				if l, err := o.links.LinkByIndex(o.ifindex); err == nil {
					o.down = !l.Up || !l.Running
				}
			}
		} else if o.probe != nil {
			if takes, err := o.probe.Takes(o.ifindex); err == nil {
				o.noXmit = !takes
			}
		}
	}
	turnOff := func(why string) { // one outage: logged once, counted once
		o.off = true
		o.disabled.Add(1)
		if !o.logged {
			o.logged = true
			o.log.Printf("fast path: not offloading to this device, its traffic takes the graph's path: %s", why)
		}
	}
	switch {
	case s.Disabled && !o.off:
		// The watcher turned it off at a refused frame.
		if o.probing && o.backoff > 0 { // a probe after a refusal: refused again
			o.backoff = min(2*o.backoff, egressMaxProbe)
		} else {
			o.backoff = egressFirstProbe
		}
		o.probing = false
		o.probeAt = now.Add(o.backoff)
		turnOff(fmt.Sprintf("the kernel refused a frame redirected to it (%s); retrying after %v, then at doubling intervals up to %v", refusal(s.Err), o.backoff, egressMaxProbe))
	case !o.off && o.noXmit:
		if f.t.SetEgress(o.ifindex, false) == nil {
			o.probing = false
			turnOff(whyNoXmit)
		}
	case o.off && o.noXmit && !o.logged:
		// Off from the start (addOut) and never going to work as is.
		turnOff(whyNoXmit)
	case !o.off && o.down:
		if f.t.SetEgress(o.ifindex, false) == nil {
			o.probing = false
			turnOff(whyDown)
		}
	case o.off && o.down && !o.logged:
		turnOff(whyDown)
	case o.off && !o.noXmit && !o.down && !now.Before(o.probeAt):
		if f.t.SetEgress(o.ifindex, true) == nil {
			o.off, o.probing, o.since = false, true, now
		}
	case o.probing && now.Sub(o.since) >= egressConfirm:
		o.probing, o.backoff = false, 0
		if o.logged {
			o.logged = false
			o.log.Printf("fast path: offloading to this device again")
		}
	}
	o.isOff.Store(o.off)
}

// Why an output is off, for the log.
const (
	whyNoXmit = "the kernel would refuse frames redirected to it (its XDP features lack ndo_xdp_xmit: a veth has it only while its peer runs an XDP program or has GRO on); on again when it has it"
	whyDown   = "it is down or has no carrier (a veth: its peer is down), and the kernel would drop what the fast path sent it through TC; on again when it is up"
)

// refusal explains the errno xdp:xdp_redirect_err reported.
func refusal(errno int32) string {
	e := unix.Errno(-errno)
	switch e {
	case unix.EOPNOTSUPP:
		return "EOPNOTSUPP: it does not take XDP frames; a veth takes them only while its peer runs an XDP program or has GRO on"
	case unix.ENETDOWN:
		return "ENETDOWN: it is down"
	case unix.EMSGSIZE:
		return "EMSGSIZE: the frame exceeds its MTU"
	case 0:
		return "no errno"
	}
	return fmt.Sprintf("%v, errno %d", e, -errno)
}
