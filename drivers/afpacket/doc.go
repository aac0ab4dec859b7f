// Package afpacket is the afpacket driver: AF_PACKET sockets with a
// memory-mapped TPACKET_V2 RX ring per queue, spread over queues by
// PACKET_FANOUT, and batched transmission with sendmmsg(2), on
// golang.org/x/sys/unix only (no cgo). It is the driver for interfaces or
// kernels without AF_XDP.
//
// RX: each "queue" is one socket of a fanout group of type
// PACKET_FANOUT_HASH, whose hash (skb_get_hash_symmetric) is symmetric in
// the 5-tuple, so both directions of a flow reach the same queue and
// worker. Each socket has its own ring of 2048-byte frames; Receive walks
// the frames the kernel has marked TP_STATUS_USER, copies each into a
// packet of the queue's pool (a copy, so that a ring frame goes back to the
// kernel at once and the graph may hold packets as long as it wants), and
// hands the frame back. TPACKET_V2 rather than V3: V3 delivers whole
// blocks, which the kernel retires only when full or after a timeout of a
// millisecond or more, a latency a router should not add; V2 frames are
// handed over one by one. The sockets ignore outgoing frames
// (PACKET_IGNORE_OUTGOING), so the device never receives what it sends.
//
// TX: one socket per worker (so Transmit takes no lock), bound to the
// interface, not receiving; a batch is sent with one sendmmsg(2) whose
// iovecs point at the packets' frames; the kernel copies them, and every
// packet is freed when the call returns. What the kernel does not take
// after a few retries (a full qdisc or device queue) is freed and counted.
//
// The kernel's own stack still sees every frame too: give the interface
// no IP address and leave ip_forward off in its namespace, so that only
// the graph answers.
//
// Fast path (the fastpath key): the afxdp driver's fast path run as a TC
// ingress program (afxdp.TCPort, fastpath.NewTCProgram), with the RX
// sockets bound to the IPv4, IPv6 and ARP EtherTypes, which the kernel
// serves after TC, instead of ETH_P_ALL, which it serves before: the
// graph then receives only what the fast path left (see manual).
package afpacket
