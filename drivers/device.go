package drivers

import (
	"errors"
	"fmt"
	"io"
	"net/netip"
	"sort"
	"sync"
	"time"

	"github.com/junction-dataplane/junction/conf"
	"github.com/junction-dataplane/junction/packet"
)

// Device is one packet I/O device, opened once and shared by the FromDevice
// and ToDevice elements of every worker.
//
// Concurrency: RX queue q is served by exactly one worker, so Receive(q, ...)
// is never called concurrently for the same q. Transmit(w, ...) is called by
// worker w only; a driver keeps per-worker TX state or locks (per batch,
// never per packet).
type Device interface {
	// RxQueues is the number of RX queues (≥ 1).
	RxQueues() int
	// Receive appends up to b.Cap()-b.Len() packets from queue q to b and
	// returns how many it added. It never blocks for long.
	Receive(q int, b *packet.Batch) int
	// Drained reports that queue q is finite and exhausted.
	Drained(q int) bool
	// Transmit takes every packet of b — sent, or freed and counted when
	// the ring is full — and leaves b empty. It never blocks indefinitely.
	Transmit(worker int, b *packet.Batch)
	// Flush pushes out anything buffered (files, TX rings).
	Flush() error
	// Close flushes and releases the device; packets it still holds go
	// back to their pools.
	Close() error
	// Info describes the device (MAC, addresses) for elements.
	Info() Info
	// Stats returns the driver's counters (rx, tx, tx drops, ...).
	Stats() []Counter
}

// Info is what elements may need to know about a device.
type Info struct {
	// Warnings, from a driver's check: what run will do short of what
	// the file asks, where it can still run (a kernel without a
	// feature an optional accelerator needs). forwarder check prints
	// them located at the device.
	Warnings  []string
	Name      string
	Driver    string
	MAC       packet.MAC
	Addresses []netip.Prefix
	// FlowAffine promises that every packet of a flow, in both
	// directions, always arrives on the same RX queue, so that the worker
	// serving that queue owns the flow without any handoff (gen with
	// split_flows: one-way flows, each given to one queue). A device that
	// cannot promise it (veth, whose queue is the sender's TX queue; a
	// NIC whose RSS is not symmetric or does not know about NAT) leaves it
	// false, and FromDevice hands each packet to its flow's owner.
	FlowAffine bool
	// MTU is the interface's MTU as read at open (the IP packet, without
	// the Ethernet header), 0 when the device has none (gen, pcap).
	// The driver refuses longer frames (TooLong); FastTrack sends
	// packets longer than its devices' smallest MTU to the slow path,
	// whose CheckMTU answers them.
	MTU int
	// FastPath says the device will run a fast path (FastPath: afxdp with
	// fastpath = true). A driver's Check reports it, so that forwarder
	// check verifies the offload keys naming the device before anything
	// is opened.
	FastPath bool
}

// Counter is a named driver counter.
type Counter struct {
	Name  string
	Value uint64
}

// CounterFastPathForwarded names the counter of packets a device forwarded
// itself (FastPath), which the pipeline's totals report apart.
const CounterFastPathForwarded = "fastpath_forwarded"

// CounterTxUnconfirmed names the counter of frames a driver handed to the
// kernel without seeing their completion before it closed the socket
// (afxdp: the kernel had not completed them). Whether they left is not
// known; the snapshot's totals count them with the transmit losses, so
// that every packet is accounted for once.
const CounterTxUnconfirmed = "tx_unconfirmed"

// OpenContext is what a driver gets when the pipeline opens a device.
type OpenContext struct {
	Name    string // the device's name in the graph
	Index   int    // its index (the InDevice annotation of its packets)
	Workers int
	Batch   int
	// BaseDir resolves relative file names (the graph file's directory).
	BaseDir string
	// Addresses and MAC are the common device keys, already parsed.
	Addresses []netip.Prefix
	MAC       packet.MAC
	// Log is where the driver's messages for the operator go (the
	// router's log, forwarder run's stderr); nil discards them (Logf).
	Log io.Writer
}

// Logf writes one message for the operator to ctx.Log, prefixed with the
// device's name.
func (ctx OpenContext) Logf(format string, args ...any) {
	if ctx.Log == nil {
		return
	}
	fmt.Fprintf(ctx.Log, "%s: %s\n", ctx.Name, fmt.Sprintf(format, args...))
}

