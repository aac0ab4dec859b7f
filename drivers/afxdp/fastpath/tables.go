package fastpath

import (
	"encoding/binary"
	"errors"
	"fmt"
	"github.com/junction-dataplane/junction/drivers/kfeature"
	"io"
	"math"
	"net/netip"
	"strings"
	"sync"
	"time"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"
)

// Map layouts. Every multi-byte integer that is not an IPv4 address is
// in host byte order (the program reads it with plain loads); IPv4
// addresses are the 4 bytes as on the wire, so the program can copy them
// from the packet without swapping.
const (
	// routes (BPF_MAP_TYPE_LPM_TRIE) key: u32 prefixlen; u8 addr[4].
	routeKeySize = 8
	// routes value: u32 ifindex; u8 gateway[4] (0.0.0.0 = directly
	// connected); u32 flags.
	routeValueSize  = 12
	routeOffIfindex = 0
	routeOffGateway = 4
	routeOffFlags   = 8
	routeFlagLocal  = 1

	// neighbors (BPF_MAP_TYPE_HASH) key: u32 ifindex; u8 ip[4].
	neighKeySize = 8
	// neighbors value: u8 dst[6]; u8 src[6]; u32 mtu (the output's:
	// longer datagrams take the slow path; 0 = no limit);
	// u64 expires (CLOCK_MONOTONIC ns; valid while now < expires).
	neighValueSize  = 24
	neighOffDst     = 0
	neighOffSrc     = 6
	neighOffMTU     = 12
	neighOffExpires = 16

	// counters (BPF_MAP_TYPE_PERCPU_ARRAY, one entry, key u32 0) value:
	// u64 forwarded; u64 forwarded_bytes; u64 slow.
	counterValueSize    = 24
	counterOffForwarded = 0
	counterOffBytes     = 8
	counterOffSlow      = 16

	// flows (BPF_MAP_TYPE_HASH) key: u32 ifindex (input); u8 src[4];
	// u8 dst[4]; u8 sport[2]; u8 dport[2] (wire order; ICMP echo: the
	// identifier twice); u32 proto.
	flowKeySize       = 20
	flowKeyOffIfindex = 0
	flowKeyOffSrc     = 4
	flowKeyOffDst     = 8
	flowKeyOffSport   = 12
	flowKeyOffDport   = 14
	flowKeyOffProto   = 16
	// flows value: u32 ifindex (output); u32 slot (flow_stats index);
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

	// fp_flow_gen (BPF_MAP_TYPE_ARRAY, one entry) value: u32 gen (the
	// current flow generation); u32 count (installed flows; 0: the
	// program skips the flow lookup).
	flowGenSize     = 8
	flowGenOffGen   = 0
	flowGenOffCount = 4

	// flow_stats (BPF_MAP_TYPE_ARRAY, BPF_F_MMAPABLE, key u32 slot)
	// value: u64 packets; u64 bytes (IPv4 total lengths).
	flowStatSize     = 16
	flowStatOffPkts  = 0
	flowStatOffBytes = 8
	maxFlowsLimit    = math.MaxUint32 / flowStatSize

	protoICMP       = 1
	protoTCP        = 6
	protoUDP        = 17
	icmpEchoReply   = 0
	icmpEchoRequest = 8
)

// Route is the fast path's view of a route.
type Route struct {
	// Local means the destination is the router itself (or must take
	// the slow path for another reason): never forwarded here.
	Local bool
	// Ifindex is the output interface: a device that runs this fast
	// path's program too, or any interface bpf_redirect reaches.
	Ifindex int
	// Gateway is the next hop; the zero netip.Addr (or 0.0.0.0) means
	// directly connected: the next hop is the destination.
	Gateway netip.Addr
}

