package kfeature

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/features"
	"github.com/cilium/ebpf/link"
	"golang.org/x/sys/unix"
)

// Feature is a kernel feature by the name Junction gives it (Catalog):
// what JUNCTION_KERNEL_MISSING, Require, logs and forwarder features use.
type Feature string

// The features the drivers use.
const (
	AFXDP          Feature = "af_xdp"
	XDPProgram     Feature = "xdp_program"
	XSKMap         Feature = "xskmap"
	XDPLink        Feature = "xdp_bpf_link"
	XDPAdjustMeta  Feature = "xdp_adjust_meta"
	XDPGetBuffLen  Feature = "xdp_get_buff_len"
	XDPRedirectMap Feature = "xdp_redirect_map"
	DevmapHash     Feature = "devmap_hash"
	LPMTrie        Feature = "lpm_trie"
	LPMTrieBatch   Feature = "lpm_trie_batch"
	PerCPUArray    Feature = "percpu_array"
	MmapableArray  Feature = "mmapable_array"
	TCX            Feature = "tcx"
	RedirectPeer   Feature = "tc_redirect_peer"
	RawTracepoint  Feature = "raw_tracepoint"
	XDPFeatures    Feature = "xdp_features_netlink"
)

// Info describes a feature: the first mainline kernel with it, what
// Junction uses it for, and what Junction does on a kernel without it.
type Info struct {
	Name     Feature `json:"name"`
	Since    string  `json:"since"`
	Uses     string  `json:"used_for"`
	Without  string  `json:"without"`
	Optional bool    `json:"optional"` // Junction runs without it (JUNCTION_KERNEL_MISSING=optional covers it)
}

// Catalog lists every feature the drivers use, in the order forwarder
// features prints them.
var Catalog = []Info{
	{AFXDP, "4.18", "the afxdp driver's sockets", "the afxdp driver cannot open a device (use driver = \"afpacket\")", false},
	{XDPProgram, "4.8", "the afxdp driver's XDP program, which hands frames to its sockets", "the afxdp driver cannot open a device (use driver = \"afpacket\")", false},
	{XSKMap, "4.18", "the map through which the XDP program reaches the AF_XDP sockets", "the afxdp driver cannot open a device (use driver = \"afpacket\")", false},
	{XDPLink, "5.9", "attaching XDP programs with a BPF link, which the kernel removes when the process dies", "the program is attached through netlink and removed on every exit path but a crash (a later start replaces the leftover)", true},
	{XDPAdjustMeta, "4.15", "the fast path's hand-off to TC (fastpath_redirect \"tc\", \"auto\" on a veth): the output travels in the frame's metadata", "outputs are reached by XDP redirects (a veth only while its peer runs XDP or has GRO on; otherwise its traffic takes the graph); fastpath_redirect = \"tc\" is an error", true},
	{XDPGetBuffLen, "5.18", "the fast path's byte counts (whole frame length)", "the fast path loads a variant that subtracts packet pointers (needs CAP_PERFMON or CAP_SYS_ADMIN)", true},
	{XDPRedirectMap, "4.14", "the fast path's redirects to output devices", "no in-kernel fast path: the graph forwards everything", true},
	{DevmapHash, "5.4", "the fast path's output devices by interface index", "no in-kernel fast path: the graph forwards everything", true},
	{LPMTrie, "4.11", "the fast path's IPv6 route table", "no in-kernel fast path: the graph forwards everything", true},
	{LPMTrieBatch, "5.6", "loading many IPv6 routes into the fast path's route table with one system call a batch (BPF_MAP_UPDATE_BATCH and DELETE_BATCH on the LPM trie itself, which the probe asks: a full table from a routing daemon)", "each route is one bpf(2) call: more CPU while a full table loads, forwarding unchanged", true},
	{PerCPUArray, "4.6", "the fast path's counters", "no in-kernel fast path: the graph forwards everything", true},
	{MmapableArray, "5.5", "the fast path's per-flow counters, read without system calls, and its IPv4 route table, written in place", "no in-kernel fast path: the graph forwards everything", true},
	{TCX, "6.6", "the fast path's TC ingress programs: afxdp's hand-off to TC, afpacket's fast path in TC", "afxdp: outputs are reached by XDP redirects, as without xdp_adjust_meta; afpacket: no fast path (fastpath = \"auto\" runs without, \"tc\" is an error)", true},
	{RedirectPeer, "5.10", "the TC programs' redirect into a veth's peer", "afxdp: outputs are reached by XDP redirects, as without xdp_adjust_meta; afpacket: bpf_redirect into the veth (through its peer's backlog queue)", true},
	{RawTracepoint, "4.17", "the fast path's watcher of refused redirects (xdp:xdp_redirect_err)", "no output can be trusted to take redirected frames: the in-kernel fast path forwards nothing, the graph forwards everything", true},
	{XDPFeatures, "6.3", "asking whether a device takes XDP-redirected frames (netdev netlink family)", "a device that refuses redirects is found out by its first refused frame (one frame lost per outage)", true},
}

