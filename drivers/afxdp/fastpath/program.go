package fastpath

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/asavie/xdp"
	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
)

// ProgramName is the name the kernel shows for the fast path's program
// (bpftool prog, ip link): the driver can recognise a leftover of ours
// by it.
const ProgramName = "junction_fp"

// fnXdpGetBuffLen is bpf_xdp_get_buff_len (Linux 5.18), newer than the
// helper list of cilium/ebpf v0.4.0.
const fnXdpGetBuffLen = asm.BuiltinFunc(188)

// XDP return codes and frame offsets the program uses.
const (
	xdpDrop = 1
	xdpPass = 2

	ethLen    = 14
	minLen    = ethLen + 20 // Ethernet + IPv4 without options
	offType   = 12
	offVerIHL = ethLen + 0
	offTotLen = ethLen + 2
	offFrag   = ethLen + 6 // flags and fragment offset
	offTTL    = ethLen + 8
	offProto  = ethLen + 9
	offCsum   = ethLen + 10
	offSrc    = ethLen + 12
	offDst    = ethLen + 16
	offL4     = ethLen + 20 // the L4 header, when there are no options

	ctxData    = 0  // struct xdp_md: u32 data
	ctxDataEnd = 4  // u32 data_end
	ctxIfindex = 12 // u32 ingress_ifindex
	ctxQueue   = 16 // u32 rx_queue_index

	// Stack slots (offsets from R10).
	stRouteKey = -8  // u32 prefixlen, u8 addr[4]; addr at -4
	stNeighKey = -16 // u32 ifindex, u8 ip[4]; ip at -12
	stCountKey = -20 // u32 0
	stFlowKey  = -40 // the flow key, 20 bytes
	stSlotKey  = -44 // u32 flow_stats slot
	stEgress   = -48 // u32 output ifindex, the fp_egress key on the flow path
	stFlowPtr  = -56 // the flow entry, spilled across the fp_egress lookup
)

// Counters are a Program's packet counts, summed over CPUs.
type Counters struct {
	Forwarded      uint64 // frames forwarded in the kernel
	ForwardedBytes uint64 // their bytes (whole frames, Ethernet header included)
	Slow           uint64 // frames sent to the slow path (AF_XDP socket or kernel)
	// Runs and RunNanos are the kernel's count and total time of the
	// program's runs, kept only while kernel.bpf_stats_enabled is 1:
	// RunNanos/Runs is what the fast path costs per frame.
	Runs, RunNanos uint64
}

// Program is one device's XDP program with its own XSKMAP, queue map and
// counters; the route and neighbour maps are the shared Tables'.
type Program struct {
	prog     *ebpf.Program
	xsks     *ebpf.Map
	queues   *ebpf.Map
	counters *ebpf.Map
	x        *xdp.Program
}

// NewProgram builds and loads the program for a device with queues RX
// queues (the XSKMAP's size, >= 1) and own MAC address mac.
func NewProgram(t *Tables, queues int, mac [6]byte) (*Program, error) {
	if t == nil {
		return nil, errors.New("fastpath: nil Tables")
	}
	if queues < 1 || queues > 1<<20 {
		return nil, fmt.Errorf("fastpath: bad queue count %d", queues)
	}
	p := &Program{}
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
	// bpf_xdp_get_buff_len needs Linux 5.18; older kernels get the
	// frame length by subtracting packet pointers, which the verifier
	// allows only with CAP_PERFMON (or CAP_SYS_ADMIN).
	p.prog, err = load(program(t, p, mac, true))
	if err != nil {
		var err2 error
		if p.prog, err2 = load(program(t, p, mac, false)); err2 != nil {
			p.Close()
			return nil, fmt.Errorf("fastpath: loading the program: %w (without bpf_xdp_get_buff_len: %v)", err, err2)
		}
	}
	p.x = &xdp.Program{Program: p.prog, Queues: p.queues, Sockets: p.xsks}
	return p, nil
}

