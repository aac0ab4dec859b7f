package fastpath

import (
	"errors"
	"fmt"
	"io"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"

	"github.com/junction-dataplane/junction/drivers/kfeature"
)

// TCFastPathName is the kernel's name for the fast path run as a TC
// ingress program (bpftool prog, tc filter show): a device that runs no
// XDP program forwards with it.
const TCFastPathName = "junction_tcfp"

// TCFeatures are the kernel features without which a device cannot run
// the fast path in TC (NewTCProgram, Program.AttachTCX); bpf_check_mtu
// (Linux 5.12) comes with tcx.
// (NewTables' maps included: the device map is created whether or not
// an XDP program uses it).
var TCFeatures = []kfeature.Feature{kfeature.TCX, kfeature.LPMTrie, kfeature.DevmapHash, kfeature.PerCPUArray, kfeature.MmapableArray}

// NewTCProgram builds and loads the fast path as a TC ingress program
// (junction_tcfp in bpf/fastpath.c) for a device of own MAC address mac,
// reading t's routes, neighbours, flows and outputs: a frame it
// forwards, it sends on itself (bpf_redirect_peer into an output veth's
// peer, bpf_redirect out of any other output); every other frame goes on
// to the stack (TC_ACT_UNSPEC), counted as slow. Attach it with
// AttachTCX. The returned Program has no XSKMAP (XDP returns nil);
// Counters and Close work as for the XDP program's.
//
// On a kernel without bpf_redirect_peer (kfeature), or whose verifier
// refuses it, it loads junction_tcfp_nopeer, which reaches every output
// with bpf_redirect (into a veth: through its peer's backlog queue);
// Peer says which.
func NewTCProgram(t *Tables, mac [6]byte) (*Program, error) {
	return NewPolicedTCProgram(t, mac, Police{})
}

// NewPolicedTCProgram is NewTCProgram with traffic for the router
// (Tables.SetLocal) policed as pol says, as NewPolicedProgram's XDP
// program does: a frame beyond its class's rate is dropped
// (TC_ACT_SHOT) before the stack hands it to the device's packet
// sockets, and counted (Counters.Policed).
func NewPolicedTCProgram(t *Tables, mac [6]byte, pol Police) (*Program, error) {
	if t == nil {
		return nil, errors.New("fastpath: nil Tables")
	}
	if err := kfeature.HaveAll(TCFeatures...); err != nil {
		return nil, fmt.Errorf("fastpath: %w", err)
	}
	if _, _, err := pol.constants(); err != nil {
		return nil, err
	}
	p := &Program{TC: true, pol: pol}
	var err error
	if p.counters, err = newMap(&ebpf.MapSpec{Name: "fp_counters", Type: ebpf.PerCPUArray, KeySize: 4, ValueSize: counterValueSize, MaxEntries: 1}); err != nil {
		return nil, fmt.Errorf("fastpath: creating the counter map: %w", err)
	}
	if err = p.newPoliceMap(); err != nil {
		p.Close()
		return nil, err
	}
	var errs []error
	for _, peer := range []bool{true, false} {
		if peer && kfeature.Have(kfeature.RedirectPeer) != nil {
			continue
		}
		name := "junction_tcfp"
		if !peer {
			name += "_nopeer"
		}
		if p.prog, err = load(program(t, p, mac, name, TCFastPathName)); err == nil {
			p.Peer, p.Variant = peer, name
			break
		}
		errs = append(errs, fmt.Errorf("%s: %w", name, err))
	}
	if p.prog == nil {
		p.Close()
		return nil, fmt.Errorf("fastpath: loading the TC program: %w", errors.Join(errs...))
	}
	return p, nil
}

// AttachTCX attaches a program NewTCProgram loaded to ifindex's ingress
// (tcx, Linux 6.6), after the programs attached there before it (another
// tool's filter that decides a frame first keeps deciding it; one that
// passes it on lets the fast path have it). Closing the returned link
// detaches it; the program stays loaded until Close.
func (p *Program) AttachTCX(ifindex int) (io.Closer, error) {
	if !p.TC {
		return nil, errors.New("fastpath: not a TC program")
	}
	l, err := link.AttachTCX(link.TCXOptions{Interface: ifindex, Program: p.prog, Attach: ebpf.AttachTCXIngress})
	if err != nil {
		return nil, fmt.Errorf("fastpath: attaching %s to ifindex %d's ingress (tcx, Linux 6.6): %w", TCFastPathName, ifindex, err)
	}
	return l, nil
}