// Lookup returns the catalog entry of f.
func Lookup(f Feature) (Info, bool) {
	for _, i := range Catalog {
		if i.Name == f {
			return i, true
		}
	}
	return Info{}, false
}

// Status is what is known of a feature on this kernel.
type Status string

const (
	Yes      Status = "yes"      // the kernel has it
	No       Status = "no"       // the kernel lacks it
	Emulated Status = "emulated" // JUNCTION_KERNEL_MISSING names it: treated as missing
	Unknown  Status = "unknown"  // the probe could not tell (no permission, ...): Junction tries it and reports what happens
)

// Missing is the error of a feature this kernel lacks (or that
// JUNCTION_KERNEL_MISSING names).
type Missing struct {
	Feature  Feature
	Emulated bool
	Reason   string // the probe's error, if any
}

func (e *Missing) Error() string {
	i, _ := Lookup(e.Feature)
	s := fmt.Sprintf("this kernel lacks %s (%s", e.Feature, i.Uses)
	if i.Since != "" {
		s += ", mainline Linux " + i.Since
	}
	s += ")"
	if e.Emulated {
		s += " [emulated: JUNCTION_KERNEL_MISSING]"
	} else if e.Reason != "" {
		s += ": " + e.Reason
	}
	return s
}

// Is makes errors.Is(err, ebpf.ErrNotSupported) true for a Missing.
func (e *Missing) Is(target error) bool { return target == ebpf.ErrNotSupported }

// IsMissing reports whether err is (or wraps) a Missing, and which.
func IsMissing(err error) (*Missing, bool) {
	var m *Missing
	ok := errors.As(err, &m)
	return m, ok
}

// EnvMissing and EnvRequire are the environment variables of the package
// doc.
const (
	EnvMissing = "JUNCTION_KERNEL_MISSING"
	EnvRequire = "JUNCTION_REQUIRE_FEATURES"
)

// emulated reports whether JUNCTION_KERNEL_MISSING names f. Read at
// every call (a getenv), so that tests may set it per test.
func emulated(f Feature) bool {
	v := os.Getenv(EnvMissing)
	if v == "" {
		return false
	}
	for _, n := range strings.Split(v, ",") {
		n = strings.TrimSpace(n)
		if Feature(n) == f {
			return true
		}
		if n == "optional" {
			if i, ok := Lookup(f); ok && i.Optional {
				return true
			}
		}
	}
	return false
}

// CheckEmulation returns an error for a name in JUNCTION_KERNEL_MISSING
// that is no feature (a typo would otherwise emulate nothing).
func CheckEmulation() error {
	v := os.Getenv(EnvMissing)
	if v == "" {
		return nil
	}
	for _, n := range strings.Split(v, ",") {
		n = strings.TrimSpace(n)
		if _, ok := Lookup(Feature(n)); !ok && n != "optional" && n != "" {
			var names []string
			for _, i := range Catalog {
				names = append(names, string(i.Name))
			}
			return fmt.Errorf("%s: %q is not a kernel feature Junction uses (one of: optional, %s)", EnvMissing, n, strings.Join(names, ", "))
		}
	}
	return nil
}

// result is one probe's outcome, cached for the process.
type result struct {
	status Status
	err    error
}

var (
	mu      sync.Mutex
	results = map[Feature]*result{}
	// extra holds probes other packages register (Register).
	extra = map[Feature]func() error{}
)

// Register sets the probe of a feature whose probe lives with the code
// that uses it (XDPFeatures: the fast path's netlink client). The probe
// returns nil (present), an error wrapping ebpf.ErrNotSupported
// (missing), or another error (unknown).
func Register(f Feature, probe func() error) {
	mu.Lock()
	defer mu.Unlock()
	extra[f] = probe
}

