package fastpath

import (
	"encoding/binary"
	"errors"
	"fmt"
	"github.com/junction-dataplane/junction/drivers/kfeature"

	"github.com/asavie/xdp"
	"github.com/cilium/ebpf"
)

// ProgramName is the name the kernel shows for the fast path's program
// (bpftool prog, ip link): the driver can recognise a leftover of ours
// by it.
const ProgramName = "junction_fp"

// xdpPass is XDP_PASS, the slow path's fallback action.
const xdpPass = 2

// Counters are a Program's packet counts, summed over CPUs.
type Counters struct {
	Forwarded      uint64 // frames forwarded in the kernel
	ForwardedBytes uint64 // their bytes (whole frames, Ethernet header included)
	Slow           uint64 // frames sent to the slow path (AF_XDP socket or kernel)
	// Policed: frames for the router (Tables.SetLocal) dropped beyond
	// their class's rate (Police), by class (PoliceClasses); LocalPassed:
	// those let on to the slow path while policing.
	Policed     [len(PoliceClasses)]uint64
	LocalPassed uint64
	// Runs and RunNanos are the kernel's count and total time of the
	// program's runs, kept only while kernel.bpf_stats_enabled is 1:
	// RunNanos/Runs is what the fast path costs per frame.
	Runs, RunNanos uint64
}

// Program is one device's XDP program with its own XSKMAP, queue map and
// counters; the route and neighbour maps are the shared Tables'.
type Program struct {
	// HandOff: the program hands frames for outputs reached through TC
	// to the input's TC program (the variant with bpf_xdp_adjust_meta);
	// without it every output is reached by XDP redirects.
	HandOff bool
	// Variant is the name of the variant loaded (bpf/fastpath.c), for
	// the log: junction_fp, junction_fp_nometa, junction_tcfp, ...
	Variant string
	// TC: the fast path as a TC ingress program (NewTCProgram); Peer:
	// its variant with bpf_redirect_peer.
	TC, Peer bool
	prog     *ebpf.Program
	xsks     *ebpf.Map
	queues   *ebpf.Map
	counters *ebpf.Map
	police   *ebpf.Map // per class and CPU: bucket, passed, dropped (police.go)
	pol      Police
	x        *xdp.Program
}

// NewProgram builds and loads the program for a device with queues RX
// queues (the XSKMAP's size, >= 1) and own MAC address mac.
func NewProgram(t *Tables, queues int, mac [6]byte) (*Program, error) {
	return NewPolicedProgram(t, queues, mac, Police{})
}

// NewPolicedProgram is NewProgram with traffic for the router policed
// as pol says.
func NewPolicedProgram(t *Tables, queues int, mac [6]byte, pol Police) (*Program, error) {
	if t == nil {
		return nil, errors.New("fastpath: nil Tables")
	}
	if queues < 1 || queues > 1<<20 {
		return nil, fmt.Errorf("fastpath: bad queue count %d", queues)
	}
	if err := kfeature.HaveAll(kfeature.XDPProgram, kfeature.XSKMap, kfeature.XDPRedirectMap, kfeature.PerCPUArray); err != nil {
		return nil, fmt.Errorf("fastpath: %w", err)
	}
	if _, _, err := pol.constants(); err != nil {
		return nil, err
	}
	p := &Program{pol: pol}
	var err error
	// The same names as asavie/xdp's maps, so tools see the familiar
	// layout.
	if p.queues, err = newMap(&ebpf.MapSpec{Name: "qidconf_map", Type: ebpf.Array, KeySize: 4, ValueSize: 4, MaxEntries: uint32(queues)}); err != nil {
		return nil, fmt.Errorf("fastpath: creating the queue map: %w", err)
	}
	if p.xsks, err = newMap(&ebpf.MapSpec{Name: "xsks_map", Type: ebpf.XSKMap, KeySize: 4, ValueSize: 4, MaxEntries: uint32(queues)}); err != nil {
		p.Close()
		return nil, fmt.Errorf("fastpath: creating the XSKMAP: %w", err)
	}
	if p.counters, err = newMap(&ebpf.MapSpec{Name: "fp_counters", Type: ebpf.PerCPUArray, KeySize: 4, ValueSize: counterValueSize, MaxEntries: 1}); err != nil {
		p.Close()
		return nil, fmt.Errorf("fastpath: creating the counter map: %w", err)
	}
	if err = p.newPoliceMap(); err != nil {
		p.Close()
		return nil, err
	}
	// The variants the kernel's features allow, best first: with
	// bpf_xdp_get_buff_len (Linux 5.18; else the frame length by
	// subtracting packet pointers, which the verifier allows only with
	// CAP_PERFMON or CAP_SYS_ADMIN) and with the hand-off to TC
	// (bpf_xdp_adjust_meta, which some kernel builds refuse in XDP
	// programs). A feature the probe could not decide is tried; its
	// variant's load failure moves on to the next.
	var errs []error
	for _, v := range variants() {
		if p.prog, err = load(program(t, p, mac, v.name(), ProgramName)); err == nil {
			p.HandOff, p.Variant = v.meta, v.name()
			break
		}
		errs = append(errs, fmt.Errorf("%s: %w", v.name(), err))
	}
	if p.prog == nil {
		p.Close()
		return nil, fmt.Errorf("fastpath: loading the program: %w", errors.Join(errs...))
	}
	p.x = &xdp.Program{Program: p.prog, Queues: p.queues, Sockets: p.xsks}
	return p, nil
}