// Tables are the maps every device's program shares: routes,
// neighbours and flows. One Tables serves any number of Programs; each
// Program holds its own kernel reference to the maps, so closing the
// Tables does not break loaded programs (it only ends updates). Tables
// are safe for concurrent use.
type Tables struct {
	routes    *ebpf.Map
	neighbors *ebpf.Map
	flows     *ebpf.Map // hash: flow key -> action
	flowStats *ebpf.Map // BPF_F_MMAPABLE array: per-slot counters
	flowGen   *ebpf.Map // array of one u32: the current flow generation (SetFlowGeneration)

	// IPv6 (tables6.go): routes, neighbours, flows.
	routes6, neighbors6, flows6 *ebpf.Map

	// local: the router's own addresses (police.go).
	local *ebpf.Map

	// Outputs (egress.go): the device map the program redirects
	// through, whether each output is enabled, and the frames the
	// kernel refused per output; the watcher that fills the last two.
	devmap     *ebpf.Map
	egress     *ebpf.Map
	egressErrs *ebpf.Map
	devmapID   uint32
	viaMu      sync.Mutex
	via        map[uint32]Via // each added output's, written by SetEgress
	watchMu    sync.Mutex
	watchProg  *ebpf.Program
	watchLink  io.Closer

	maxFlows int

	flowMu sync.Mutex
	free   []uint32            // free slots, a stack (the last freed is reused first)
	slots  map[flowKey]uint32  // installed keys and their slots
	slots6 map[flow6Key]uint32 // the same for IPv6 flows (tables6.go)
	gen    uint32              // the flow generation written to fp_flow_gen

	memMu sync.RWMutex // guards mem against Close
	mem   []byte       // flowStats mapped read-only; nil once closed
}

// NewTables creates the route, neighbour and flow maps with room for
// maxRoutes prefixes, maxNeighbors {ifindex, next hop} entries and
// maxFlows flow directions (counter slots).
func NewTables(maxRoutes, maxNeighbors, maxFlows int) (*Tables, error) {
	if maxRoutes < 1 || maxNeighbors < 1 || maxFlows < 1 || maxRoutes > math.MaxUint32 || maxNeighbors > math.MaxUint32 || maxFlows > maxFlowsLimit {
		return nil, fmt.Errorf("fastpath: table sizes must be >= 1 (got %d routes, %d neighbours, %d flows)", maxRoutes, maxNeighbors, maxFlows)
	}
	// The map types and flags the tables need (kfeature), asked first
	// so that a kernel without one gets the feature's name, not a
	// map-creation errno.
	if err := kfeature.HaveAll(kfeature.LPMTrie, kfeature.DevmapHash, kfeature.MmapableArray, kfeature.PerCPUArray); err != nil {
		return nil, fmt.Errorf("fastpath: %w", err)
	}
	routes, err := newMap(&ebpf.MapSpec{
		Name:       "fp_routes",
		Type:       ebpf.LPMTrie,
		KeySize:    routeKeySize,
		ValueSize:  routeValueSize,
		MaxEntries: uint32(maxRoutes),
		// The kernel refuses LPM tries without it.
		Flags: unix.BPF_F_NO_PREALLOC,
	})
	if err != nil {
		return nil, fmt.Errorf("fastpath: creating the route map: %w", err)
	}
	neighbors, err := newMap(&ebpf.MapSpec{
		Name:       "fp_neighbors",
		Type:       ebpf.Hash,
		KeySize:    neighKeySize,
		ValueSize:  neighValueSize,
		MaxEntries: uint32(maxNeighbors),
	})
	if err != nil {
		routes.Close()
		return nil, fmt.Errorf("fastpath: creating the neighbour map: %w", err)
	}
	t := &Tables{routes: routes, neighbors: neighbors, via: map[uint32]Via{}}
	if err := t.newFlowMaps(maxFlows); err != nil {
		t.Close()
		return nil, err
	}
	if err := t.newEgressMaps(); err != nil {
		t.Close()
		return nil, err
	}
	if err := t.newMaps6(maxRoutes, maxNeighbors, maxFlows); err != nil {
		t.Close()
		return nil, err
	}
	if err := t.newLocalMap(); err != nil {
		t.Close()
		return nil, err
	}
	return t, nil
}

