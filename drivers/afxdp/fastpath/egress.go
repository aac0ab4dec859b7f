package fastpath

import (
	"errors"
	"fmt"
	"github.com/junction-dataplane/junction/drivers/kfeature"
	"io"
	"math"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
)

// Egress: which interfaces the program may redirect to, and how the
// kernel's refusals are noticed.
//
// bpf_redirect's return value says nothing about delivery: the kernel
// queues the frame after the program returns, and a device that cannot
// take redirected frames (a veth whose peer runs neither an XDP program
// nor GRO, a device that is down or lacks ndo_xdp_xmit) makes it drop
// them there. On Linux 6.x that refusal happens at enqueue time
// (__xdp_enqueue: -EOPNOTSUPP, -ENETDOWN, -EMSGSIZE), is counted by no
// veth statistic (ethtool -S shows no xdp_xmit_errors for it), and fires
// the xdp:xdp_redirect_err tracepoint with the map's type, id and key.
// So the program redirects through its own device map (fp_devmap: a
// DEVMAP_HASH keyed by ifindex, whose id no other program uses), and a
// small raw-tracepoint program on xdp:xdp_redirect_err, which runs on
// the same CPU right after the failed enqueue, picks out the events of
// that map id and, in the kernel, marks the output disabled
// (fp_egress) and counts the lost frame (fp_egress_errors). The XDP
// program checks fp_egress before it rewrites a frame, so from the next
// frame on, traffic for that output takes the slow path (the AF_XDP
// sockets and the graph) instead of being lost. Userspace polls the two
// maps to report and to re-enable (SetEgress).
//
// Frames the kernel drops later, at flush time (ndo_xdp_xmit failing
// for a full ring: congestion, like a full TX queue), fire
// xdp:xdp_devmap_xmit instead and are not counted here (a veth counts
// them in its tx_dropped).
//
// An output may instead be reached through TC (SetEgressVia): the XDP
// program rewrites the frame as always, leaves the output in the
// frame's metadata and passes it up; the input's TC ingress program
// (AttachTC) redirects the skb out of the output, or, for a veth, into
// its peer's ingress. The kernel cannot refuse that the way it refuses
// an XDP redirect, so such outputs never need the watcher.
const (
	// fp_egress (hash) key: u32 ifindex; value: fastpathEgress
	// (Disabled: 0 = the program may redirect there; Err: the last
	// failure's errno, negative, as the tracepoint reported it; Via).
	// maxEgress bounds the interfaces the fast path redirects to.
	maxEgress = 4096

	// RedirectTracepoint is the tracepoint the watcher attaches to.
	RedirectTracepoint = "xdp_redirect_err"
)

// Via is how frames leave through an output.
type Via uint32

const (
	// ViaXDP: XDP_REDIRECT through the device map (the default).
	ViaXDP Via = 0
	// ViaTC: XDP_PASS, then the input's TC program's bpf_redirect out
	// of the output (its qdisc and driver transmit).
	ViaTC Via = 1
	// ViaTCPeer: XDP_PASS, then bpf_redirect_peer into the ingress of
	// the output veth's peer (no backlog queue, no XDP ring): outputs
	// that are veths only.
	ViaTCPeer Via = 2
)

func (v Via) String() string {
	switch v {
	case ViaXDP:
		return "xdp"
	case ViaTC:
		return "tc"
	case ViaTCPeer:
		return "tc-peer"
	}
	return fmt.Sprintf("Via(%d)", uint32(v))
}