// FD is the program's file descriptor, for attaching it.
func (p *Program) FD() int { return p.prog.FD() }

// XDP returns an asavie/xdp Program that shares this program, its
// XSKMAP (Sockets) and its queue map (Queues, which the program ignores:
// only the XSKMAP decides whether a queue has a socket), so that its
// Register, Unregister, Attach, Detach and Close work as with
// xdp.NewProgram. Every call returns the same *xdp.Program.
//
// Ownership: closing the xdp.Program closes the program and those two
// maps; the counter map stays open until Program.Close, which closes all
// four and may be called before or after the xdp.Program's Close (closing
// twice is harmless). The Tables are not closed by either.
func (p *Program) XDP() *xdp.Program { return p.x }

// Counters returns the counts summed over CPUs.
func (p *Program) Counters() (Counters, error) {
	var per []fastpathCounters
	if err := p.counters.Lookup(uint32(0), &per); err != nil {
		return Counters{}, fmt.Errorf("fastpath: reading counters: %w", err)
	}
	var c Counters
	for _, v := range per {
		c.Forwarded += v.Forwarded
		c.ForwardedBytes += v.ForwardedBytes
		c.Slow += v.Slow
	}
	if err := p.readPolice(&c); err != nil {
		return Counters{}, err
	}
	// The kernel times programs only while BPF statistics are on
	// (sysctl kernel.bpf_stats_enabled=1, which costs two clock reads
	// per run); otherwise both stay 0.
	if st, err := p.prog.Stats(); err == nil {
		c.Runs = st.RunCount
		c.RunNanos = uint64(st.Runtime)
	}
	return c, nil
}

// Close closes the program and its maps (not the Tables); idempotent.
func (p *Program) Close() error {
	// Both Close methods accept nil receivers and closed descriptors.
	return errors.Join(p.prog.Close(), p.xsks.Close(), p.queues.Close(), p.counters.Close(), p.police.Close())
}

// Supported returns nil if this kernel has every feature the fast path
// needs at all (kfeature); otherwise the first missing, which is also
// what NewTables or NewProgram would fail with.
func Supported() error { return kfeature.HaveAll(Features...) }

// Features are the kernel features without which there is no fast path
// at all (the tests of anything that loads it require them).
var Features = []kfeature.Feature{kfeature.XDPProgram, kfeature.XSKMap, kfeature.XDPRedirectMap,
	kfeature.LPMTrie, kfeature.DevmapHash, kfeature.PerCPUArray, kfeature.MmapableArray}

// HandOffSupported returns nil if this kernel has what outputs reached
// through TC need: the program variant with bpf_xdp_adjust_meta and the
// TC program (tcx, bpf_redirect_peer); otherwise the first missing.
func HandOffSupported() error {
	return kfeature.HaveAll(kfeature.XDPAdjustMeta, kfeature.TCX, kfeature.RedirectPeer)
}

// variant is one build of the XDP program (bpf/fastpath.c): buffLen,
// whether it reads the frame length with bpf_xdp_get_buff_len; meta,
// whether it hands frames to TC through bpf_xdp_adjust_meta.
type variant struct{ buffLen, meta bool }

// name is the variant's program name in the object.
func (v variant) name() string {
	n := "junction_fp"
	if !v.buffLen {
		n += "_ptrlen"
	}
	if !v.meta {
		n += "_nometa"
	}
	return n
}

// variants lists the variants to try, best first: none that needs a
// feature kfeature knows to be missing (or emulated missing).
func variants() []variant {
	var vs []variant
	for _, meta := range []bool{true, false} {
		if meta && kfeature.Have(kfeature.XDPAdjustMeta) != nil {
			continue
		}
		for _, bl := range []bool{true, false} {
			if bl && kfeature.Have(kfeature.XDPGetBuffLen) != nil {
				continue
			}
			vs = append(vs, variant{buffLen: bl, meta: meta})
		}
	}
	return vs
}

// program prepares the program name of the object (a variant of the XDP
// program or of the TC one, bpf/fastpath.c) for load under the kernel
// name kernelName, with mac compiled in (as the constants a 32-bit and a
// 16-bit load of its bytes read, in host order) and with t's maps and
// p's counters and XSKMAP (the XDP program's only).
func program(t *Tables, p *Program, mac [6]byte, name, kernelName string) objectSpec {
	ne := binary.NativeEndian
	maps := map[string]*ebpf.Map{
		"fp_tbl24":      t.dir.tbl24,
		"fp_tbl8":       t.dir.tbl8,
		"fp_nexthops":   t.dir.nexthops,
		"fp_neighbors":  t.neighbors,
		"fp_flows":      t.flows,
		"fp_flow_stats": t.flowStats,
		"fp_flow_gen":   t.flowGen,
		"fp_devmap":     t.devmap,
		"fp_egress":     t.egress,
		"fp_routes6":    t.routes6,
		"fp_neighbors6": t.neighbors6,
		"fp_flows6":     t.flows6,
		"fp_counters":   p.counters,
		"fp_local":      t.local,
		"fp_police":     p.police,
	}
	if !p.TC {
		maps["xsks_map"] = p.xsks
	}
	// Checked by NewPolicedProgram and NewPolicedTCProgram.
	interval, burst, _ := p.pol.constants()
	return newObjectSpec(name, kernelName, map[string]any{
		"mac_lo":          ne.Uint32(mac[0:4]),
		"mac_hi":          ne.Uint16(mac[4:6]),
		"police_interval": interval,
		"police_burst":    burst,
	}, maps)
}