func load(insns asm.Instructions) (*ebpf.Program, error) {
	spec := &ebpf.ProgramSpec{Name: ProgramName, Type: ebpf.XDP, Instructions: insns, License: "GPL"}
	prog, err := ebpf.NewProgram(spec)
	if err != nil && isEPERM(err) {
		raiseMemlock()
		prog, err = ebpf.NewProgram(spec)
	}
	return prog, err
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
	var per []counterValue
	if err := p.counters.Lookup(uint32(0), &per); err != nil {
		return Counters{}, fmt.Errorf("fastpath: reading counters: %w", err)
	}
	var c Counters
	for _, v := range per {
		c.Forwarded += v.Forwarded
		c.ForwardedBytes += v.Bytes
		c.Slow += v.Slow
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

// counterValue mirrors the counter map's value (see tables.go).
type counterValue struct {
	Forwarded, Bytes, Slow uint64
}

// Close closes the program and its maps (not the Tables); idempotent.
func (p *Program) Close() error {
	// Both Close methods accept nil receivers and closed descriptors.
	return errors.Join(p.prog.Close(), p.xsks.Close(), p.queues.Close(), p.counters.Close())
}

// program returns the instructions. Registers: R6 = ctx, R7 = data,
// R8 = data_end (callee-saved, so they survive helper calls), R9 = the
// IPv4 total length on the flow path (flowPath), the neighbour entry on
// the route path, then the frame length. Any check that fails jumps to
// "slow". The program is built for the host's byte order: constants that
// are compared with packet bytes loaded as integers are made with
// binary.NativeEndian from their wire bytes.
func program(t *Tables, p *Program, mac [6]byte, haveBuffLen bool) asm.Instructions {
	ne := binary.NativeEndian
	macLo := int64(ne.Uint32(mac[0:4]))
	macHi := int32(ne.Uint16(mac[4:6]))
	etherIPv4 := int32(ne.Uint16([]byte{0x08, 0x00}))
	// RFC 1624 eqn. 3: HC' = ~(~HC + ~m + m'). Decrementing TTL, the
	// high byte of the big-endian word m = TTL<<8|protocol, makes
	// ~m + m' = -0x0100, i.e. 0xfeff in one's complement; as loaded
	// in host order the word is that value's bytes read natively.
	ttlAdjust := int32(ne.Uint16([]byte{0xfe, 0xff}))

	insns := asm.Instructions{
		asm.Mov.Reg(asm.R6, asm.R1),
		asm.LoadMem(asm.R7, asm.R6, ctxData, asm.Word),
		asm.LoadMem(asm.R8, asm.R6, ctxDataEnd, asm.Word),

		// 1. Ethernet + IPv4 header present: this check is what lets
		// the verifier accept every packet access below.
		asm.Mov.Reg(asm.R2, asm.R7),
		asm.Add.Imm(asm.R2, minLen),
		asm.JGT.Reg(asm.R2, asm.R8, "slow"),

		// 2. Addressed to us, IPv4.
		asm.LoadMem(asm.R2, asm.R7, 0, asm.Word),
		asm.LoadImm(asm.R3, macLo, asm.DWord),
		asm.JNE.Reg(asm.R2, asm.R3, "slow"),
		asm.LoadMem(asm.R2, asm.R7, 4, asm.Half),
		asm.JNE.Imm(asm.R2, macHi, "slow"),
		asm.LoadMem(asm.R2, asm.R7, offType, asm.Half),
		asm.JNE.Imm(asm.R2, etherIPv4, "slow"),

		// 3. Version 4, IHL 5: options (IHL > 5) take the slow path.
		asm.LoadMem(asm.R2, asm.R7, offVerIHL, asm.Byte),
		asm.JNE.Imm(asm.R2, 0x45, "slow"),
	}

	// The flows: a hit is rewritten and redirected there, a miss
	// continues at "route".
	insns = append(insns, flowPath(t)...)

	insns = append(insns,
		// 4. 20 <= total length and the whole datagram in the frame.
		asm.LoadMem(asm.R2, asm.R7, offTotLen, asm.Half).WithSymbol("route"),
		asm.HostTo(asm.BE, asm.R2, asm.Half),
		asm.And.Imm(asm.R2, 0xffff), // bounds the value for the verifier
		asm.JLT.Imm(asm.R2, 20, "slow"),
		asm.Mov.Reg(asm.R3, asm.R7),
		asm.Add.Reg(asm.R3, asm.R2),
		asm.Add.Imm(asm.R3, ethLen),
		asm.JGT.Reg(asm.R3, asm.R8, "slow"),

		// 5. Header checksum: the one's-complement sum of the header,
		// checksum included, must be 0xffff. The sum does not depend
		// on byte order or on adding 32-bit instead of 16-bit words
		// (2^16 = 1 mod 0xffff), so five native 32-bit loads do, and
		// three folds bring the (< 2^35) sum to 16 bits.
		asm.LoadMem(asm.R2, asm.R7, ethLen+0, asm.Word),
		asm.LoadMem(asm.R3, asm.R7, ethLen+4, asm.Word),
		asm.Add.Reg(asm.R2, asm.R3),
		asm.LoadMem(asm.R3, asm.R7, ethLen+8, asm.Word),
		asm.Add.Reg(asm.R2, asm.R3),
		asm.LoadMem(asm.R3, asm.R7, ethLen+12, asm.Word),
		asm.Add.Reg(asm.R2, asm.R3),
		asm.LoadMem(asm.R3, asm.R7, ethLen+16, asm.Word),
		asm.Add.Reg(asm.R2, asm.R3),
	)
	for i := 0; i < 3; i++ {
		insns = append(insns,
			asm.Mov.Reg(asm.R3, asm.R2),
			asm.RSh.Imm(asm.R3, 16),
			asm.And.Imm(asm.R2, 0xffff),
			asm.Add.Reg(asm.R2, asm.R3),
		)
	}
	insns = append(insns,
		asm.JNE.Imm(asm.R2, 0xffff, "slow"),

		// 6. TTL about to expire: the slow path sends time exceeded.
		asm.LoadMem(asm.R2, asm.R7, offTTL, asm.Byte),
		asm.JLE.Imm(asm.R2, 1, "slow"),

		// 7. Martians (RFC 1812 5.3.7): source 0/8, 127/8, 224/3;
		// destination 0/8, 127/8 and 224/3 (multicast, broadcast): the
		// graph's CheckIPHeader counts and drops them.
		asm.LoadMem(asm.R2, asm.R7, offSrc, asm.Byte),
		asm.JEq.Imm(asm.R2, 0, "slow"),
		asm.JEq.Imm(asm.R2, 127, "slow"),
		asm.JGE.Imm(asm.R2, 224, "slow"),
		asm.LoadMem(asm.R2, asm.R7, offDst, asm.Byte),
		asm.JEq.Imm(asm.R2, 0, "slow"),
		asm.JEq.Imm(asm.R2, 127, "slow"),
		asm.JGE.Imm(asm.R2, 224, "slow"),

		// 8. Route: longest prefix match of the destination.
		asm.StoreImm(asm.R10, stRouteKey, 32, asm.Word),
		asm.LoadMem(asm.R2, asm.R7, offDst, asm.Word),
		asm.StoreMem(asm.R10, stRouteKey+4, asm.R2, asm.Word),
		asm.LoadMapPtr(asm.R1, t.routes.FD()),
		asm.Mov.Reg(asm.R2, asm.R10),
		asm.Add.Imm(asm.R2, stRouteKey),
		asm.FnMapLookupElem.Call(),
		asm.JEq.Imm(asm.R0, 0, "slow"),
		asm.LoadMem(asm.R2, asm.R0, routeOffFlags, asm.Word),
		asm.And.Imm(asm.R2, routeFlagLocal),
		asm.JNE.Imm(asm.R2, 0, "slow"),

		// 10 (checked early, it is cheap). Out the way it came in: the
		// slow path decides (redirects, ICMP).
		asm.LoadMem(asm.R2, asm.R0, routeOffIfindex, asm.Word),
		asm.LoadMem(asm.R3, asm.R6, ctxIfindex, asm.Word),
		asm.JEq.Reg(asm.R2, asm.R3, "slow"),

		// 9. Neighbour of the next hop (gateway, or the destination).
		asm.StoreMem(asm.R10, stNeighKey, asm.R2, asm.Word),
		asm.LoadMem(asm.R3, asm.R0, routeOffGateway, asm.Word),
		asm.JNE.Imm(asm.R3, 0, "nexthop"),
		asm.LoadMem(asm.R3, asm.R10, stRouteKey+4, asm.Word),
		asm.StoreMem(asm.R10, stNeighKey+4, asm.R3, asm.Word).WithSymbol("nexthop"),
		asm.LoadMapPtr(asm.R1, t.neighbors.FD()),
		asm.Mov.Reg(asm.R2, asm.R10),
		asm.Add.Imm(asm.R2, stNeighKey),
		asm.FnMapLookupElem.Call(),
		asm.JEq.Imm(asm.R0, 0, "slow"),
		asm.Mov.Reg(asm.R9, asm.R0),
		asm.FnKtimeGetNs.Call(),
		asm.LoadMem(asm.R2, asm.R9, neighOffExpires, asm.DWord),
		asm.JGE.Reg(asm.R0, asm.R2, "slow"),
	)
	// The output must be one the kernel has not refused (egress.go).
	insns = append(insns, t.egressCheck(stNeighKey)...)
	insns = append(insns,

		// 11. Forward. TTL - 1 and the checksum patched to match.
		asm.LoadMem(asm.R2, asm.R7, offTTL, asm.Byte),
		asm.Sub.Imm(asm.R2, 1),
		asm.StoreMem(asm.R7, offTTL, asm.R2, asm.Byte),
		asm.LoadMem(asm.R2, asm.R7, offCsum, asm.Half),
		asm.Xor.Imm(asm.R2, 0xffff), // ~HC
		asm.Add.Imm(asm.R2, ttlAdjust),
		asm.Mov.Reg(asm.R3, asm.R2), // end-around carry: at most 0x1fffd, one fold
		asm.RSh.Imm(asm.R3, 16),
		asm.And.Imm(asm.R2, 0xffff),
		asm.Add.Reg(asm.R2, asm.R3),
		asm.Xor.Imm(asm.R2, 0xffff), // ~(...)
		asm.StoreMem(asm.R7, offCsum, asm.R2, asm.Half),

		// MACs from the neighbour entry (dst then src, 12 bytes, the
		// same order as in the Ethernet header).
		asm.LoadMem(asm.R2, asm.R9, 0, asm.Word),
		asm.StoreMem(asm.R7, 0, asm.R2, asm.Word),
		asm.LoadMem(asm.R2, asm.R9, 4, asm.Half),
		asm.StoreMem(asm.R7, 4, asm.R2, asm.Half),
		asm.LoadMem(asm.R2, asm.R9, 6, asm.Half),
		asm.StoreMem(asm.R7, 6, asm.R2, asm.Half),
		asm.LoadMem(asm.R2, asm.R9, 8, asm.Word),
		asm.StoreMem(asm.R7, 8, asm.R2, asm.Word),
	)

	// R9 = frame length. The flow path joins here ("fwdcount") with
	// the output ifindex at stNeighKey.
	if haveBuffLen {
		insns = append(insns,
			asm.Mov.Reg(asm.R1, asm.R6).WithSymbol("fwdcount"),
			fnXdpGetBuffLen.Call(),
			asm.Mov.Reg(asm.R9, asm.R0),
		)
	} else {
		insns = append(insns,
			asm.Mov.Reg(asm.R9, asm.R8).WithSymbol("fwdcount"),
			asm.Sub.Reg(asm.R9, asm.R7),
		)
	}

	// Per-CPU values: plain read-modify-write is enough.
	insns = append(insns, asm.StoreImm(asm.R10, stCountKey, 0, asm.Word))
	insns = append(insns, count(p.counters, stCountKey, counterOffForwarded, counterOffBytes, asm.R9, false, "redirect")...)
	insns = append(insns,
		// Through fp_devmap, not bpf_redirect: a refusal then names
		// that map's id in xdp:xdp_redirect_err, which is how the
		// watcher tells it from other programs' (egress.go). The key
		// is the ifindex; a missing entry (a device being removed)
		// returns the flags' action, XDP_DROP.
		asm.LoadMapPtr(asm.R1, t.devmap.FD()).WithSymbol("redirect"),
		asm.LoadMem(asm.R2, asm.R10, stNeighKey, asm.Word),
		asm.Mov.Imm(asm.R3, xdpDrop),
		asm.FnRedirectMap.Call(),
		asm.Return(),

		// Slow path: count, then what the AF_XDP default program does,
		// with XDP_PASS as the fallback so a queue without a socket
		// hands its frames to the kernel instead of dropping them.
		asm.StoreImm(asm.R10, stCountKey, 0, asm.Word).WithSymbol("slow"),
	)
	insns = append(insns, count(p.counters, stCountKey, counterOffSlow, noBytes, 0, false, "toxsk")...)
	insns = append(insns,
		asm.LoadMapPtr(asm.R1, p.xsks.FD()).WithSymbol("toxsk"),
		asm.LoadMem(asm.R2, asm.R6, ctxQueue, asm.Word),
		asm.Mov.Imm(asm.R3, xdpPass),
		asm.FnRedirectMap.Call(),
		asm.Return(),
	)
	return insns
}

// noBytes tells count that a counter entry has no byte count to add.
const noBytes = -1

// count emits the counting of one packet: look up the u32 key already
// stored at R10+key in m; without an entry, continue at skip; else add
// 1 to the u64 at pkts in the value and, unless bytes is noBytes,
// register n to the u64 at bytes. The caller puts skip on the
// instruction that follows. n must be callee-saved (R6-R9): the lookup
// clobbers R0-R5. atomic makes the additions atomic (asm.StoreXAdd),
// for maps that CPUs share; per-CPU maps need only plain
// read-modify-write.
func count(m *ebpf.Map, key int16, pkts, bytes int16, n asm.Register, atomic bool, skip string) asm.Instructions {
	insns := asm.Instructions{
		asm.LoadMapPtr(asm.R1, m.FD()),
		asm.Mov.Reg(asm.R2, asm.R10),
		asm.Add.Imm(asm.R2, int32(key)),
		asm.FnMapLookupElem.Call(),
		asm.JEq.Imm(asm.R0, 0, skip),
	}
	if atomic {
		insns = append(insns,
			asm.Mov.Imm(asm.R1, 1),
			xadd(asm.R0, pkts, asm.R1),
		)
		if bytes != noBytes {
			insns = append(insns, xadd(asm.R0, bytes, n))
		}
		return insns
	}
	insns = append(insns,
		asm.LoadMem(asm.R1, asm.R0, pkts, asm.DWord),
		asm.Add.Imm(asm.R1, 1),
		asm.StoreMem(asm.R0, pkts, asm.R1, asm.DWord),
	)
	if bytes != noBytes {
		insns = append(insns,
			asm.LoadMem(asm.R1, asm.R0, bytes, asm.DWord),
			asm.Add.Reg(asm.R1, n),
			asm.StoreMem(asm.R0, bytes, asm.R1, asm.DWord),
		)
	}
	return insns
}

// xadd is *(u64 *)(dst + off) += src, atomically.
func xadd(dst asm.Register, off int16, src asm.Register) asm.Instruction {
	ins := asm.StoreXAdd(dst, src, asm.DWord)
	ins.Offset = off
	return ins
}

// patchCsum emits the RFC 1624 eqn. 3 update of the checksum at frame
// offset off, HC' = ~(~HC + delta), with delta the u16 at value offset
// delta of the flow entry R0 points to (see packet.FlowDeltas). Both are loaded
// in host order: one's-complement sums do not depend on byte order (a
// byte swap multiplies by 256 modulo 0xffff, and keeps 0 and 0xffff
// apart), so this is the wire-order result. ~HC + delta <= 0x1fffe:
// one end-around carry folds it. The result is left in R2, to be stored
// at off by the caller.
func patchCsum(off, delta int16) asm.Instructions {
	return asm.Instructions{
		asm.LoadMem(asm.R2, asm.R7, off, asm.Half),
		asm.Xor.Imm(asm.R2, 0xffff),
		asm.LoadMem(asm.R3, asm.R0, delta, asm.Half),
		asm.Add.Reg(asm.R2, asm.R3),
		asm.Mov.Reg(asm.R3, asm.R2),
		asm.RSh.Imm(asm.R3, 16),
		asm.And.Imm(asm.R2, 0xffff),
		asm.Add.Reg(asm.R2, asm.R3),
		asm.Xor.Imm(asm.R2, 0xffff),
	}
}

// flowLookup emits the lookup of the key at stFlowKey: a miss, or an
// entry of another generation than fp_flow_gen's, continues at "route";
// a hit leaves the entry in R0.
func flowLookup(t *Tables) asm.Instructions {
	return asm.Instructions{
		asm.LoadMapPtr(asm.R1, t.flows.FD()),
		asm.Mov.Reg(asm.R2, asm.R10),
		asm.Add.Imm(asm.R2, stFlowKey),
		asm.FnMapLookupElem.Call(),
		asm.JEq.Imm(asm.R0, 0, "route"),
		// An entry of another generation is a miss.
		asm.LoadMapValue(asm.R2, t.flowGen.FD(), flowGenOffGen),
		asm.LoadMem(asm.R2, asm.R2, 0, asm.Word),
		asm.LoadMem(asm.R3, asm.R0, flowOffGen, asm.Word),
		asm.JNE.Reg(asm.R2, asm.R3, "route"),
	}
}

// flowTTL emits "TTL > the entry's TTL decrement and the entry's output
// enabled in fp_egress, else slow", with the entry in R0 before and
// after.
func flowTTL(t *Tables) asm.Instructions {
	insns := asm.Instructions{
		asm.LoadMem(asm.R2, asm.R7, offTTL, asm.Byte),
		asm.LoadMem(asm.R3, asm.R0, flowOffTTLDec, asm.Byte),
		asm.JLE.Reg(asm.R2, asm.R3, "slow"),
		asm.StoreMem(asm.R10, stFlowPtr, asm.R0, asm.DWord),
		asm.LoadMem(asm.R2, asm.R0, flowOffIfindex, asm.Word),
		asm.StoreMem(asm.R10, stEgress, asm.R2, asm.Word),
	}
	insns = append(insns, t.egressCheck(stEgress)...)
	return append(insns, asm.LoadMem(asm.R0, asm.R10, stFlowPtr, asm.DWord))
}

// flowPath returns the flow instructions, which run after checks 1-3
// (frame >= 34 bytes, our MAC, IPv4 without options). A frame that is
// not a candidate, or whose key is not in the flow map, continues at
// "route"; a hit whose checks fail goes to "slow", unchanged; a hit is
// rewritten as FastTrack would, counted and redirected (via "fwdcount").
//
// Each protocol has its own lookup, so that the verifier knows on each
// path which L4 bytes the frame holds. Registers: R9 = the IPv4 total
// length (the flow's byte count), R0 = the flow entry. Every check
// precedes the first write.
func flowPath(t *Tables) asm.Instructions {
	ne := binary.NativeEndian
	fragMask := int32(ne.Uint16([]byte{0x3f, 0xff})) // MF and the fragment offset
	const (
		tcpMin     = 20 + 20
		minL4      = 20 + 8 // UDP header; ICMP echo header; TCP ports
		offTCPFl   = offL4 + 13
		tcpFlags   = 0x17 // ACK, RST, SYN, FIN
		tcpACK     = 0x10
		offTCPCsum = offL4 + 16
		offUDPCsum = offL4 + 6
		offICMPCs  = offL4 + 2
		offICMPID  = offL4 + 4
	)
	insns := asm.Instructions{
		// No flow installed (a router that offloads none): no lookup.
		asm.LoadMapValue(asm.R2, t.flowGen.FD(), flowGenOffCount),
		asm.LoadMem(asm.R2, asm.R2, 0, asm.Word),
		asm.JEq.Imm(asm.R2, 0, "route"),

		// Not a fragment (DF may be set).
		asm.LoadMem(asm.R2, asm.R7, offFrag, asm.Half),
		asm.And.Imm(asm.R2, fragMask),
		asm.JNE.Imm(asm.R2, 0, "route"),

		// minL4 <= total length, the whole datagram in the frame; the
		// frame's 14 + minL4 bytes then checked again, as a constant
		// the verifier understands.
		asm.LoadMem(asm.R9, asm.R7, offTotLen, asm.Half),
		asm.HostTo(asm.BE, asm.R9, asm.Half),
		asm.And.Imm(asm.R9, 0xffff), // bounds the value for the verifier
		asm.JLT.Imm(asm.R9, minL4, "route"),
		asm.Mov.Reg(asm.R3, asm.R7),
		asm.Add.Reg(asm.R3, asm.R9),
		asm.Add.Imm(asm.R3, ethLen),
		asm.JGT.Reg(asm.R3, asm.R8, "route"),
		asm.Mov.Reg(asm.R3, asm.R7),
		asm.Add.Imm(asm.R3, ethLen+minL4),
		asm.JGT.Reg(asm.R3, asm.R8, "route"),

		// The key's ifindex and addresses.
		asm.LoadMem(asm.R2, asm.R6, ctxIfindex, asm.Word),
		asm.StoreMem(asm.R10, stFlowKey+flowKeyOffIfindex, asm.R2, asm.Word),
		asm.LoadMem(asm.R2, asm.R7, offSrc, asm.Word),
		asm.StoreMem(asm.R10, stFlowKey+flowKeyOffSrc, asm.R2, asm.Word),
		asm.LoadMem(asm.R2, asm.R7, offDst, asm.Word),
		asm.StoreMem(asm.R10, stFlowKey+flowKeyOffDst, asm.R2, asm.Word),

		asm.LoadMem(asm.R2, asm.R7, offProto, asm.Byte),
		asm.JEq.Imm(asm.R2, protoTCP, "flow_tcp"),
		asm.JEq.Imm(asm.R2, protoUDP, "flow_udp"),
		asm.JNE.Imm(asm.R2, protoICMP, "route"),

		// ICMP echo request or reply: the identifier is both ports.
		asm.LoadMem(asm.R2, asm.R7, offL4, asm.Byte),
		asm.JEq.Imm(asm.R2, icmpEchoRequest, "flow_echo"),
		asm.JNE.Imm(asm.R2, icmpEchoReply, "route"),
		asm.LoadMem(asm.R2, asm.R7, offICMPID, asm.Half).WithSymbol("flow_echo"),
		asm.StoreMem(asm.R10, stFlowKey+flowKeyOffSport, asm.R2, asm.Half),
		asm.StoreMem(asm.R10, stFlowKey+flowKeyOffDport, asm.R2, asm.Half),
		asm.StoreImm(asm.R10, stFlowKey+flowKeyOffProto, protoICMP, asm.Word),
	}
	insns = append(insns, flowLookup(t)...)
	insns = append(insns,
		// The echo type of this direction.
		asm.LoadMem(asm.R2, asm.R7, offL4, asm.Byte),
		asm.LoadMem(asm.R3, asm.R0, flowOffICMPType, asm.Byte),
		asm.JNE.Reg(asm.R2, asm.R3, "slow"),
	)
	insns = append(insns, flowTTL(t)...)
	insns = append(insns,
		asm.LoadMem(asm.R2, asm.R0, flowOffSport, asm.Half),
		asm.StoreMem(asm.R7, offICMPID, asm.R2, asm.Half),
	)
	insns = append(insns, patchCsum(offICMPCs, flowOffL4Delta)...)
	insns = append(insns,
		asm.StoreMem(asm.R7, offICMPCs, asm.R2, asm.Half),
		asm.Ja.Label("flow_ip"),

		// TCP: the whole header present, ACK without SYN, FIN or RST.
		asm.JLT.Imm(asm.R9, tcpMin, "route").WithSymbol("flow_tcp"),
		asm.Mov.Reg(asm.R3, asm.R7),
		asm.Add.Imm(asm.R3, ethLen+tcpMin),
		asm.JGT.Reg(asm.R3, asm.R8, "route"),
		asm.LoadMem(asm.R2, asm.R7, offTCPFl, asm.Byte),
		asm.And.Imm(asm.R2, tcpFlags),
		asm.JNE.Imm(asm.R2, tcpACK, "route"),
		asm.LoadMem(asm.R2, asm.R7, offL4, asm.Word), // both ports
		asm.StoreMem(asm.R10, stFlowKey+flowKeyOffSport, asm.R2, asm.Word),
		asm.StoreImm(asm.R10, stFlowKey+flowKeyOffProto, protoTCP, asm.Word),
	)
	insns = append(insns, flowLookup(t)...)
	insns = append(insns, flowTTL(t)...)
	insns = append(insns,
		asm.LoadMem(asm.R2, asm.R0, flowOffSport, asm.Word), // both ports
		asm.StoreMem(asm.R7, offL4, asm.R2, asm.Word),
	)
	insns = append(insns, patchCsum(offTCPCsum, flowOffL4Delta)...)
	insns = append(insns,
		asm.StoreMem(asm.R7, offTCPCsum, asm.R2, asm.Half),
		asm.Ja.Label("flow_ip"),

		// UDP.
		asm.LoadMem(asm.R2, asm.R7, offL4, asm.Word).WithSymbol("flow_udp"), // both ports
		asm.StoreMem(asm.R10, stFlowKey+flowKeyOffSport, asm.R2, asm.Word),
		asm.StoreImm(asm.R10, stFlowKey+flowKeyOffProto, protoUDP, asm.Word),
	)
	insns = append(insns, flowLookup(t)...)
	insns = append(insns, flowTTL(t)...)
	insns = append(insns,
		asm.LoadMem(asm.R2, asm.R0, flowOffSport, asm.Word), // both ports
		asm.StoreMem(asm.R7, offL4, asm.R2, asm.Word),
		// No checksum (0) stays so; a computed 0 is sent as 0xffff.
		asm.LoadMem(asm.R2, asm.R7, offUDPCsum, asm.Half),
		asm.JEq.Imm(asm.R2, 0, "flow_ip"),
	)
	insns = append(insns, patchCsum(offUDPCsum, flowOffL4Delta)...)
	insns = append(insns,
		asm.JNE.Imm(asm.R2, 0, "flow_udp_store"),
		asm.Mov.Imm(asm.R2, 0xffff),
		asm.StoreMem(asm.R7, offUDPCsum, asm.R2, asm.Half).WithSymbol("flow_udp_store"),

		// Every protocol: TTL, addresses, IPv4 header checksum.
		asm.LoadMem(asm.R2, asm.R7, offTTL, asm.Byte).WithSymbol("flow_ip"),
		asm.LoadMem(asm.R3, asm.R0, flowOffTTLDec, asm.Byte),
		asm.Sub.Reg(asm.R2, asm.R3),
		asm.StoreMem(asm.R7, offTTL, asm.R2, asm.Byte),
	)
	insns = append(insns, patchCsum(offCsum, flowOffIPDelta)...)
	insns = append(insns,
		asm.StoreMem(asm.R7, offCsum, asm.R2, asm.Half),
		asm.LoadMem(asm.R2, asm.R0, flowOffSrc, asm.Word),
		asm.StoreMem(asm.R7, offSrc, asm.R2, asm.Word),
		asm.LoadMem(asm.R2, asm.R0, flowOffDst, asm.Word),
		asm.StoreMem(asm.R7, offDst, asm.R2, asm.Word),

		// MACs (dst then src, as in the Ethernet header).
		asm.LoadMem(asm.R2, asm.R0, flowOffEth+0, asm.Word),
		asm.StoreMem(asm.R7, 0, asm.R2, asm.Word),
		asm.LoadMem(asm.R2, asm.R0, flowOffEth+4, asm.Half),
		asm.StoreMem(asm.R7, 4, asm.R2, asm.Half),
		asm.LoadMem(asm.R2, asm.R0, flowOffEth+6, asm.Half),
		asm.StoreMem(asm.R7, 6, asm.R2, asm.Half),
		asm.LoadMem(asm.R2, asm.R0, flowOffEth+8, asm.Word),
		asm.StoreMem(asm.R7, 8, asm.R2, asm.Word),

		// The output for "redirect", the slot for the flow's counters.
		asm.LoadMem(asm.R2, asm.R0, flowOffIfindex, asm.Word),
		asm.StoreMem(asm.R10, stNeighKey, asm.R2, asm.Word),
		asm.LoadMem(asm.R2, asm.R0, flowOffSlot, asm.Word),
		asm.StoreMem(asm.R10, stSlotKey, asm.R2, asm.Word),
	)
	// Shared by every CPU: atomic adds. Then the per-CPU counters and
	// the redirect, with the route path's instructions.
	insns = append(insns, count(t.flowStats, stSlotKey, flowStatOffPkts, flowStatOffBytes, asm.R9, true, "fwdcount")...)
	insns = append(insns, asm.Ja.Label("fwdcount"))
	return insns
}
