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
	"unsafe"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"
)

// Map layouts: bpf/fastpath.h declares every map's key and value, and
// bpf2go (objects.go's -type flags) generates their Go types from the
// compiled object's BTF into fastpath_bpfel.go: fastpathRouteKey,
// fastpathRoute, fastpathNeighKey, fastpathNeigh, fastpathCounters, ...
// with the C's field names, sizes and offsets. Only the IPv4 flow key
// and value (flows.go) are kept by hand: bpf2go cannot express their
// anonymous struct in a union. Every multi-byte integer that is not an
// address, a port or a checksum delta is in host byte order (the program
// reads it with plain loads); those are the bytes as on the wire, held
// in __u32/__u16 words (wire32) so that the program copies them from the
// packet without swapping.
const (
	routeFlagLocal = 1 // fastpathRoute.Flags and fastpathRoute6.Flags: the destination is ours

	counterValueSize = uint32(unsafe.Sizeof(fastpathCounters{}))
	flowStatSize     = int(unsafe.Sizeof(fastpathFlowStats{}))
	maxFlowsLimit    = int(math.MaxUint32 / unsafe.Sizeof(fastpathFlowStats{}))

	protoICMP       = 1
	protoTCP        = 6
	protoUDP        = 17
	icmpEchoReply   = 0
	icmpEchoRequest = 8
)

// sizeOf is the size of a map key or value type, for its MapSpec.
func sizeOf[T any]() uint32 {
	var v T
	return uint32(unsafe.Sizeof(v))
}

// wire32 is the word whose bytes in memory are b: how the maps hold an
// IPv4 address (or two ports) in wire order.
func wire32(b [4]byte) uint32 { return binary.NativeEndian.Uint32(b[:]) }

// wire128 is a 16-byte address as the maps hold it: four words in wire
// order.
func wire128(b [16]byte) (w [4]uint32) {
	for i := range w {
		w[i] = binary.NativeEndian.Uint32(b[4*i:])
	}
	return w
}

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
	dir       *dir4 // the IPv4 routes (dir4.go)
	neighbors *ebpf.Map
	flows     *ebpf.Map // hash: flow key -> action
	flowStats *ebpf.Map // BPF_F_MMAPABLE array: per-slot counters
	flowGen   *ebpf.Map // array of one u32: the current flow generation (SetFlowGeneration)

	// routeBatches: the kernel takes batches of IPv6 route changes
	// (kfeature.LPMTrieBatch; SetRoutes, routebatch.go).
	routeBatches bool

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
	free   []uint32                    // free slots, a stack (the last freed is reused first)
	slots  map[flowKey]uint32          // installed keys and their slots
	slots6 map[fastpathFlow6Key]uint32 // the same for IPv6 flows (tables6.go)
	gen    uint32                      // the flow generation written to fp_flow_gen

	memMu sync.RWMutex // guards mem against Close
	mem   []byte       // flowStats mapped read-only; nil once closed
}

// NewTables creates the route, neighbour and flow maps with room for
// maxRoutes IPv6 prefixes, maxNeighbors {ifindex, next hop} entries and
// maxFlows flow directions (counter slots). The IPv4 table (dir4.go)
// takes any number of prefixes up to /24 and longer ones in up to
// maxRoutes /24s (at most 32,760; a /24 beyond takes the slow path);
// it costs 32 MiB of kernel memory whatever it holds, 512 bytes more a
// group (a /24 with longer prefixes: the kernel's memory for every
// group it may take, the process's 256 bytes for the groups used), and
// in the process a depth byte a /24 (in pages of 4,096 made as routes
// reach them) and its record of each prefix.
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
	dir, err := newDir4(maxRoutes)
	if err != nil {
		return nil, err
	}
	neighbors, err := newMap(&ebpf.MapSpec{
		Name:       "fp_neighbors",
		Type:       ebpf.Hash,
		KeySize:    sizeOf[fastpathNeighKey](),
		ValueSize:  sizeOf[fastpathNeigh](),
		MaxEntries: uint32(maxNeighbors),
	})
	if err != nil {
		dir.close()
		return nil, fmt.Errorf("fastpath: creating the neighbour map: %w", err)
	}
	t := &Tables{dir: dir, neighbors: neighbors, via: map[uint32]Via{},
		routeBatches: kfeature.Have(kfeature.LPMTrieBatch) == nil}
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

// prefix4 checks that p is an IPv4 prefix and masks it.
func prefix4(p netip.Prefix) (netip.Prefix, error) {
	if !p.IsValid() || !p.Addr().Is4() {
		return p, fmt.Errorf("fastpath: %v: only IPv4 prefixes", p)
	}
	return p.Masked(), nil
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
	p, err := prefix4(p)
	if err != nil {
		return err
	}
	v, err := routeValue(p, r)
	if err != nil {
		return err
	}
	return t.dir.set(p, v)
}

// DeleteRoute removes the route for p; a missing route is not an error.
func (t *Tables) DeleteRoute(p netip.Prefix) error {
	if p.IsValid() && is6(p.Addr()) {
		return t.deleteRoute6(p)
	}
	p, err := prefix4(p)
	if err != nil {
		return err
	}
	return t.dir.del(p)
}

// RouteTableUse says how full the IPv4 route table is.
func (t *Tables) RouteTableUse() Dir4Use { return t.dir.use() }

func neighKey(ifindex int, ip netip.Addr) (*fastpathNeighKey, error) {
	a, ok := ipv4(ip)
	if !ok {
		return nil, fmt.Errorf("fastpath: neighbour %v: only IPv4", ip)
	}
	if ifindex <= 0 || ifindex > math.MaxUint32 {
		return nil, fmt.Errorf("fastpath: neighbour %v: bad ifindex %d", ip, ifindex)
	}
	return &fastpathNeighKey{Ifindex: uint32(ifindex), Ip: wire32(a)}, nil
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
	v := fastpathNeigh{Eth: ethHeader(dst, src), Mtu: uint32(mtu), Expires: expires}
	return t.neighbors.Put(k, &v)
}

// ethHeader is a neighbour's or flow's MACs as the program writes them
// into the Ethernet header: destination, then source.
func ethHeader(dst, src [6]byte) (eth [12]byte) {
	copy(eth[:6], dst[:])
	copy(eth[6:], src[:])
	return eth
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
	var errd error
	if t.dir != nil {
		errd = t.dir.close()
	}
	return errors.Join(err0, errw, errd, t.neighbors.Close(), t.flows.Close(), t.flowStats.Close(), t.flowGen.Close(),
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