// Driver is a registered driver.
type Driver struct {
	Name string
	// NewConfig returns a pointer to the driver's config struct with
	// defaults; its toml-tagged fields are the driver's keys (besides the
	// common driver, addresses and mac keys, handled by the loader).
	NewConfig func() any
	// Exclusive says an open device holds its interface exclusively (one
	// socket per queue, an XDP program): it cannot be opened a second
	// time while the first is open, so a reload cannot reopen it with new
	// keys (the running device stays open until the swap) and refuses to.
	Exclusive bool
	// Open opens the device. Errors are reported before anything starts.
	Open func(cfg any, ctx OpenContext) (Device, error)
	// Doc is the driver's manual page (WriteDoc prints it): Summary,
	// Text, Queues, Keys (the config struct's, in its order), Stats,
	// Example. CheckDoc holds it to the config struct.
	Doc conf.Doc
}

// The registry of drivers: a package variable on purpose (code, not
// graph state), written by Register from init functions and tests.
var (
	mu      sync.RWMutex
	drivers = map[string]*Driver{}
)

// Register adds a driver; it panics on an empty name, a nil Open or a
// duplicate.
func Register(d Driver) {
	if d.Name == "" || d.Open == nil {
		panic("drivers: Register needs a name and Open")
	}
	mu.Lock()
	defer mu.Unlock()
	if _, dup := drivers[d.Name]; dup {
		panic(fmt.Sprintf("drivers: duplicate driver %q", d.Name))
	}
	dd := d
	drivers[d.Name] = &dd
}

// Lookup returns a registered driver.
func Lookup(name string) (*Driver, bool) {
	mu.RLock()
	defer mu.RUnlock()
	d, ok := drivers[name]
	return d, ok
}