// probed returns the kernel's answer for f, probing it the first time.
func probed(f Feature) *result {
	mu.Lock()
	defer mu.Unlock()
	if r, ok := results[f]; ok {
		return r
	}
	p := probes[f]
	if p == nil {
		p = extra[f]
	}
	r := &result{status: Unknown, err: errors.New("no probe")}
	if p != nil {
		err := p()
		switch {
		case err == nil:
			r = &result{status: Yes}
		case errors.Is(err, ebpf.ErrNotSupported):
			r = &result{status: No, err: err}
		default:
			r = &result{status: Unknown, err: err}
		}
	}
	results[f] = r
	return r
}

// StatusOf returns what is known of f: Emulated if JUNCTION_KERNEL_MISSING
// names it, else the probe's answer.
func StatusOf(f Feature) (Status, error) {
	if emulated(f) {
		return Emulated, nil
	}
	r := probed(f)
	return r.status, r.err
}

// Have returns nil unless f is known to be missing (the kernel said no,
// or JUNCTION_KERNEL_MISSING names it); then a *Missing. A feature the
// probe could not decide counts as present: the use itself will fail
// with the kernel's own error if it is not.
func Have(f Feature) error {
	switch s, err := StatusOf(f); s {
	case Emulated:
		return &Missing{Feature: f, Emulated: true}
	case No:
		m := &Missing{Feature: f}
		if err != nil {
			m.Reason = err.Error()
		}
		return m
	}
	return nil
}

// HaveAll returns the first of fs that Have reports missing, or nil.
func HaveAll(fs ...Feature) error {
	for _, f := range fs {
		if err := Have(f); err != nil {
			return err
		}
	}
	return nil
}

// Row is one line of Report.
type Row struct {
	Info
	Status Status `json:"status"`
	Detail string `json:"detail,omitempty"` // the probe's error where it said no or could not tell
}

// Report probes every feature of the catalog.
func Report() []Row {
	rows := make([]Row, 0, len(Catalog))
	for _, i := range Catalog {
		s, err := StatusOf(i.Name)
		r := Row{Info: i, Status: s}
		if err != nil && s != Yes {
			r.Detail = err.Error()
		}
		rows = append(rows, r)
	}
	return rows
}

// Summary is one line naming the features this kernel has and lacks, for
// test logs and the forwarder's start-up log.
func Summary() string {
	var have, lack []string
	for _, r := range Report() {
		switch r.Status {
		case Yes:
			have = append(have, string(r.Name))
		case Unknown:
			lack = append(lack, string(r.Name)+"?")
		default:
			lack = append(lack, string(r.Name)+"("+string(r.Status)+")")
		}
	}
	slices.Sort(have)
	s := "kernel features: have " + strings.Join(have, " ")
	if len(lack) > 0 {
		s += "; missing " + strings.Join(lack, " ")
	}
	return s
}

// TB is the part of testing.TB that Require needs.
type TB interface {
	Helper()
	Skipf(format string, args ...any)
	Fatalf(format string, args ...any)
}

// Require skips t, naming the features, unless the kernel has all of fs
// (or, with JUNCTION_REQUIRE_FEATURES=1, fails it).
func Require(t TB, fs ...Feature) {
	t.Helper()
	var miss []string
	for _, f := range fs {
		if err := Have(f); err != nil {
			miss = append(miss, err.Error())
		}
	}
	if len(miss) == 0 {
		return
	}
	if os.Getenv(EnvRequire) == "1" {
		t.Fatalf("needs kernel features this kernel lacks (%s=1 makes that a failure): %s", EnvRequire, strings.Join(miss, "; "))
		return
	}
	t.Skipf("needs kernel features this kernel lacks: %s", strings.Join(miss, "; "))
}

// probes are the package's own probes, by feature.
var probes = map[Feature]func() error{
	AFXDP:          probeAFXDP,
	XDPProgram:     func() error { return features.HaveProgramType(ebpf.XDP) },
	XSKMap:         func() error { return features.HaveMapType(ebpf.XSKMap) },
	XDPLink:        probeXDPLink,
	XDPAdjustMeta:  func() error { return features.HaveProgramHelper(ebpf.XDP, asm.FnXdpAdjustMeta) },
	XDPGetBuffLen:  func() error { return features.HaveProgramHelper(ebpf.XDP, asm.FnXdpGetBuffLen) },
	XDPRedirectMap: func() error { return features.HaveProgramHelper(ebpf.XDP, asm.FnRedirectMap) },
	DevmapHash:     func() error { return features.HaveMapType(ebpf.DevMapHash) },
	LPMTrie:        func() error { return features.HaveMapType(ebpf.LPMTrie) },
	LPMTrieBatch:   probeLPMTrieBatch,
	PerCPUArray:    func() error { return features.HaveMapType(ebpf.PerCPUArray) },
	MmapableArray:  func() error { return features.HaveMapFlag(features.BPF_F_MMAPABLE) },
	TCX:            probeTCX,
	RedirectPeer:   func() error { return features.HaveProgramHelper(ebpf.SchedCLS, asm.FnRedirectPeer) },
	RawTracepoint:  func() error { return features.HaveProgramType(ebpf.RawTracepoint) },
}

