package fastpath

import (
	"errors"
	"fmt"
	"math"
	"net/netip"

	"github.com/cilium/ebpf"
)

// Policing of traffic for the router (doc.go, "Traffic for the router";
// bpf/fastpath.c, local_class and police_pass). fp_local
// (BPF_MAP_TYPE_HASH, shared): key fastpathLocalKey (IPv4 as
// IPv4-mapped IPv6), value u32, unused. fp_police
// (BPF_MAP_TYPE_PERCPU_ARRAY, one entry per class): value fastpathPolice
// (GCRA's theoretical arrival time, CLOCK_MONOTONIC ns; passed; dropped).

// maxLocals is the room for the router's own addresses.
const maxLocals = 1024

// PoliceClasses are the classes of traffic for the router the program
// polices, each with its own bucket, in the order of Counters.Policed:
// ICMP and ICMPv6 echo requests, TCP SYNs (without ACK), UDP, and
// everything else but ARP and IPv6 neighbour discovery (which are never
// policed).
var PoliceClasses = [...]string{"echo", "syn", "udp", "other"}

// Police is how a program (the XDP one, NewPolicedProgram, or the TC
// one, NewPolicedTCProgram) polices the frames it would hand to the
// slow path whose destination is one of the router's addresses
// (Tables.SetLocal): each class (PoliceClasses) gets Rate frames a
// second with bursts of Burst frames, on each CPU; beyond that the
// frames are dropped in the kernel and counted (Counters.Policed).
// Rate 0: no policing (the program skips it, costing nothing).
type Police struct {
	Rate  uint64 // frames a second, up to 1e9
	Burst uint64 // frames, >= 1
}

// constants returns the program's police_interval and police_burst.
func (p Police) constants() (interval, burst uint64, err error) {
	if p.Rate == 0 {
		return 0, 0, nil
	}
	if p.Rate > 1e9 || p.Burst < 1 || p.Burst > math.MaxUint32 {
		return 0, 0, fmt.Errorf("fastpath: police rate %d/s (1..1e9), burst %d (1..2^32-1)", p.Rate, p.Burst)
	}
	interval = 1e9 / p.Rate // rounded down: at most 1 ns a frame generous
	return interval, (p.Burst - 1) * interval, nil
}

// localKey is addr's fp_local key.
func localKey(a netip.Addr) (*fastpathLocalKey, error) {
	if !a.IsValid() || a.Is4In6() {
		return nil, fmt.Errorf("fastpath: %v: an IPv4 or IPv6 address (not IPv4-mapped)", a)
	}
	return &fastpathLocalKey{Addr: wire128(a.As16())}, nil // IPv4: ::ffff:a.b.c.d
}

// SetLocal marks a as one of the router's own addresses, whose traffic
// the programs police (Police).
func (t *Tables) SetLocal(a netip.Addr) error {
	k, err := localKey(a)
	if err != nil {
		return err
	}
	if err := t.local.Put(k, uint32(0)); err != nil {
		return fmt.Errorf("fastpath: adding local address %v: %w", a, err)
	}
	return nil
}

// DeleteLocal removes a from the router's own addresses; absent is not
// an error.
func (t *Tables) DeleteLocal(a netip.Addr) error {
	k, err := localKey(a)
	if err != nil {
		return err
	}
	if err := t.local.Delete(k); err != nil && !errors.Is(err, ebpf.ErrKeyNotExist) {
		return fmt.Errorf("fastpath: removing local address %v: %w", a, err)
	}
	return nil
}

// newLocalMap creates fp_local.
func (t *Tables) newLocalMap() (err error) {
	t.local, err = newMap(&ebpf.MapSpec{Name: "fp_local", Type: ebpf.Hash, KeySize: sizeOf[fastpathLocalKey](), ValueSize: 4, MaxEntries: maxLocals})
	if err != nil {
		return fmt.Errorf("fastpath: creating the local address map: %w", err)
	}
	return nil
}

// newPoliceMap creates p's fp_police.
func (p *Program) newPoliceMap() (err error) {
	p.police, err = newMap(&ebpf.MapSpec{Name: "fp_police", Type: ebpf.PerCPUArray, KeySize: 4, ValueSize: sizeOf[fastpathPolice](), MaxEntries: uint32(len(PoliceClasses))})
	if err != nil {
		return fmt.Errorf("fastpath: creating the police map: %w", err)
	}
	return nil
}

// readPolice adds each class's drops, summed over CPUs, to c.
func (p *Program) readPolice(c *Counters) error {
	if p.police == nil {
		return nil
	}
	var per []fastpathPolice
	for i := range PoliceClasses {
		if err := p.police.Lookup(uint32(i), &per); err != nil {
			return fmt.Errorf("fastpath: reading police counters: %w", err)
		}
		for _, v := range per {
			c.Policed[i] += v.Dropped
			c.LocalPassed += v.Passed
		}
	}
	return nil
}
