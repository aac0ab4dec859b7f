// Package afxdp is the afxdp driver: AF_XDP sockets (github.com/asavie/xdp
// v0.3.3), one socket and UMEM per (interface, RX queue), received frames
// handed to the graph without a copy, and the XDP program removed on every
// exit path.
//
// Frame ownership. v0.3.3's Socket keeps its own "free frame" bookkeeping,
// which Receive clears as soon as a descriptor is read, so it cannot be
// trusted while the graph holds the frame. The driver never uses it
// (GetDescs is never called): each queue's UMEM is carved into packet
// pools with packet.NewPoolFrom, so a frame belongs to exactly one packet
// and is free exactly when that packet is in its pool. The fill ring is
// refilled only from the RX pool's free packets; a packet the graph frees
// returns its frame to that pool, and from there to the fill ring.
//
//	UMEM of queue q: [ RX pool: frames-ring frames | TX pool: ring frames ]
//
// A frame's life: RX pool → fill ring → RX ring → a packet in the graph →
// (freed) RX pool, or → transmitted on the same queue without a copy → TX
// ring → completion ring → RX pool. A packet from any other pool is copied
// into a TX-pool frame, freed at once, and the TX frame returns to the TX
// pool on completion. The completion ring is mapped by the driver itself
// (v0.3.3's Complete discards the addresses), and so are the RX ring's
// producer and consumer indices (read-only): RxPosition
// (drivers.RxPositioner) reports how far each queue has been filled and
// read, so that FromDevice keeps a flow in order when the sending host
// moves it to another queue.
//
// Workers and queues. RX queue q is served by worker q mod workers (the
// pipeline's rule). Worker w transmits on queue w's socket when w < queues
// (a queue it serves); a worker that serves no queue (workers > queues)
// transmits on queue w mod queues. A socket used by more than one worker
// that way is "shared": every use of it (Receive, Transmit, completions)
// takes the socket's mutex, once per batch, and it transmits by copy only,
// so that the RX pool is touched by its owner alone. Unshared sockets take
// no lock. A reload may change workers (resize.go) and queues (reconfig.go)
// with the device kept open.
//
// Transmit never blocks: packets beyond the free TX ring slots, or beyond
// the free TX frames, are freed and counted. In copy mode the kernel sends
// about 32 frames per sendto(2) "kick", so the driver kicks at the end of
// every Transmit (a few times for a big batch) and in every Receive while
// frames wait in the TX ring. v0.3.3's Transmit panics on an unexpected
// errno from that kick; the driver recovers and counts tx_kicks_failed (a
// count of kicks, not of frames: the frames stay on the ring for the next
// kick). Frames whose completion has not come when the socket closes are
// counted in tx_unconfirmed.
//
// The XDP program is v0.3.3's (redirect to the queue's socket when one is
// registered, else pass to the kernel); its queue map is sized to the
// interface's RX queue count, so queues without a socket pass their
// traffic to the kernel instead of dropping it. It is attached through a
// BPF link where the kernel has them (≥ 5.9): the kernel detaches it when
// the process exits for any reason, SIGKILL included. Otherwise it is
// attached with netlink and detached by Close (which the forwarder calls
// on a normal end, on SIGINT/SIGTERM, and when start-up fails). A program
// found on the interface at Open that this driver loaded (name "xsk_ebpf",
// or fastpath.ProgramName)
// is a crashed run's leftover and is replaced; any other program is left
// alone and Open fails, naming it.
//
// Fast path (fastpath = true): the program is drivers/afxdp/fastpath's,
// which forwards plain IPv4 packets, and IPv6 TCP and UDP, with a known
// route and next hop in the kernel and redirects the rest to the same
// sockets. Its route and neighbour maps are one per process (fastTable),
// shared by every such device so that a route can lead from one to
// another, and programmed through drivers.FastPathTable by IPLookup
// (offload key), ARPQuerier and NDPQuerier; the devices' own addresses
// (IPv4, and global IPv6 as /128s) are held local in it. IPv6 next hops and
// flows carry the output device's MTU, read when it was opened (an MTU
// changed later is not seen: frames up to the old MTU are still
// redirected).
//
// Every fast-path device is also an output of that table (fasttable.go),
// reached as its fastpath_redirect key says (redirectVia): a veth through
// TC (the program passes the frame up with the output in its metadata,
// and the input's TC ingress program, fastpath.AttachTC, redirects it into
// the veth's peer), any other device by XDP redirects. An output reached
// by XDP is used only while the kernel takes redirected frames there: it
// is off while the device's XDP features lack ndo_xdp_xmit
// (fastpath.XmitProbe, asked every 100 ms), and turned off in the kernel
// at the first refused frame (fastpath.Tables.WatchRedirects,
// xdp:xdp_redirect_err) and retried with a doubling back-off. An output
// reached through TC is off while it is down or has no carrier (asked
// every 100 ms): the kernel drops what is redirected into it then,
// without a trace. A goroutine polls every 10 ms, logs each outage once
// and keeps the counters. If one device's TC program cannot be attached
// (tcx needs Linux 6.6), every output is reached by XDP.
//
// Namespaces: sockets, the program attachment and the netlink socket used
// to detach it belong to the network namespace of the thread that calls
// Open; run the forwarder inside the interface's namespace
// (`ip netns exec NS forwarder run ...`).
package afxdp
