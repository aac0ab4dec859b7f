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

Frames longer than a ring frame holds (1990 bytes; MTU ≤ 1976) are dropped and counted in rx_truncated. The device's MAC is the interface's (the mac key overrides it); its addresses are the addresses key.`,
		Queues: `RX queues are the members of a PACKET_FANOUT group (hash mode: symmetric in the 5-tuple, so both directions of a flow reach the same worker); queue q is served by worker q mod workers, with a pool of ` + strconv.Itoa(PoolSize) + ` packets. TX: one socket per worker, a batch per sendmmsg(2).`,
		Keys: []conf.Key{
			{Name: "interface", Type: "string", Required: true, Doc: `the interface, e.g. "eth0".`},
			{Name: "queues", Type: "int", Default: "0", Doc: "fanout members (RX queues), 0.." + strconv.Itoa(maxQueues) + "; 0 = one per worker. A reload may raise it in place (the added sockets join the fanout group before the swap); one that lowers it closes the sockets above the new count at the swap (a socket leaves the group only by being closed): what their rings still hold is counted in rx_dropped_queue_removed, and the remaining sockets take over their flows."},
			{Name: "frames", Type: "int", Default: "4096", Doc: "ring frames (" + strconv.Itoa(frameSize) + " bytes each) per queue, a power of two, at least one block."},
			{Name: "block_size", Type: "int", Default: "1048576", Doc: "ring block size in bytes, a power of two ≥ 4096 (the kernel allocates the ring in blocks)."},
		},
		Stats: `rx_packets, rx_bytes, tx_packets, tx_bytes, tx_dropped (the kernel would not take them), tx_errors (send errors), tx_dropped_too_long (frames longer than the interface's MTU, as read at open, plus the Ethernet header and one VLAN tag if present, and those the kernel refused as such: the graph's CheckMTU should have turned them into packet too big or fragmentation needed), rx_pool_empty (times a poll found no free packet: the frame is left in the ring for the next poll; an event, not a loss), rx_truncated, rx_own_skipped (the device's own transmissions seen by the fanout group, ignored), rx_kernel_dropped (the sockets' PACKET_STATISTICS tp_drops: frames the kernel could not put in a full RX ring; the kernel resets it on every read, the driver adds the readings up), rx_dropped_reload_aborted (frames that RX sockets added by a reload had received when the reload failed and closed them), rx_dropped_queue_removed (frames a reload that lowered queues found in the rings of the sockets it closed). The receive counters are also kept per RX socket (fanout member), which forwarder show interfaces prints queue by queue. forwarder show errors and show interfaces list the loss counters among the drops (drivers.IsLoss); rx_pool_empty and rx_own_skipped are not losses.

The interface's own kernel counters, counted since the device was opened and read (one netlink request each) when the stats are asked for: link_rx_dropped, link_tx_dropped and link_rx_missed_errors (ip -s link), and link_peer_tx_dropped: on a veth, the peer's tx_dropped (frames the sender could not hand to this interface). They are not in the forwarder's drop total, which counts what the graph lost.`,
		Example: `[devices.wan]
driver    = "afpacket"
interface = "wan0"
addresses = ["10.2.0.1/24"]`,
		SeeAlso: "afxdp (AF_XDP: no copy on receive, an in-kernel fast path)",
	}
}
