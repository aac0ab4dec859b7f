// Package fastpath is the in-kernel fast path of the afxdp driver: an
// XDP program, written with cilium/ebpf's asm package (no C compiler
// needed), that forwards plain IPv4 packets itself when their route and
// next-hop MAC address are known, and hands every other frame to the
// device's AF_XDP sockets exactly as the usual AF_XDP program does.
// Junction's elements keep the slow path: everything unusual (options,
// TTL expiry, local delivery, ARP, unknown neighbours, hairpins...) goes
// to them, so the fast path only has to be right for the common case and
// never has to generate packets.
//
// # Per frame
//
// A frame is forwarded only if all of these hold:
//
//  1. it has at least 34 bytes (Ethernet 14 + IPv4 20);
//  2. its Ethernet destination is the device's own MAC (compiled into
//     the program) and its EtherType 0x0800 (no VLAN tags);
//  3. the IPv4 header starts with 0x45 (version 4, no options);
//  4. 20 <= total length and 14 + total length <= frame length
//     (Ethernet padding after the datagram is allowed);
//  5. the header checksum verifies;
//  6. TTL > 1;
//  7. the source's first octet is not 0, 127 or >= 224 and the
//     destination's is not 0 or >= 224 (RFC 1812 5.3.7 martians,
//     multicast, broadcast);
//  8. the longest-prefix route of the destination exists and is not
//     Local;
//  9. the neighbour {route's ifindex, next hop} exists and has not
//     expired (next hop = the route's gateway, or the destination for a
//     directly connected route);
//  10. the route's interface is not the one the frame came in on.
//
// Forwarding decrements TTL, patches the header checksum incrementally
// (RFC 1624 eqn. 3, whose result equals a full recompute, 0x0000 and
// not 0xffff included), writes the neighbour's destination and source
// MACs, counts the frame and returns bpf_redirect(ifindex, 0).
//
// Every other frame takes the slow path: it is counted and the program
// returns bpf_redirect_map(xsks, rx_queue_index, XDP_PASS), so a queue
// with a registered AF_XDP socket delivers it there and a queue without
// one passes it to the kernel's stack instead of dropping it.
//
// # Maps
//
// Integers that are not addresses are in host byte order; IPv4
// addresses are their 4 wire bytes.
//
//	routes     LPM trie, shared (Tables)
//	           key   {u32 prefixlen; u8 addr[4]}                      8 bytes
//	           value {u32 ifindex; u8 gateway[4]; u32 flags}          12 bytes
//	           gateway 0.0.0.0 = directly connected; flags bit 0 = Local
//	neighbors  hash, shared (Tables)
//	           key   {u32 ifindex; u8 ip[4]}                          8 bytes
//	           value {u8 dst[6]; u8 src[6]; u32 pad; u64 expires}     24 bytes
//	           expires: CLOCK_MONOTONIC ns (bpf_ktime_get_ns); valid while now < expires
//	counters   per-CPU array, one entry, per Program
//	           value {u64 forwarded; u64 forwarded_bytes; u64 slow}   24 bytes
//	xsks_map   XSKMAP, queues entries, per Program (the AF_XDP sockets)
//	qidconf_map array, queues entries, per Program; unused by the program,
//	           kept so that asavie/xdp's Register/Unregister work unchanged
//
// Updates replace whole map elements (the kernel swaps them under RCU),
// so a running program never sees half of a route or neighbour.
//
// # Frame length
//
// ForwardedBytes counts whole frames. The program reads their length
// with bpf_xdp_get_buff_len (Linux 5.18); if the kernel refuses that
// program, NewProgram loads a variant that subtracts the packet
// pointers, which the verifier allows only with CAP_PERFMON or
// CAP_SYS_ADMIN.
//
// # Who closes what
//
// Tables are closed by their owner, with Tables.Close, independently of
// the programs: a loaded program keeps its own reference to the maps, so
// it keeps forwarding with the last routes and neighbours after
// Tables.Close, which only ends updates. To stop forwarding, detach or
// close the programs.
//
// A Program owns its program, XSKMAP, queue map and counter map.
// Program.XDP returns an asavie/xdp *xdp.Program sharing the program and
// the two queue maps: xdp.Program.Close closes those three, and
// Program.Close closes all four. Both may be called, in either order;
// closing twice is harmless. Counters keeps working until Program.Close.
package fastpath