// newEgressMaps creates fp_devmap, fp_egress and fp_egress_errors.
func (t *Tables) newEgressMaps() error {
	var err error
	if t.devmap, err = newMap(&ebpf.MapSpec{Name: "fp_devmap", Type: ebpf.DevMapHash, KeySize: 4, ValueSize: 4, MaxEntries: maxEgress}); err != nil {
		return fmt.Errorf("fastpath: creating the device map: %w", err)
	}
	if t.egress, err = newMap(&ebpf.MapSpec{Name: "fp_egress", Type: ebpf.Hash, KeySize: 4, ValueSize: sizeOf[fastpathEgress](), MaxEntries: maxEgress}); err != nil {
		return fmt.Errorf("fastpath: creating the egress map: %w", err)
	}
	if t.egressErrs, err = newMap(&ebpf.MapSpec{Name: "fp_egress_errs", Type: ebpf.Hash, KeySize: 4, ValueSize: 8, MaxEntries: maxEgress}); err != nil {
		return fmt.Errorf("fastpath: creating the egress error map: %w", err)
	}
	info, err := t.devmap.Info()
	if err != nil {
		return fmt.Errorf("fastpath: the device map's id: %w", err)
	}
	id, ok := info.ID()
	if !ok {
		return errors.New("fastpath: the kernel does not report the device map's id")
	}
	t.devmapID = uint32(id)
	return nil
}

// WatchRedirects loads the watcher and attaches it to
// xdp:xdp_redirect_err. Without it nothing notices a device that refuses
// redirected frames, so callers should keep every output disabled when it
// fails. The watcher stays attached until Close.
func (t *Tables) WatchRedirects() error {
	t.watchMu.Lock()
	defer t.watchMu.Unlock()
	if t.watchLink != nil {
		return nil
	}
	if t.egress == nil {
		return errors.New("fastpath: tables closed")
	}
	if err := kfeature.Have(kfeature.RawTracepoint); err != nil {
		return fmt.Errorf("fastpath: the redirect watcher: %w", err)
	}
	// The watcher (junction_fp_err in bpf/fastpath.c): for an event
	// of fp_devmap (map id devmapID), it sets fp_egress[index]
	// disabled with the event's errno and adds 1 to
	// fp_egress_errs[index]; it ignores every other event (another
	// program's redirects, XSKMAP failures).
	prog, err := load(newObjectSpec("junction_fp_err", "junction_fp_err",
		map[string]any{"devmap_id": t.devmapID},
		map[string]*ebpf.Map{"fp_egress": t.egress, "fp_egress_errs": t.egressErrs}))
	if err != nil {
		return fmt.Errorf("fastpath: loading the redirect watcher: %w", err)
	}
	l, err := link.AttachRawTracepoint(link.RawTracepointOptions{Name: RedirectTracepoint, Program: prog})
	if err != nil {
		prog.Close()
		return fmt.Errorf("fastpath: attaching the redirect watcher to xdp:%s: %w", RedirectTracepoint, err)
	}
	t.watchProg, t.watchLink = prog, l
	return nil
}

func egressKey(ifindex int) (uint32, error) {
	if ifindex <= 0 || ifindex > math.MaxUint32 {
		return 0, fmt.Errorf("fastpath: bad ifindex %d", ifindex)
	}
	return uint32(ifindex), nil
}

// AddEgress lets the program redirect to ifindex (in the calling
// thread's network namespace) once enabled: it enters the device map,
// and fp_egress as disabled unless enabled is true. Routes and flows
// whose output is not added, or disabled, take the slow path.
func (t *Tables) AddEgress(ifindex int, enabled bool) error {
	k, err := egressKey(ifindex)
	if err != nil {
		return err
	}
	if err := t.devmap.Put(k, k); err != nil {
		return fmt.Errorf("fastpath: ifindex %d into the device map: %w", ifindex, err)
	}
	t.viaMu.Lock()
	if _, ok := t.via[k]; !ok {
		t.via[k] = ViaXDP
	}
	t.viaMu.Unlock()
	if err := t.egressErrs.Update(k, uint64(0), ebpf.UpdateNoExist); err != nil && !errors.Is(err, ebpf.ErrKeyExist) {
		return fmt.Errorf("fastpath: ifindex %d error count: %w", ifindex, err)
	}
	return t.SetEgress(ifindex, enabled)
}