func routeKey(p netip.Prefix) ([]byte, error) {
	if !p.IsValid() || !p.Addr().Is4() {
		return nil, fmt.Errorf("fastpath: %v: only IPv4 prefixes", p)
	}
	p = p.Masked()
	k := make([]byte, routeKeySize)
	binary.NativeEndian.PutUint32(k[0:], uint32(p.Bits()))
	a := p.Addr().As4()
	copy(k[4:], a[:])
	return k, nil
}

// ipv4 accepts IPv4 and IPv4-mapped IPv6 addresses.
func ipv4(ip netip.Addr) ([4]byte, bool) {
	ip = ip.Unmap()
	if !ip.Is4() {
		return [4]byte{}, false
	}
	return ip.As4(), true
}

// SetRoute adds or replaces the route for p (p is masked). IPv6
// prefixes go to the IPv6 route map; their gateway, if any, is IPv6.
func (t *Tables) SetRoute(p netip.Prefix, r Route) error {
	if p.IsValid() && is6(p.Addr()) {
		return t.setRoute6(p, r)
	}
	k, err := routeKey(p)
	if err != nil {
		return err
	}
	v := make([]byte, routeValueSize)
	if r.Local {
		binary.NativeEndian.PutUint32(v[routeOffFlags:], routeFlagLocal)
	} else {
		if r.Ifindex <= 0 || r.Ifindex > math.MaxUint32 {
			return fmt.Errorf("fastpath: route %v: bad ifindex %d", p, r.Ifindex)
		}
		binary.NativeEndian.PutUint32(v[routeOffIfindex:], uint32(r.Ifindex))
		if r.Gateway.IsValid() {
			gw, ok := ipv4(r.Gateway)
			if !ok {
				return fmt.Errorf("fastpath: route %v: gateway %v is not IPv4", p, r.Gateway)
			}
			copy(v[routeOffGateway:], gw[:])
		}
	}
	return t.routes.Put(k, v)
}

// DeleteRoute removes the route for p; a missing route is not an error.
func (t *Tables) DeleteRoute(p netip.Prefix) error {
	if p.IsValid() && is6(p.Addr()) {
		return t.deleteRoute6(p)
	}
	k, err := routeKey(p)
	if err != nil {
		return err
	}
	if err := t.routes.Delete(k); err != nil && !errors.Is(err, ebpf.ErrKeyNotExist) {
		return err
	}
	return nil
}

func neighKey(ifindex int, ip netip.Addr) ([]byte, error) {
	a, ok := ipv4(ip)
	if !ok {
		return nil, fmt.Errorf("fastpath: neighbour %v: only IPv4", ip)
	}
	if ifindex <= 0 || ifindex > math.MaxUint32 {
		return nil, fmt.Errorf("fastpath: neighbour %v: bad ifindex %d", ip, ifindex)
	}
	k := make([]byte, neighKeySize)
	binary.NativeEndian.PutUint32(k[0:], uint32(ifindex))
	copy(k[4:], a[:])
	return k, nil
}

// monotonicNow is CLOCK_MONOTONIC in ns, the clock bpf_ktime_get_ns reads.
func monotonicNow() (int64, error) {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		return 0, err
	}
	return ts.Nano(), nil
}

// SetNeighbor records that next hop ip on interface ifindex has MAC
// dst, and that frames sent there carry source MAC src. The entry is
// valid until CLOCK_MONOTONIC now+lifetime (a lifetime <= 0 stores an
// already expired entry). IPv4 only: IPv6 next hops need the output's
// MTU (SetNeighbor6).
func (t *Tables) SetNeighbor(ifindex int, ip netip.Addr, dst, src [6]byte, lifetime time.Duration) error {
	return t.SetNeighborMTU(ifindex, ip, dst, src, 0, lifetime)
}

