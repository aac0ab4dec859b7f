package fastpath

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"net/netip"
	"sync/atomic"
	"unsafe"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"

	"github.com/junction-dataplane/junction/packet"
)

// ErrFlowsFull is SetFlow's error when every counter slot is in use;
// ErrFlowExists AddFlow's when the key is installed already.
var (
	ErrFlowsFull  = errors.New("fastpath: flow table full")
	ErrFlowExists = errors.New("fastpath: flow already installed")
)

// The IPv4 flow key and value (struct flow_key and struct flow in
// bpf/fastpath.h) are laid out here by hand, unlike every other map's
// (bpf2go generates those): each holds its ports in an anonymous union
// of an anonymous struct {sport; dport} and the 32-bit word ports (one
// store writes both), and bpf2go's Go formatter takes a union's first
// member, here an anonymous struct, which it cannot declare. TestLayouts
// checks these offsets against the object's BTF.
const (
	// fp_flows (BPF_MAP_TYPE_HASH) key: u32 ifindex (input); u8 src[4];
	// u8 dst[4]; u8 sport[2]; u8 dport[2] (wire order; ICMP echo: the
	// identifier twice); u32 proto.
	flowKeySize       = 20
	flowKeyOffIfindex = 0
	flowKeyOffSrc     = 4
	flowKeyOffDst     = 8
	flowKeyOffSport   = 12
	flowKeyOffDport   = 14
	flowKeyOffProto   = 16
	// fp_flows value: u32 ifindex (output); u32 slot (flow_stats index);
	// u8 eth_dst[6]; u8 eth_src[6]; u8 src[4]; u8 dst[4]; u8 sport[2];
	// u8 dport[2] (the rewritten tuple, wire order; ICMP: the new
	// identifier in sport); u8 ip_delta[2]; u8 l4_delta[2] (RFC 1624
	// checksum deltas, wire order, see packet.FlowDeltas); u8 ttl_dec;
	// u8 icmp_type; u16 mtu (the output's: longer datagrams take the
	// slow path; 0 = no limit); u32 gen (the generation the
	// entry was installed under: it applies only while the tables'
	// generation is the same).
	flowValueSize   = 44
	flowOffIfindex  = 0
	flowOffSlot     = 4
	flowOffEth      = 8 // eth_dst then eth_src, as in the Ethernet header
	flowOffSrc      = 20
	flowOffDst      = 24
	flowOffSport    = 28
	flowOffDport    = 30
	flowOffIPDelta  = 32
	flowOffL4Delta  = 34
	flowOffTTLDec   = 36
	flowOffICMPType = 37
	flowOffMTU      = 38
	flowOffGen      = 40
)

// FlowKey is one direction of a flow as it arrives. ICMP echo: Sport and
// Dport are both the identifier.
type FlowKey struct {
	Ifindex      int   // input interface
	Proto        uint8 // 6 TCP, 17 UDP, 1 ICMP (echo only)
	Src, Dst     netip.Addr
	Sport, Dport uint16
}

// FlowAction is the rewrite and output of that direction.
type FlowAction struct {
	Ifindex        int // output interface (bpf_redirect)
	EthDst, EthSrc [6]byte
	Src, Dst       netip.Addr // addresses after the rewrite
	Sport, Dport   uint16     // ports after the rewrite (ICMP echo: the identifier is Sport; Dport ignored)
	TTLDec         uint8      // how much the TTL drops (>= 0)
	// ICMPType, ICMP only: the echo type this direction carries (8
	// request or 0 reply); a packet of the other type takes the slow
	// path.
	ICMPType uint8
	// MTU: the output's MTU; a longer datagram takes the slow path
	// (whose CheckMTU answers it). IPv6: required, >= 1280; IPv4: 0 sets
	// no limit. IPv6 flows are not translated: Src, Dst, Sport and
	// Dport are the key's or zero, TTLDec is the hop limit's decrement.
	MTU int
	// Gen is the generation the entry belongs to: the program applies it
	// only while SetFlowGeneration's value is the same, so that one call
	// retires every entry of an older generation at once.
	Gen uint32
}

// flowKey is a FlowKey as the map stores it.
type flowKey [flowKeySize]byte