// SetEgress enables or disables redirects to an added ifindex.
func (t *Tables) SetEgress(ifindex int, enabled bool) error {
	k, err := egressKey(ifindex)
	if err != nil {
		return err
	}
	t.viaMu.Lock()
	via := t.via[k]
	t.viaMu.Unlock()
	v := fastpathEgress{Via: uint32(via)}
	if !enabled {
		v.Disabled = 1
	}
	return t.egress.Put(k, &v)
}

// SetEgressVia sets how frames leave through ifindex, from the next
// SetEgress on (call it before AddEgress, or follow it with SetEgress).
// ViaTC and ViaTCPeer need AttachTC on every fast-path input: without
// it, frames forwarded to the output would reach the input's stack.
func (t *Tables) SetEgressVia(ifindex int, via Via) error {
	k, err := egressKey(ifindex)
	if err != nil {
		return err
	}
	if via > ViaTCPeer {
		return fmt.Errorf("fastpath: bad via %d", via)
	}
	t.viaMu.Lock()
	t.via[k] = via
	t.viaMu.Unlock()
	return nil
}

// RemoveEgress disables ifindex and removes it from the maps; a missing
// entry is not an error.
func (t *Tables) RemoveEgress(ifindex int) error {
	k, err := egressKey(ifindex)
	if err != nil {
		return err
	}
	var errs []error
	t.viaMu.Lock()
	delete(t.via, k)
	t.viaMu.Unlock()
	// Disabled first: a frame that passed the check before the device
	// map entry goes is the only one that can still miss it.
	for _, m := range []*ebpf.Map{t.egress, t.devmap, t.egressErrs} {
		if err := m.Delete(k); err != nil && !errors.Is(err, ebpf.ErrKeyNotExist) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// EgressState is what the kernel says of one output.
type EgressState struct {
	Disabled bool
	Via      Via
	// Err is the errno of the last refused redirect (negative, as the
	// kernel returned it; 0 if none since the last SetEgress).
	Err int32
	// Errors counts the frames the kernel refused since AddEgress: the
	// program redirected them and they were lost.
	Errors uint64
}

// Egress reads the state of an added ifindex.
func (t *Tables) Egress(ifindex int) (EgressState, error) {
	k, err := egressKey(ifindex)
	if err != nil {
		return EgressState{}, err
	}
	var s EgressState
	var v fastpathEgress
	if err := t.egress.Lookup(k, &v); err != nil {
		return s, err
	}
	s.Disabled, s.Err, s.Via = v.Disabled != 0, v.Err, Via(v.Via)
	if err := t.egressErrs.Lookup(k, &s.Errors); err != nil {
		return s, err
	}
	return s, nil
}

// TCProgramName is the kernel's name for the TC ingress program.
const TCProgramName = "junction_fp_tc"

// AttachTC loads the TC ingress program (junction_fp_tc in
// bpf/fastpath.c) and attaches it to ifindex's ingress (tcx, Linux 6.6),
// where it sends on the frames the device's XDP program forwarded to
// outputs reached through TC; closing the returned link detaches it.
// The program uses no map: one per device.
func AttachTC(ifindex int) (io.Closer, error) {
	if err := kfeature.HaveAll(kfeature.TCX, kfeature.RedirectPeer); err != nil {
		return nil, fmt.Errorf("fastpath: the TC program: %w", err)
	}
	prog, err := load(newObjectSpec("junction_fp_tc", TCProgramName, nil, nil))
	if err != nil {
		return nil, fmt.Errorf("fastpath: loading the TC program: %w", err)
	}
	defer prog.Close() // the link keeps its own reference
	l, err := link.AttachTCX(link.TCXOptions{Interface: ifindex, Program: prog, Attach: ebpf.AttachTCXIngress})
	if err != nil {
		return nil, fmt.Errorf("fastpath: attaching the TC program to ifindex %d's ingress (tcx, Linux 6.6): %w", ifindex, err)
	}
	return l, nil
}
