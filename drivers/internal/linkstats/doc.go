// Package linkstats gives the afxdp and afpacket drivers the kernel's drop
// counters of the interface they opened, as counts since the device was
// opened: the interface's rx_dropped, tx_dropped and rx_missed_errors
// (struct rtnl_link_stats64, what `ip -s link` prints), and, on a veth,
// its peer's tx_dropped. They are read with one or two RTM_GETLINK
// requests when Stats is called, never on the packet path.
//
// Why the peer: a veth hands its frames to the peer's receive side; when
// the peer runs XDP (an AF_XDP socket is bound to it) the frames wait in a
// per-queue ring (256 entries) until the peer's NAPI poll takes them, and a
// frame arriving at a full ring is dropped and counted as the SENDER's
// tx_dropped. A host that sends into the router's veth therefore loses
// frames that no counter of the router's interface shows; the peer's
// counter does (its namespace is reached with IFLA_TARGET_NETNSID).
// Frames the peer's XDP program could not redirect to a socket (the
// socket's RX ring full, its fill ring empty) are the interface's own
// rx_dropped (ethtool -S: rx_queue_N_drops).
package linkstats