func probeAFXDP() error {
	fd, err := unix.Socket(unix.AF_XDP, unix.SOCK_RAW|unix.SOCK_CLOEXEC, 0)
	if errors.Is(err, unix.EAFNOSUPPORT) {
		return fmt.Errorf("socket(AF_XDP): %w: %w", err, ebpf.ErrNotSupported)
	}
	if err != nil {
		return fmt.Errorf("socket(AF_XDP): %w", err)
	}
	unix.Close(fd)
	return nil
}

// noIfindex is an interface index no device has: attaching to it fails
// with ENODEV where the kernel knows the attach type, and with EINVAL
// where it does not.
const noIfindex = 0x7fffffff

func returnProgram(t ebpf.ProgramType, at ebpf.AttachType, ret int32) (*ebpf.Program, error) {
	return ebpf.NewProgram(&ebpf.ProgramSpec{Type: t, AttachType: at, License: "GPL",
		Instructions: asm.Instructions{asm.Mov.Imm(asm.R0, ret), asm.Return()}})
}

// probeLPMTrieBatch puts one prefix into a small LPM trie with a batch
// update: the generic batch operations (Linux 5.6) reached the LPM trie
// later than the hash and array maps, so the map type's own answer is
// what counts.
func probeLPMTrieBatch() error {
	if err := features.HaveMapType(ebpf.LPMTrie); err != nil {
		return err
	}
	m, err := ebpf.NewMap(&ebpf.MapSpec{Type: ebpf.LPMTrie, KeySize: 8, ValueSize: 4, MaxEntries: 1, Flags: unix.BPF_F_NO_PREALLOC})
	if err != nil {
		return err
	}
	defer m.Close()
	// One key: a prefix length of 32 (host order) and address 0.
	key := make([]byte, 8)
	binary.NativeEndian.PutUint32(key, 32)
	_, err = m.BatchUpdate([][8]byte{[8]byte(key)}, []uint32{1}, nil)
	if err != nil && (errors.Is(err, ebpf.ErrNotSupported) || errors.Is(err, unix.EINVAL)) {
		return fmt.Errorf("%w: batch update of an LPM trie: %v", ebpf.ErrNotSupported, err)
	}
	return err
}

func probeTCX() error {
	p, err := returnProgram(ebpf.SchedCLS, ebpf.AttachNone, 0)
	if err != nil {
		return fmt.Errorf("loading a TC program: %w", err)
	}
	defer p.Close()
	l, err := link.AttachTCX(link.TCXOptions{Interface: noIfindex, Program: p, Attach: ebpf.AttachTCXIngress})
	if err == nil {
		l.Close()
		return nil
	}
	if errors.Is(err, ebpf.ErrNotSupported) {
		return err
	}
	if errors.Is(err, unix.ENODEV) {
		return nil
	}
	return err
}

// probeXDPLink asks for a BPF link attaching a program in driver mode to
// the loopback device, which every namespace has and which has no native
// XDP: a kernel with XDP links refuses it with EOPNOTSUPP, attaching
// nothing; one without them refuses the link type with EINVAL.
func probeXDPLink() error {
	p, err := returnProgram(ebpf.XDP, ebpf.AttachXDP, 2)
	if err != nil {
		return fmt.Errorf("loading an XDP program: %w", err)
	}
	defer p.Close()
	l, err := link.AttachXDP(link.XDPOptions{Program: p, Interface: 1, Flags: link.XDPDriverMode})
	if err == nil {
		l.Close()
		return nil
	}
	switch {
	case errors.Is(err, unix.EOPNOTSUPP):
		return nil
	case errors.Is(err, ebpf.ErrNotSupported), errors.Is(err, unix.EINVAL):
		return fmt.Errorf("%w: %w", err, ebpf.ErrNotSupported)
	}
	return err
}