// newFlowMaps creates the flow hash map and its counter array, and maps
// the array into the process.
func (t *Tables) newFlowMaps(maxFlows int) error {
	var err error
	// Preallocated (the default): an update never fails for memory,
	// and the free list below keeps the entries within maxFlows.
	if t.flows, err = newMap(&ebpf.MapSpec{
		Name:       "fp_flows",
		Type:       ebpf.Hash,
		KeySize:    flowKeySize,
		ValueSize:  flowValueSize,
		MaxEntries: uint32(maxFlows),
	}); err != nil {
		return fmt.Errorf("fastpath: creating the flow map: %w", err)
	}
	if t.flowStats, err = newMap(&ebpf.MapSpec{
		Name:       "fp_flow_stats",
		Type:       ebpf.Array,
		KeySize:    4,
		ValueSize:  uint32(flowStatSize),
		MaxEntries: uint32(maxFlows),
		Flags:      unix.BPF_F_MMAPABLE,
	}); err != nil {
		return fmt.Errorf("fastpath: creating the flow counter map: %w", err)
	}
	page := unix.Getpagesize()
	size := (maxFlows*flowStatSize + page - 1) / page * page
	if t.mem, err = unix.Mmap(t.flowStats.FD(), 0, size, unix.PROT_READ, unix.MAP_SHARED); err != nil {
		return fmt.Errorf("fastpath: mapping the flow counters: %w", err)
	}
	// One u32, read by the program through a direct value pointer
	// (BPF_PSEUDO_MAP_VALUE): a load, not a helper call.
	if t.flowGen, err = newMap(&ebpf.MapSpec{Name: "fp_flow_gen", Type: ebpf.Array, KeySize: 4, ValueSize: sizeOf[fastpathFlowGen](), MaxEntries: 1}); err != nil {
		return fmt.Errorf("fastpath: creating the flow generation map: %w", err)
	}
	t.free = make([]uint32, maxFlows)
	for i := range t.free {
		t.free[i] = uint32(maxFlows - 1 - i) // slot 0 first
	}
	t.slots = make(map[flowKey]uint32)
	t.maxFlows = maxFlows
	return nil
}

func encodeFlowKey(k FlowKey) (flowKey, error) {
	var b flowKey
	if k.Ifindex <= 0 || k.Ifindex > math.MaxUint32 {
		return b, fmt.Errorf("fastpath: flow: bad input ifindex %d", k.Ifindex)
	}
	switch k.Proto {
	case protoTCP, protoUDP:
	case protoICMP:
		if k.Sport != k.Dport {
			return b, fmt.Errorf("fastpath: ICMP flow: Sport %d and Dport %d must both be the echo identifier", k.Sport, k.Dport)
		}
	default:
		return b, fmt.Errorf("fastpath: flow: protocol %d (only TCP, UDP and ICMP echo)", k.Proto)
	}
	src, ok1 := ipv4(k.Src)
	dst, ok2 := ipv4(k.Dst)
	if !ok1 || !ok2 {
		return b, fmt.Errorf("fastpath: flow %v -> %v: only IPv4", k.Src, k.Dst)
	}
	binary.NativeEndian.PutUint32(b[flowKeyOffIfindex:], uint32(k.Ifindex))
	copy(b[flowKeyOffSrc:], src[:])
	copy(b[flowKeyOffDst:], dst[:])
	binary.BigEndian.PutUint16(b[flowKeyOffSport:], k.Sport)
	binary.BigEndian.PutUint16(b[flowKeyOffDport:], k.Dport)
	binary.NativeEndian.PutUint32(b[flowKeyOffProto:], uint32(k.Proto))
	return b, nil
}