// SetNeighborMTU is SetNeighbor with the output's MTU: an IPv4 datagram
// longer than mtu takes the slow path, whose CheckMTU sends fragmentation
// needed (a redirect would be refused by the output, or sent over its
// MTU). mtu 0 sets no limit.
func (t *Tables) SetNeighborMTU(ifindex int, ip netip.Addr, dst, src [6]byte, mtu int, lifetime time.Duration) error {
	if mtu < 0 || mtu > math.MaxUint32 {
		return fmt.Errorf("fastpath: neighbour %v: MTU %d", ip, mtu)
	}
	k, err := neighKey(ifindex, ip)
	if err != nil {
		return err
	}
	now, err := monotonicNow()
	if err != nil {
		return fmt.Errorf("fastpath: reading CLOCK_MONOTONIC: %w", err)
	}
	var expires uint64
	switch {
	case lifetime <= 0:
		expires = 0
	case int64(lifetime) > math.MaxInt64-now:
		expires = math.MaxUint64
	default:
		expires = uint64(now + int64(lifetime))
	}
	v := make([]byte, neighValueSize)
	copy(v[neighOffDst:], dst[:])
	copy(v[neighOffSrc:], src[:])
	binary.NativeEndian.PutUint32(v[neighOffMTU:], uint32(mtu))
	binary.NativeEndian.PutUint64(v[neighOffExpires:], expires)
	return t.neighbors.Put(k, v)
}

// DeleteNeighbor removes the entry for {ifindex, ip}; a missing entry
// is not an error.
func (t *Tables) DeleteNeighbor(ifindex int, ip netip.Addr) error {
	if is6(ip) {
		return t.deleteNeighbor6(ifindex, ip)
	}
	k, err := neighKey(ifindex, ip)
	if err != nil {
		return err
	}
	if err := t.neighbors.Delete(k); err != nil && !errors.Is(err, ebpf.ErrKeyNotExist) {
		return err
	}
	return nil
}

// Close closes the Tables' file descriptors. Programs built on them keep
// working (the kernel keeps the maps while a program uses them) but can
// no longer be updated. Close is idempotent.
//
// Close also unmaps the flow counters (FlowCounters reads zeros after
// it) and detaches the redirect watcher (WatchRedirects): refused
// redirects of programs still running go unnoticed afterwards.
func (t *Tables) Close() error {
	t.memMu.Lock()
	var err0 error
	if t.mem != nil {
		err0 = unix.Munmap(t.mem)
		t.mem = nil
	}
	t.memMu.Unlock()
	t.watchMu.Lock()
	var errw error
	if t.watchLink != nil {
		errw = errors.Join(t.watchLink.Close(), t.watchProg.Close())
		t.watchLink, t.watchProg = nil, nil
	}
	t.watchMu.Unlock()
	// ebpf.Map.Close accepts nil receivers and closed descriptors.
	return errors.Join(err0, errw, t.routes.Close(), t.neighbors.Close(), t.flows.Close(), t.flowStats.Close(), t.flowGen.Close(),
		t.devmap.Close(), t.egress.Close(), t.egressErrs.Close(), t.routes6.Close(), t.neighbors6.Close(), t.flows6.Close(), t.local.Close())
}

// newMap creates a map, raising RLIMIT_MEMLOCK once on EPERM: kernels
// before 5.11 charge BPF maps to it.
func newMap(spec *ebpf.MapSpec) (*ebpf.Map, error) {
	m, err := ebpf.NewMap(spec)
	if err != nil && isEPERM(err) {
		raiseMemlock()
		m, err = ebpf.NewMap(spec)
	}
	return m, err
}

func raiseMemlock() {
	_ = unix.Setrlimit(unix.RLIMIT_MEMLOCK, &unix.Rlimit{Cur: unix.RLIM_INFINITY, Max: unix.RLIM_INFINITY})
}

// isEPERM also matches the text, in case an error formats the errno
// with %v instead of wrapping it.
func isEPERM(err error) bool {
	return errors.Is(err, unix.EPERM) || strings.Contains(err.Error(), "operation not permitted")
}
