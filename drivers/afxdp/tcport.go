package afxdp

import (
	"fmt"
	"io"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cilium/ebpf/link"

	"github.com/junction-dataplane/junction/conf"
	"github.com/junction-dataplane/junction/drivers"
	"github.com/junction-dataplane/junction/drivers/afxdp/fastpath"
	"github.com/junction-dataplane/junction/drivers/kfeature"
	"github.com/junction-dataplane/junction/packet"
)

// TCPort is the fast path of a device that runs no XDP program (the
// afpacket driver's, with its fastpath key): the fast path as a TC
// ingress program on the device (fastpath.NewTCProgram), reading the
// same shared table as the afxdp devices' XDP programs, so that routes
// and FastTrack's flows may lead from any fast-path device of the
// process to any other, whatever its driver. The device is an output of
// the fast path like an afxdp device (its state watched, its outages
// logged and counted the same way).
type TCPort struct {
	ft        *fastTable
	log       opLog // the device's messages (its OpenContext.Log)
	ifindex   int
	mac       packet.MAC
	mtu       int
	prog      *fastpath.Program // nil: no fast path on this kernel (Mode "off")
	tc        io.Closer
	out       *egressOut
	locals    []netip.Addr
	fallbacks []string
	// Picked says what the file's key led to and why ("auto: a veth").
	picked string

	mu     sync.Mutex // Close against Counters
	final  fastpath.Counters
	closed bool

	// The TC program's watcher (watchTC): lost counts its detachment
	// by another tool (bpftool link detach), after which the device's
	// traffic reaches the graph through its sockets.
	lost       atomic.Uint64
	stop, done chan struct{}
}

// TCPorter is implemented by another driver's devices that carry a
// TCPort: the shared table finds their fast path through it.
type TCPorter interface {
	// TCPort is the device's fast path, or nil without one.
	TCPort() *TCPort
}

// port is what the shared table needs of p.
func (p *TCPort) port() fastPort {
	return fastPort{ifindex: p.ifindex, mac: p.mac, mtu: p.mtu, input: p.prog != nil, output: p.out != nil}
}

// TCKeyValues are the values of the fastpath key of a driver that uses
// TCPort: "tc" (the fast path in TC; an error if the kernel cannot run
// it), "auto" (PickTC's choice for the device's kind, stepping down to
// none on a kernel without it) and "off".
var TCKeyValues = []string{"off", "auto", "tc"}

// PickTC is what key (TCKeyValues) asks of a device of link kind kind,
// and why, for the log and show interfaces: whether to run the fast
// path in TC. "auto" runs it on every kind: on a veth it is the fastest
// path a router has (an XDP program on a veth costs a copy per frame
// and its 256-frame ring: benchmarks/e2e-tcp.md), and on a NIC it is the
// only in-kernel fast path a device without XDP has (the afxdp driver's
// XDP fast path is faster there).
func PickTC(key, kind string) (bool, string) {
	switch key {
	case "tc":
		return true, "fastpath = \"tc\""
	case "auto":
		if kind == "veth" {
			return true, "auto: a veth (TC, redirected into its peer; no XDP program on it)"
		}
		return true, fmt.Sprintf("auto: a %s device without XDP (TC; the afxdp driver's XDP fast path is faster on a NIC)", kindName(kind))
	}
	return false, ""
}

func kindName(kind string) string {
	if kind == "" {
		return "physical"
	}
	return kind
}

// PlanTC says, before anything is loaded, what OpenTCPort will make of
// key on this kernel: the steps down (warnings), or the error an
// explicit "tc" gets.
func PlanTC(ifname, key string) ([]string, error) {
	if on, _ := PickTC(key, ""); !on {
		return nil, nil
	}
	if err := kfeature.HaveAll(fastpath.TCFeatures...); err != nil {
		if key == "tc" {
			return nil, tcKeyErr(ifname, err)
		}
		return []string{noTCFastPathWhy(err)}, nil
	}
	if err := kfeature.Have(kfeature.RedirectPeer); err != nil {
		return []string{noPeerWhy(err)}, nil
	}
	return nil, nil
}

func tcKeyErr(ifname string, why error) error {
	return conf.Errorf("fastpath", "%s: \"tc\" cannot be honoured: %v (with \"auto\" the graph forwards this device's traffic instead)", ifname, why)
}

func noTCFastPathWhy(why error) string {
	return fmt.Sprintf("no fast path in TC: %v; the graph forwards all of this device's traffic", why)
}

func noPeerWhy(why error) string {
	return fmt.Sprintf("%v: outputs are reached with bpf_redirect (into a veth: through its peer's backlog queue) instead of bpf_redirect_peer", why)
}