// encodeFlowValue is the map value for k (already valid) and a, without
// the slot.
func encodeFlowValue(k FlowKey, a FlowAction) ([]byte, error) {
	if a.Ifindex <= 0 || a.Ifindex > math.MaxUint32 {
		return nil, fmt.Errorf("fastpath: flow: bad output ifindex %d", a.Ifindex)
	}
	src, ok1 := ipv4(a.Src)
	dst, ok2 := ipv4(a.Dst)
	if !ok1 || !ok2 {
		return nil, fmt.Errorf("fastpath: flow rewrite to %v -> %v: only IPv4", a.Src, a.Dst)
	}
	v := make([]byte, flowValueSize)
	binary.NativeEndian.PutUint32(v[flowOffIfindex:], uint32(a.Ifindex))
	copy(v[flowOffEth:], a.EthDst[:])
	copy(v[flowOffEth+6:], a.EthSrc[:])
	copy(v[flowOffSrc:], src[:])
	copy(v[flowOffDst:], dst[:])
	binary.BigEndian.PutUint16(v[flowOffSport:], a.Sport)
	if k.Proto == protoICMP {
		if a.ICMPType != icmpEchoRequest && a.ICMPType != icmpEchoReply {
			return nil, fmt.Errorf("fastpath: ICMP flow: type %d (only echo request 8 and reply 0)", a.ICMPType)
		}
		v[flowOffICMPType] = a.ICMPType
	} else {
		binary.BigEndian.PutUint16(v[flowOffDport:], a.Dport)
	}
	v[flowOffTTLDec] = a.TTLDec
	if a.MTU < 0 || a.MTU > math.MaxUint16 {
		return nil, fmt.Errorf("fastpath: flow: MTU %d out of range 0..65535", a.MTU)
	}
	binary.NativeEndian.PutUint16(v[flowOffMTU:], uint16(a.MTU))
	binary.NativeEndian.PutUint32(v[flowOffGen:], a.Gen)
	ks, kd := k.Src.Unmap().As4(), k.Dst.Unmap().As4()
	ip, l4 := packet.FlowDeltas(k.Proto, binary.BigEndian.Uint32(ks[:]), binary.BigEndian.Uint32(kd[:]),
		binary.BigEndian.Uint32(src[:]), binary.BigEndian.Uint32(dst[:]), k.Sport, k.Dport, a.Sport, a.Dport, a.TTLDec)
	binary.BigEndian.PutUint16(v[flowOffIPDelta:], ip)
	binary.BigEndian.PutUint16(v[flowOffL4Delta:], l4)
	return v, nil
}

// SetFlow installs (or replaces) the fast path for one flow direction:
// packets arriving on k.Ifindex with k's tuple leave on a.Ifindex,
// rewritten as a says. It returns the counter slot that FlowCounters
// reads, whose counters start at zero.
//
// Replacing an installed key keeps its slot (the same number is
// returned) and zeroes its counters, so a replacement never uses up a
// slot, even when the table is full. A new key takes a free slot, or
// fails with ErrFlowsFull when all maxFlows are in use.
func (t *Tables) SetFlow(k FlowKey, a FlowAction) (slot int, err error) {
	return t.setFlow(k, a, true)
}

// AddFlow is SetFlow for a key that must not be installed yet: it fails
// with ErrFlowExists, leaving the entry and its counters alone, when it
// is (another owner's flow, e.g. a flow that reached two workers).
func (t *Tables) AddFlow(k FlowKey, a FlowAction) (slot int, err error) {
	return t.setFlow(k, a, false)
}

func (t *Tables) setFlow(k FlowKey, a FlowAction, replaceOK bool) (slot int, err error) {
	if isFlow6(k) {
		return t.setFlow6(k, a, replaceOK)
	}
	key, err := encodeFlowKey(k)
	if err != nil {
		return -1, err
	}
	v, err := encodeFlowValue(k, a)
	if err != nil {
		return -1, err
	}
	return installFlow(t, t.slots, key, replaceOK, func(slot uint32) error {
		binary.NativeEndian.PutUint32(v[flowOffSlot:], slot)
		return t.flows.Put(key[:], v)
	})
}