// Names lists registered drivers, sorted.
func Names() []string {
	mu.RLock()
	defer mu.RUnlock()
	out := make([]string, 0, len(drivers))
	for n := range drivers {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// FastPath is implemented by a device whose driver can forward plain IPv4
// (and IPv6) packets itself, before the graph sees them (afxdp with fastpath = true:
// in its XDP program, in the kernel). It forwards only what it has a route
// and a resolved next hop for, and only packets that the standard router
// graph would forward unchanged but for the TTL and the Ethernet header;
// everything else reaches the graph as usual. The elements that own routes
// (IPLookup with offload) and neighbours (ARPQuerier) program it.
type FastPath interface {
	Device
	// FastPathTable is the table this device's fast path reads. Every
	// device of one driver shares one table, so that a route can lead
	// from one device to another.
	FastPathTable() FastPathTable
}

// FastPathTable is the route and neighbour table of a driver's fast path.
// Its methods are control-plane calls (a system call each); they are safe
// for concurrent use.
type FastPathTable interface {
	// SetRoute makes IPv4 or IPv6 prefix p lead out of device out towards gw (an
	// invalid gw: directly connected). A nil out marks a prefix the fast
	// path must not forward (the router's own addresses, ECMP routes,
	// ports without a fast-path device): its packets take the graph.
	SetRoute(p netip.Prefix, gw netip.Addr, out Device) error
	// DeleteRoute removes p (a missing p is not an error).
	DeleteRoute(p netip.Prefix) error
	// SetNeighbor records that ip, a next hop on device out, is at mac,
	// for lifetime; after that its packets take the graph again, whose
	// ARPQuerier resolves it anew.
	SetNeighbor(out Device, ip netip.Addr, mac packet.MAC, lifetime time.Duration) error
	// DeleteNeighbor forgets ip on out (a missing entry is not an error).
	DeleteNeighbor(out Device, ip netip.Addr) error

	// SetFlow makes the fast path apply one flow direction's rewrite
	// itself (FastTrack's offload) and returns the slot whose counters
	// FlowCounters reads. ErrFlowsFull: no room; ErrFlowExists: another
	// caller installed the same direction. Either way the flow stays in
	// the graph's own fast path.
	SetFlow(f FastFlow) (slot int, err error)
	// DeleteFlow removes f, installed at slot.
	DeleteFlow(f FastFlow, slot int) error
	// FlowCounters reads what the fast path forwarded at slot since
	// SetFlow: packets and IP bytes. No system call: FastTrack folds them
	// into the flow every few hundred milliseconds.
	FlowCounters(slot int) (packets, bytes uint64)
	// SetFlowGeneration makes gen the generation flows must carry
	// (FastFlow.Gen) to apply: every flow of an older one stops applying
	// at once, whatever it takes to delete them.
	SetFlowGeneration(gen uint32) error
}

// FastPathRouteUse is a FastPathTable that may take a route and still
// leave its packets to the graph for want of room (the afxdp fast path's
// IPv4 table out of groups or next-hop numbers): forwarding stays
// correct, only slower. RoutesToGraph counts what it so left, as the
// table counts it (the afxdp table: /24s and routes).
type FastPathRouteUse interface {
	RoutesToGraph() uint64
}

// FastPathRouteBatcher is a FastPathTable that also takes route changes
// many at a time (a full routing table is a million of them; each call of
// SetRoute is a system call). The results are SetRoute's and
// DeleteRoute's, one per change: errs[i] (len(errs) ≥ the changes) is
// change i's error or nil.
type FastPathRouteBatcher interface {
	SetRoutes(rs []FastRoute, errs []error)
	DeleteRoutes(ps []netip.Prefix, errs []error)
}

// FastRoute is one route of FastPathRouteBatcher.SetRoutes: SetRoute's
// arguments.
type FastRoute struct {
	Prefix netip.Prefix
	Gw     netip.Addr
	Out    Device
}

// SetFlow's errors: the fast path's flow table is full; the flow
// direction is already installed (by another worker's tracker); the
// device's in-kernel fast path is off (the kernel could not run it: see
// Moder), so its flows stay in the graph.
var (
	ErrFlowsFull  = errors.New("fast path flow table full")
	ErrFlowExists = errors.New("flow already in the fast path")
	ErrNoFastPath = errors.New("the device's in-kernel fast path is off")
)

// Mode is one thing a driver settled on when it opened a device, where
// the file left it a choice or the kernel did not allow what it asked:
// afxdp's XDP attach mode, zero-copy, the fast path's way of forwarding.
// Note says why, when the device runs short of what was asked.
type Mode struct {
	Name  string `json:"name"`
	Value string `json:"value"`
	Note  string `json:"note,omitempty"`
}

// Moder is implemented by devices that report their Modes (forwarder
// show interfaces, the stats endpoint).
type Moder interface {
	Modes() []Mode
}

// FastFlow is one direction of a fast-tracked flow: the packets arriving on
// In with this 5-tuple (ICMP echo: both ports are the identifier) leave on
// Out rewritten to the New* tuple, TTL lowered by TTLDec, Ethernet header
// EthDst/EthSrc. ICMPType is the echo type this direction carries (8 or
// 0; 0 for TCP and UDP).
type FastFlow struct {
	In                 Device
	Proto              uint8
	Src, Dst           netip.Addr
	Sport, Dport       uint16
	Out                Device
	NewSrc, NewDst     netip.Addr
	NewSport, NewDport uint16
	TTLDec, ICMPType   uint8
	EthDst, EthSrc     packet.MAC
	Gen                uint32 // the generation it was learnt under (conntrack.Generation)
}

// RxWaiter is implemented by a device whose RX queues a worker can wait on
// with poll(2) instead of polling them (VPP's interrupt mode, DPDK's RX
// interrupts): an idle worker sleeps until a packet arrives.
type RxWaiter interface {
	// RxFD returns a file descriptor that poll(2) reports readable
	// (POLLIN) whenever RX queue q has packets to receive, or -1 when q
	// cannot be waited on. The descriptor belongs to the device.
	RxFD(q int) int
}

// TxWaiter is implemented by a device whose transmissions may wait for a
// kick that only the worker's polling gives (afxdp in copy mode sends a
// TX ring's frames only when asked, a few dozen per system call).
type TxWaiter interface {
	// TxIdle kicks what worker w left on its TX ring and reports whether
	// nothing is left there: only then may w sleep without stranding
	// frames it transmitted.
	TxIdle(worker int) bool
}
