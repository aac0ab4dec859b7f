package afpacket

import (
	"strconv"

	"github.com/junction-dataplane/junction/conf"
)

// manual is the driver's manual page (forwarder drivers afpacket).
func manual() conf.Doc {
	return conf.Doc{
		Summary: "AF_PACKET sockets with a memory-mapped RX ring (TPACKET_V2)",
		Text: `Frames are copied from the ring into packets. Needs root (or CAP_NET_RAW) and must run in the interface's network namespace. Give the interface no IP address: the kernel also sees every frame.

Frames longer than a ring frame holds (1990 bytes; MTU ≤ 1976) are dropped and counted in rx_truncated. The device's MAC is the interface's (the mac key overrides it); its addresses are the addresses key.

Fast path in TC (fastpath = "tc" or "auto"): the device runs Junction's in-kernel fast path as a TC ingress program (tcx, Linux 6.6; the same rules and the same shared table as the afxdp driver's XDP fast path, so IPLookup's and FastTrack's offload keys may name it, and routes and flows may lead between afpacket and afxdp devices) and never an XDP program. A frame it forwards (a route with a resolved next hop, or a flow FastTrack offloaded: IPv4 with NAT, TTL and checksums, IPv6 TCP and UDP) is rewritten and sent on in the kernel: into an output veth's peer with bpf_redirect_peer (no backlog queue, nothing asked of the peer: no XDP, no GRO), out of any other output with bpf_redirect; the graph never sees it. Every other frame goes on to the stack, where the device's sockets take it: with the fast path they are bound to IPv4, IPv6 and ARP (three sockets per queue, each in its own fanout group, read in that order; ARP's ring is one block) instead of ETH_P_ALL, because the kernel hands a frame to ETH_P_ALL sockets before TC runs and to sockets of one EtherType after it: so the slow path copies only what the fast path left, and frames of other EtherTypes reach no socket (the graphs Junction ships drop them). The TC program checks each datagram against its output's MTU as it is at that moment (segment by segment for a GSO packet, which it forwards whole): longer ones, and any whose output has gone (its veth deleted with its peer's namespace), take the graph. An output that is down or whose veth peer is down is not offloaded to (checked every 100 ms; logged once, counted in fastpath_egress_off and fastpath_egress_disabled; on again when it is up). Another tool's tcx program attached before Junction's runs first: what it decides (drops, redirects, accepts) never reaches the fast path, what it passes on does. "auto" runs the fast path in TC on every kind of device: on a veth it is the fastest data path a router has there (benchmarks/e2e-tcp.md), on a NIC it is the only in-kernel fast path of a device without XDP (the afxdp driver's XDP fast path is faster there); the driver logs which it picked and why, and forwarder show interfaces prints it ("fastpath tc" with the reason, or "off" with the missing feature). On a kernel without tcx or the map types the fast path needs, "auto" runs without it (the graph forwards everything, the sockets bound to ETH_P_ALL), logged once, counted in fastpath_fallbacks and warned about by forwarder check; without bpf_redirect_peer it reaches every output with bpf_redirect (counted the same way); "tc" is then an error on fastpath naming the missing feature. JUNCTION_KERNEL_MISSING rehearses those kernels.`,
		Queues: `RX queues are the members of a PACKET_FANOUT group (hash mode: symmetric in the 5-tuple, so both directions of a flow reach the same worker); queue q is served by worker q mod workers, with a pool of ` + strconv.Itoa(PoolSize) + ` packets. TX: one socket per worker, a batch per sendmmsg(2).`,
		Keys: []conf.Key{
			{Name: "interface", Type: "string", Required: true, Doc: `the interface, e.g. "eth0".`},
			{Name: "queues", Type: "int", Default: "0", Doc: "fanout members (RX queues), 0.." + strconv.Itoa(maxQueues) + "; 0 = one per worker. A reload may raise it in place (the added sockets join the fanout group before the swap); one that lowers it closes the sockets above the new count at the swap (a socket leaves the group only by being closed): what their rings still hold is counted in rx_dropped_queue_removed, and the remaining sockets take over their flows."},
			{Name: "frames", Type: "int", Default: "4096", Doc: "ring frames (" + strconv.Itoa(frameSize) + " bytes each) per queue, a power of two, at least one block."},
			{Name: "block_size", Type: "int", Default: "1048576", Doc: "ring block size in bytes, a power of two ≥ 4096 (the kernel allocates the ring in blocks)."},
			{Name: "fastpath", Type: "string", Default: `"off"`, Doc: `the in-kernel fast path as a TC ingress program, no XDP on the device (see above): "tc" (an error if the kernel cannot run it), "auto" (the fast path in TC where the kernel has it, else none; the driver says which it picked), "off". A reload cannot change it (the device is reopened).`},
		},
		Stats: `rx_packets, rx_bytes, tx_packets, tx_bytes, tx_dropped (the kernel would not take them), tx_errors (send errors), tx_dropped_too_long (frames longer than the interface's MTU, as read at open, plus the Ethernet header and one VLAN tag if present, and those the kernel refused as such: the graph's CheckMTU should have turned them into packet too big or fragmentation needed), rx_pool_empty (times a poll found no free packet: the frame is left in the ring for the next poll; an event, not a loss), rx_truncated, rx_own_skipped (the device's own transmissions seen by the fanout group, ignored), rx_kernel_dropped (the sockets' PACKET_STATISTICS tp_drops: frames the kernel could not put in a full RX ring; the kernel resets it on every read, the driver adds the readings up), rx_dropped_reload_aborted (frames that RX sockets added by a reload had received when the reload failed and closed them), rx_dropped_queue_removed (frames a reload that lowered queues found in the rings of the sockets it closed). The receive counters are also kept per RX socket (fanout member), which forwarder show interfaces prints queue by queue. forwarder show errors and show interfaces list the loss counters among the drops (drivers.IsLoss); rx_pool_empty and rx_own_skipped are not losses.

The interface's own kernel counters, counted since the device was opened and read (one netlink request each) when the stats are asked for: link_rx_dropped, link_tx_dropped and link_rx_missed_errors (ip -s link), and link_peer_tx_dropped: on a veth, the peer's tx_dropped (frames the sender could not hand to this interface). They are not in the forwarder's drop total, which counts what the graph lost.

With fastpath: fastpath_forwarded and fastpath_forwarded_bytes (frames the TC program forwarded from this interface; a GSO packet is one frame of its whole length), fastpath_to_graph (frames it left to the stack and the sockets), fastpath_runs and fastpath_run_ns (while sysctl kernel.bpf_stats_enabled=1), fastpath_redirect_errors, fastpath_egress_disabled and fastpath_egress_off (the device as an output, as afxdp's), fastpath_fallbacks (steps down from what the key asked on this kernel). None of these is a loss.`,
		Example: `[devices.wan]
driver    = "afpacket"
interface = "wan0"
addresses = ["10.2.0.1/24"]`,
		SeeAlso: "afxdp (AF_XDP: no copy on receive, an in-kernel fast path in XDP), IPLookup and FastTrack (their offload key)",
	}
}