// installFlow is setFlow's bookkeeping, the same for both families
// (slots is the family's, the free slots and the generation are shared),
// under flowMu: key keeps its slot, or a new key takes a free one, whose
// counters are zeroed before put writes the entry carrying slot.
func installFlow[K comparable](t *Tables, slots map[K]uint32, key K, replaceOK bool, put func(slot uint32) error) (slot int, err error) {
	t.flowMu.Lock()
	defer t.flowMu.Unlock()
	s, replace := slots[key]
	if replace && !replaceOK {
		return -1, ErrFlowExists
	}
	if !replace {
		if len(t.free) == 0 {
			return -1, ErrFlowsFull
		}
		s = t.free[len(t.free)-1]
	}
	// Zero the counters before the program can count into them for
	// this entry (a replaced entry counts into the same slot until
	// the update).
	if err := t.flowStats.Put(s, &fastpathFlowStats{}); err != nil {
		return -1, fmt.Errorf("fastpath: zeroing flow counters: %w", err)
	}
	if err := put(s); err != nil {
		return -1, fmt.Errorf("fastpath: installing a flow: %w", err)
	}
	if !replace {
		t.free = t.free[:len(t.free)-1]
		slots[key] = s
		if t.flowCount() == 1 {
			if err := t.putFlowGen(); err != nil {
				return int(s), err
			}
		}
	}
	return int(s), nil
}

// DeleteFlow removes the flow direction k, which SetFlow installed at
// slot, and frees the slot. A key that is not installed is not an error
// and frees nothing (so a repeated DeleteFlow cannot free a slot that
// has since gone to another flow); a slot that is not k's is an error,
// and nothing is removed.
//
// A packet that the program is processing while the entry goes may
// still be counted in the slot; SetFlow zeroes a slot when it hands it
// out again.
func (t *Tables) DeleteFlow(k FlowKey, slot int) error {
	if isFlow6(k) {
		return t.deleteFlow6(k, slot)
	}
	key, err := encodeFlowKey(k)
	if err != nil {
		return err
	}
	return removeFlow(t, t.slots, key, slot, func() error { return t.flows.Delete(key[:]) })
}

// removeFlow is DeleteFlow's bookkeeping, the same for both families,
// under flowMu: del removes the entry of key, at slot, whose slot is
// then free again.
func removeFlow[K comparable](t *Tables, slots map[K]uint32, key K, slot int, del func() error) error {
	t.flowMu.Lock()
	defer t.flowMu.Unlock()
	s, ok := slots[key]
	if !ok {
		return nil
	}
	if slot != int(s) {
		return fmt.Errorf("fastpath: DeleteFlow: the flow is at slot %d, not %d", s, slot)
	}
	if err := del(); err != nil && !errors.Is(err, ebpf.ErrKeyNotExist) {
		return err
	}
	delete(slots, key)
	t.free = append(t.free, s)
	if t.flowCount() == 0 {
		return t.putFlowGen()
	}
	return nil
}

// FlowCounters returns what the kernel forwarded for the flow at slot
// since SetFlow handed the slot out: packets, and bytes counted as each
// packet's IPv4 total length (as FastTrack counts them), not its frame
// length. It makes no system call: it reads the counter array mapped
// into the process, with atomic 64-bit loads (the two are read one after
// the other, not as one snapshot). A slot out of range, or any slot
// after Close, reads zeros.
func (t *Tables) FlowCounters(slot int) (packets, bytes uint64) {
	t.memMu.RLock()
	defer t.memMu.RUnlock()
	if slot < 0 || slot >= t.maxFlows || t.mem == nil {
		return 0, 0
	}
	// The mapping is page-aligned and values are 16 bytes apart: both
	// words are 8-byte aligned.
	s := (*fastpathFlowStats)(unsafe.Pointer(&t.mem[slot*flowStatSize]))
	return atomic.LoadUint64(&s.Packets), atomic.LoadUint64(&s.Bytes)
}

// SetFlowGeneration makes g the generation flow entries must carry to
// apply: entries installed under another one become misses at once (the
// caller deletes them at its own pace).
func (t *Tables) SetFlowGeneration(g uint32) error {
	t.flowMu.Lock()
	defer t.flowMu.Unlock()
	t.gen = g
	return t.putFlowGen()
}

// putFlowGen writes fp_flow_gen: the generation, and whether any flow is
// installed (the program skips the flow lookup while none is: a router
// that offloads no flow pays nothing for the flow path). Under flowMu.
func (t *Tables) putFlowGen() error {
	v := fastpathFlowGen{Gen: t.gen, Count: uint32(t.flowCount())}
	if err := t.flowGen.Put(uint32(0), &v); err != nil {
		return fmt.Errorf("fastpath: writing the flow generation: %w", err)
	}
	return nil
}