// OpenTCPort opens the fast path of the device info names (interface
// ifname, ifindex, link kind kind, MTU mtu) as its fastpath key asks
// (TCKeyValues; key "off" is not for OpenTCPort): the TC program on the
// device's ingress, the device an output of the shared table (reached
// with bpf_redirect_peer if it is a veth, else with bpf_redirect), its
// addresses local, traffic for the router's addresses policed as pol
// says (ParseLocalRate: the device's local_rate and local_burst). Call it
// in the device's network namespace. What the kernel lacks is stepped
// down from as the afxdp driver does, logged once, counted
// (fastpath_fallbacks) and shown (Modes); with key "tc" it is an error
// on fastpath. Its messages go to ctx's Log (the device's OpenContext),
// driver naming the caller.
func OpenTCPort(driver string, ctx drivers.OpenContext, info drivers.Info, ifname string, ifindex int, kind string, mtu int, key string, pol fastpath.Police) (*TCPort, error) {
	on, picked := PickTC(key, kind)
	if !on {
		return nil, fmt.Errorf("afxdp: OpenTCPort with fastpath %q", key)
	}
	l := newOpLog(ctx, driver, ifname)
	ft, err := acquireFastTable(l)
	if err != nil {
		return nil, err
	}
	p := &TCPort{ft: ft, log: l, ifindex: ifindex, mac: info.MAC, mtu: mtu, picked: picked}
	off := func(why error) (*TCPort, error) {
		if key == "tc" {
			p.Close()
			return nil, tcKeyErr(ifname, why)
		}
		p.fallbacks = append(p.fallbacks, noTCFastPathWhy(why))
		p.log.Printf("fast path: %s", p.fallbacks[len(p.fallbacks)-1])
		return p, nil
	}
	// The probe's own words first, as PlanTC (forwarder check) says them.
	if err := kfeature.HaveAll(fastpath.TCFeatures...); err != nil {
		return off(err)
	}
	if ft.t == nil {
		return off(ft.tErr)
	}
	if p.prog, err = fastpath.NewPolicedTCProgram(ft.t, info.MAC, pol); err != nil {
		return off(err)
	}
	via := fastpath.ViaTC
	if !p.prog.Peer {
		why := kfeature.Have(kfeature.RedirectPeer)
		if why == nil {
			why = fmt.Errorf("the kernel refused %s", fastpath.TCFastPathName)
		}
		p.fallbacks = append(p.fallbacks, noPeerWhy(why))
		p.log.Printf("fast path: %s", p.fallbacks[len(p.fallbacks)-1])
	} else if kind == "veth" {
		via = fastpath.ViaTCPeer
	}
	if p.out, err = ft.addOut(ifindex, p.log, via); err != nil {
		p.Close()
		return nil, fmt.Errorf("%s: the fast path's output: %w", ifname, err)
	}
	for _, a := range info.Addresses {
		if a.Addr().Is4() || a.Addr().Is6() && !a.Addr().Is4In6() && !a.Addr().IsLinkLocalUnicast() {
			if err := ft.addLocal(a.Addr()); err != nil {
				p.Close()
				return nil, err
			}
			p.locals = append(p.locals, a.Addr())
		}
	}
	if p.tc, err = p.prog.AttachTCX(ifindex); err != nil {
		if key == "tc" {
			p.Close()
			return nil, tcKeyErr(ifname, err)
		}
		p.prog.Close()
		p.prog = nil
		return off(err)
	}
	p.log.Printf("fast path: on in TC (program %s, %s); as an output it is reached by %s", p.prog.Variant, picked, viaWords(via))
	p.stop, p.done = make(chan struct{}), make(chan struct{})
	go p.watchTC()
	return p, nil
}

// watchTC looks every attachPoll whether the TC program is still
// attached (as the afxdp driver's watcher does for its programs); once
// another tool has detached it, the fast path forwards nothing and every
// frame reaches the graph through the device's sockets, which is logged
// and counted (fastpath_tc_lost) once.
func (p *TCPort) watchTC() {
	defer close(p.done)
	t := time.NewTicker(attachPoll)
	defer t.Stop()
	for {
		select {
		case <-p.stop:
			return
		case <-t.C:
			if !tcAttached(p.tc) {
				p.lost.Add(1)
				p.log.Printf("fast path: its TC program (%s) was detached by another tool: the graph forwards all of this device's traffic from now on", fastpath.TCFastPathName)
				return
			}
		}
	}
}

func viaWords(v fastpath.Via) string {
	if v == fastpath.ViaTCPeer {
		return "bpf_redirect_peer into its peer"
	}
	return "bpf_redirect"
}

// Table is the shared table (drivers.FastPath's FastPathTable).
func (p *TCPort) Table() drivers.FastPathTable { return p.ft }

// Mode is the fast path the device settled on, as show interfaces
// prints it: "tc", or "off" (the kernel could not run it), with what
// led there.
func (p *TCPort) Mode() drivers.Mode {
	m := drivers.Mode{Name: "fastpath", Value: "tc", Note: p.picked}
	if p.prog == nil {
		m.Value = "off"
	}
	if len(p.fallbacks) > 0 {
		m.Note += "; " + strings.Join(p.fallbacks, "; ")
	}
	return m
}

// Counters are the fast path's counters of the device: what its
// program forwarded and sent to the graph, and its state as an output
// (the afxdp driver's manual describes each).
func (p *TCPort) Counters() []drivers.Counter {
	p.mu.Lock()
	defer p.mu.Unlock()
	cs := []drivers.Counter{{Name: "fastpath_fallbacks", Value: uint64(len(p.fallbacks))}, {Name: "fastpath_tc_lost", Value: p.lost.Load()}}
	if p.prog == nil && p.final == (fastpath.Counters{}) {
		return cs
	}
	c := p.final
	if !p.closed {
		c, _ = p.prog.Counters()
	}
	cs = appendProgCounters(cs, c)
	return append(cs, p.out.counters()...)
}

// Close detaches the program and releases the shared table; the
// counters keep their last values.
func (p *TCPort) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil
	}
	p.closed = true
	if p.stop != nil {
		close(p.stop)
		<-p.done
	}
	if p.tc != nil {
		_ = p.tc.Close()
	}
	if p.prog != nil {
		p.final, _ = p.prog.Counters()
		_ = p.prog.Close()
	}
	if p.out != nil {
		p.ft.removeOut(p.out)
	}
	for _, a := range p.locals {
		p.ft.removeLocal(a)
	}
	return p.ft.release()
}

// DetachForTest detaches the TC program as another tool would (bpftool
// link detach): the link stays open, the program leaves the device.
func (p *TCPort) DetachForTest() error {
	l, ok := p.tc.(link.Link)
	if !ok {
		return fmt.Errorf("afxdp: %T is no BPF link", p.tc)
	}
	return l.Detach()
}
