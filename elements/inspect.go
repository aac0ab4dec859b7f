package elements

import (
	"net/netip"
	"time"
)

// Optional interfaces through which a running router's control plane
// (forwarder show, forwarder route) reads and changes an element's state.
// They are called from the control server's goroutine, never from a
// worker, while the workers run: implementations read without stopping the
// workers and without taking a lock the workers take (atomic loads,
// published versions, or copies checked against a tag that tells a torn
// read), and change state only through the lock-free publication the
// element already uses.

// FlowTuple is one direction of a tracked flow.
type FlowTuple struct {
	Src   netip.Addr `json:"src"`
	Dst   netip.Addr `json:"dst"`
	Sport uint16     `json:"sport"`
	Dport uint16     `json:"dport"`
}

// Flow is one tracked connection as read by a FlowLister.
type Flow struct {
	Proto string    `json:"proto"` // tcp, udp, icmp or a number
	Orig  FlowTuple `json:"orig"`  // the original direction as it arrived
	Reply FlowTuple `json:"reply"` // the reply direction as it arrives (NAT changes it)
	// State is the TCP state (ESTABLISHED, ...), or for other
	// protocols UNREPLIED or REPLIED.
	State       string        `json:"state"`
	Assured     bool          `json:"assured"`
	NAT         string        `json:"nat,omitempty"` // "snat", "dnat", "snat+dnat" or ""
	Timeout     time.Duration `json:"timeout_ns"`    // time left before the flow expires
	Packets     [2]uint64     `json:"packets"`       // original, reply
	Bytes       [2]uint64     `json:"bytes"`
	FastTracked bool          `json:"fasttracked"` // a direction is on FastTrack's fast path
	Worker      int           `json:"worker"`
}

// FlowLister is an element holding a flow table (Conntrack). Flows calls
// yield for each live flow until it returns false.
type FlowLister interface {
	Flows(yield func(Flow) bool)
}

// RouteHop is one path of a route.
type RouteHop struct {
	Via netip.Addr `json:"via,omitzero"` // zero: directly connected
	Out int        `json:"out"`
	// Device is the device output Out leads to alone, when it does: the
	// control socket fills it from the graph, for `show routes` to print
	// "out wan" as ip route prints "dev wan".
	Device string `json:"device,omitempty"`
}

// LiveRoute is one route of a running table.
type LiveRoute struct {
	Prefix netip.Prefix `json:"prefix"`
	Hops   []RouteHop   `json:"hops"` // several: ECMP members
	// Source is where the route came from: "config" (routes, routes_file),
	// "kernel" (mirrored from a kernel table) or "live" (added through
	// the control socket).
	Source string `json:"source"`
	// Type is the route's type when it is not unicast: "blackhole",
	// "unreachable" or "prohibit" (the route has no hops).
	Type string `json:"type,omitempty"`
}

// RouteTable is an element with a live route table (IPLookup). Every
// worker's instance shares the table; changes are published to the
// workers without locks on their side.
type RouteTable interface {
	// RouteList returns the current routes, sorted by prefix.
	RouteList() []LiveRoute
	// RouteFor returns the route a packet to addr takes (longest match).
	RouteFor(addr netip.Addr) (LiveRoute, bool)
	// RouteExact returns the route for exactly prefix p.
	RouteExact(p netip.Prefix) (LiveRoute, bool)
	// SetRoute installs a route given in the element's route syntax
	// ("PREFIX [via NH]... out PORT..."); with replace false an existing
	// route for the prefix is an error, with replace true it must exist.
	SetRoute(text string, replace bool) (LiveRoute, error)
	// DeleteRoute removes the route for prefix p.
	DeleteRoute(p netip.Prefix) error
	// ReloadRoutes re-reads the routes file and the configured routes
	// and publishes them as one new version (live routes are dropped);
	// it returns the number of routes.
	ReloadRoutes() (int, error)
	// RouteSource is "config" or "kernel".
	RouteSource() string
}

// Neighbor is one neighbour table entry.
type Neighbor struct {
	Addr   netip.Addr    `json:"addr"`
	MAC    string        `json:"mac,omitempty"` // empty: unresolved
	State  string        `json:"state"`         // reachable, stale, incomplete, failed, permanent
	Age    time.Duration `json:"age_ns"`        // since the last confirmation (0: never)
	Device string        `json:"device"`
}

// NeighborLister is an element with a neighbour table (ARPQuerier).
type NeighborLister interface {
	Neighbors() []Neighbor
}
