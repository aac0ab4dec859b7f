// Package fastpath is the in-kernel fast path of the afxdp driver: an
// XDP program, written in C (bpf/fastpath.c) and compiled ahead of time
// into an object this package embeds (no C compiler needed to build
// Junction), that forwards plain IPv4 and IPv6 packets itself when their route
// and next-hop MAC address are known, and hands every other frame to the
// device's AF_XDP sockets exactly as the usual AF_XDP program does.
// Junction's elements keep the slow path: everything unusual (options,
// TTL expiry, local delivery, ARP, unknown neighbours, hairpins...) goes
// to them, so the fast path only has to be right for the common case and
// never has to generate packets.
//
// It also applies per-flow rewrites that userspace installs (Junction's
// FastTrack element, offloading established flows): NAT of addresses
// and ports, TTL decrement, Ethernet header, output interface.
//
// # Flows
//
// A frame that passes checks 1-3 below is a flow candidate if it is not
// a fragment (MF and the fragment offset zero; DF does not matter),
// 28 <= total length and 14 + total length <= frame length, and it is
//
//   - TCP with total length >= 40 and flags ACK without SYN, FIN or RST;
//   - UDP; or
//   - ICMP echo request (8) or reply (0), whose identifier serves as both
//     ports.
//
// Its key {ingress ifindex, protocol, source, destination, source port,
// destination port} is looked up in the flow map. A candidate whose key
// is missing or whose gen is not the current flow generation, and every
// frame that is no candidate, continues with the route rules, unchanged. A hit takes the slow path if it is ICMP of the
// other echo type than the entry's, if TTL <= the entry's TTL
// decrement, or if the total length exceeds the entry's MTU (the
// output's; 0: no limit), whose fragmentation needed the slow path's
// CheckMTU sends; otherwise the program rewrites it exactly as FastTrack
// would: TTL minus the decrement; source, destination and ports (ICMP:
// the identifier) set to the entry's; the IPv4 header checksum and the
// L4 checksum (TCP and UDP over the pseudo-header and ports, ICMP over
// the identifier) patched by RFC 1624 eqn. 3 with deltas SetFlow
// computed; a UDP checksum of 0 (none) stays 0 and a computed 0 is sent
// as 0xffff; an ICMP identifier that does not change leaves the checksum
// alone (all of this only if the entry's output is enabled in fp_egress,
// checked before any write; otherwise the slow path, unchanged). Then the
// entry's MACs, counts (the flow's slot: one packet and the IPv4 total
// length, atomically; the per-CPU counters as for a routed frame) and
// bpf_redirect_map(fp_devmap, entry's ifindex, XDP_DROP). The flow path verifies no
// checksum and applies no martian, route or neighbour rule: FastTrack
// does not either, and the entry was learned from a frame that passed
// them.
//
// # Per frame
//
// A frame that no flow entry takes is forwarded only if all of these
// hold:
//
//  1. it has at least 34 bytes (Ethernet 14 + IPv4 20);
//  2. its Ethernet destination is the device's own MAC (compiled into
//     the program) and its EtherType 0x0800 (no VLAN tags);
//  3. the IPv4 header starts with 0x45 (version 4, no options);
//  4. 20 <= total length and 14 + total length <= frame length
//     (Ethernet padding after the datagram is allowed);
//     and fragment offset × 8 + total length <= 65,535 (a fragment that
//     could only reassemble beyond the largest datagram is the slow
//     path's, whose CheckIPHeader drops it);
//  5. the header checksum verifies;
//  6. TTL > 1;
//  7. neither the source's nor the destination's first octet is 0,
//     127 or >= 224 (RFC 1812 5.3.7 martians, loopback, multicast,
//     broadcast);
//  8. the longest-prefix route of the destination exists and is not
//     Local;
//  9. the neighbour {route's ifindex, next hop} exists and has not
//     expired (next hop = the route's gateway, or the destination for a
//     directly connected route), and the total length is at most its
//     MTU (the output's, SetNeighborMTU; 0: no limit): a longer datagram
//     is the slow path's, whose CheckMTU sends fragmentation needed or
//     drops it, counted (no DF);
//  10. the route's interface is not the one the frame came in on;
//  11. the route's interface is enabled in fp_egress (see below).
//
// Forwarding decrements TTL, patches the header checksum incrementally
// (RFC 1624 eqn. 3, whose result equals a full recompute, 0x0000 and
// not 0xffff included), writes the neighbour's destination and source
// MACs, counts the frame and returns bpf_redirect_map(fp_devmap,
// ifindex, XDP_DROP) (a device removed meanwhile: dropped), or, for an
// output reached through TC (below), XDP_PASS with the output in the
// frame's metadata.
//
// # IPv6
//
// A frame of EtherType 0x86DD (checked only after the IPv4 test fails,
// so IPv4 frames pay nothing for it) is forwarded only if all of these
// hold, and otherwise takes the slow path unchanged:
//
//  1. it has at least 54 bytes (Ethernet 14 + the fixed header 40);
//  2. its Ethernet destination is the device's own MAC;
//  3. the version is 6;
//  4. 14 + 40 + payload length <= frame length (padding allowed);
//  5. the next header is TCP (6; payload length >= 20) or UDP (17;
//     >= 8): extension headers (hop-by-hop, routing, fragments,
//     destination options, ...), ICMPv6 (neighbour discovery included)
//     and every other protocol take the slow path;
//  6. hop limit > 1;
//  7. neither source nor destination is multicast (ff00::/8),
//     link-local (fe80::/10) or in ::/64 (unspecified, loopback,
//     IPv4-mapped and -compatible);
//
// then either a flow entry applies (below), or:
//
//  8. the longest-prefix route of the destination (routes6) exists and
//     is not Local;
//  9. its interface is not the one the frame came in on;
//  10. the neighbour {route's ifindex, next hop} (neighbors6) exists and
//     has not expired, and 40 + payload length <= its MTU (the output's:
//     a longer datagram is the slow path's, whose CheckMTU sends packet
//     too big; a redirect would be dropped silently by the output);
//  11. the route's interface is enabled in fp_egress.
//
// Forwarding decrements the hop limit (IPv6 has no header checksum),
// writes the neighbour's MACs and counts and redirects the frame as for
// IPv4.
//
// IPv6 flows (FastTrack's): a TCP frame with ACK and without SYN, FIN or
// RST, or a UDP frame, that passed 1-7, is looked up by {ingress
// ifindex, protocol, source, destination, ports} in flows6 (only while
// fp_flow_gen's count, which covers both families, is not 0). An entry
// of the current generation is a hit: it takes the slow path unless hop
// limit > the entry's decrement, 40 + payload length <= the entry's MTU
// and its output is enabled; otherwise the hop limit is lowered by the
// decrement, the MACs written, the flow's slot counted (one packet, 40 +
// payload length bytes) and the frame redirected. There is no address
// or port translation for IPv6, so no checksum changes. A miss continues
// with 8-11.
//
// # Outputs and refused redirects
//
// The kernel queues a redirected frame after the program returns, and a
// device that cannot take it (a veth whose peer runs neither an XDP
// program nor GRO: its XDP features lack ndo_xdp_xmit) refuses it there;
// the program's return value cannot tell. On Linux 6.18 that refusal
// happens at enqueue (-EOPNOTSUPP) and shows in no veth statistic
// (ethtool -S has no xdp_xmit_errors for it), only in the
// xdp:xdp_redirect_err tracepoint. So outputs are explicit: AddEgress
// enters an ifindex into fp_devmap (through which the program redirects,
// so a refusal carries that map's id) and fp_egress; the program takes
// the slow path for an output missing from fp_egress or disabled there.
// WatchRedirects attaches a raw-tracepoint program to
// xdp:xdp_redirect_err that, for events of fp_devmap's id only, marks the
// output disabled with the errno and counts the frame (fp_egress_errs):
// the first refused frame is lost, the next ones take the slow path.
// XmitProbe asks the kernel beforehand, losslessly, whether a device has
// ndo_xdp_xmit. Userspace (the afxdp driver) polls both and re-enables
// with SetEgress. Frames the kernel drops later, at flush time (a full
// ring: congestion), are not counted here (a veth counts them in its
// tx_dropped).
//
// # Outputs reached through TC
//
// SetEgressVia(ifindex, ViaTCPeer or ViaTC) makes the program hand a
// frame forwarded to that output up instead: it checks and rewrites it
// as always, puts struct fp_meta {magic, output ifindex, via} in front of
// it (bpf_xdp_adjust_meta) and returns XDP_PASS. AttachTC attaches
// junction_fp_tc to the input's TC ingress (tcx, Linux 6.6); for a frame
// carrying that metadata it returns bpf_redirect_peer(ifindex) (into the
// output veth's peer's ingress: no backlog queue, no XDP ring, nothing
// asked of the peer) or bpf_redirect(ifindex) (out of the output), and
// for any other frame TC_ACT_UNSPEC (on to the stack). Every input must
// have it before any output is reached this way, or forwarded frames
// would climb the input's stack and be lost. On a veth this beats an XDP
// redirect into it: that needs the peer in NAPI mode (an XDP program or
// GRO on), goes through its 256-frame ring, and costs a copy more
// (benchmarks/e2e-tcp.md). A driver without metadata support makes
// bpf_xdp_adjust_meta fail; the frame is then redirected by XDP as for
// other outputs.
//
// # The fast path in TC
//
// NewTCProgram loads the same rules as a TC ingress program
// (junction_tcfp, attached with Program.AttachTCX: tcx, Linux 6.6) for
// a device that runs no XDP program at all: one C body (fastpath() in
// bpf/fastpath.c) compiled for both contexts, reading the same Tables.
// A frame it forwards (route or flow, IPv4 or IPv6, every check above)
// it rewrites as the XDP program does and sends on itself:
// bpf_redirect_peer(output) for an output registered ViaTCPeer (into a
// veth's peer's ingress: no backlog queue, nothing asked of the peer)
// and bpf_redirect(output) for any other (its qdisc and driver). Every
// other frame is counted as slow and goes on (TC_ACT_UNSPEC) to the next
// tcx program or the stack, where the slow path takes it. What differs
// from XDP:
//
//   - frame length: an skb may carry most of its bytes outside its
//     linear part (a GSO packet of up to 64 KiB from a local TCP sender
//     through a veth), so "the whole datagram in the frame" is checked
//     against skb->len, and the header reads against the linear part;
//   - MTU: bpf_check_mtu (Linux 5.12) against the output device's MTU
//     as it is at that moment, segment by segment for a GSO packet (so
//     a super-packet is forwarded whole, as Linux's forwarding does),
//     instead of the MTU the neighbour or flow entry carries: a device
//     whose MTU is lowered at run time sends longer datagrams to the
//     slow path from the next frame on, and an output that no longer
//     exists (its veth pair deleted with its peer's namespace) fails the
//     check, so its frames take the slow path too;
//   - the L4 checksum of a flow's NAT: an skb a local socket sent
//     carries CHECKSUM_PARTIAL (the field holds the pseudo-header's sum
//     and is completed by the device or the stack later), which the
//     program cannot tell from a complete one; bpf_l4_csum_replace can,
//     so the program computes the addresses' and the ports' checksum
//     differences and leaves them to it (BPF_F_PSEUDO_HDR for the
//     addresses; BPF_F_MARK_MANGLED_0 for UDP, whose 0 means none),
//     after its direct writes. The IPv4 header checksum is patched
//     directly as in XDP: it is always complete, and patching it with
//     the TTL and addresses keeps the header's sum, so a
//     CHECKSUM_COMPLETE skb's csum stays right;
//   - counters: ForwardedBytes counts skb->len (a GSO packet's whole
//     length).
//
// On a kernel without bpf_redirect_peer (kfeature, or refused by the
// verifier) NewTCProgram loads junction_tcfp_nopeer, which reaches every
// output with bpf_redirect (into a veth: through its peer's backlog
// queue, slower but taken whatever the peer runs).
//
// Every other frame takes the slow path: it is counted and the program
// returns bpf_redirect_map(xsks, rx_queue_index, XDP_PASS), so a queue
// with a registered AF_XDP socket delivers it there and a queue without
// one passes it to the kernel's stack instead of dropping it.
//
// # Traffic for the router
//
// A program loaded with a Police (the XDP program, NewPolicedProgram,
// and the TC one, NewPolicedTCProgram; the afxdp and afpacket drivers'
// local_rate and local_burst) polices, on the way to the slow path, the
// frames whose destination is one of the router's addresses (fp_local,
// Tables.SetLocal: the fast-path devices' addresses), so that a flood
// of them is dropped before it is copied to the socket (the AF_XDP
// socket; for the TC program, the packet sockets the stack serves after
// TC), fills the RX ring and takes the graph's time, instead of
// crowding out transit traffic there. Frames the program forwards (routes, flows)
// never meet the rule; nor do frames for other destinations. The frame
// gets a class (local_class): echo (ICMP echo request, ICMPv6 echo
// request), syn (TCP with SYN and without ACK), udp, other (the rest:
// established TCP, other ICMP, other protocols, IPv4 with options,
// fragments after the first); ARP and IPv6 neighbour discovery (ICMPv6
// types 133-137) have none and are never policed. Each class has a
// token bucket on each CPU (fp_police, a per-CPU array: no atomics, no
// shared cache line; the rate the graph may see is the rate times the
// CPUs receiving), kept as GCRA's theoretical arrival time: a frame
// passes if the bucket's tat is at most (burst-1)×interval ahead of now,
// and moves it one interval (1e9/rate ns) on; beyond, XDP_DROP (TC:
// TC_ACT_SHOT) and the class's dropped counter (Counters.Policed). Rate
// and burst are .rodata constants: with Police{} the verifier removes
// the rule (the translated program is as long as without it), and
// changing them takes a new program. A frame the TC program sees with
// its VLAN tag taken out by the kernel is not policed (the XDP program
// sees the tag and does not police it either). Cost (BenchmarkPolice): none measurable
// for forwarded frames; for frames to the slow path one fp_local
// lookup, and for frames for the router a clock read and the bucket.
//
// # Maps
//
// Integers that are not addresses are in host byte order; IPv4
// addresses are their 4 wire bytes.
//
//	tbl24      array, BPF_F_MMAPABLE, shared (Tables), 2^22 elements
//	           value {u16 e[4]}: an entry for every /24 (a /24's is
//	           element a>>10, e[(a>>8)&3] of the host-order address a)  8 bytes
//	           entry 0 = no route; DIR4_GROUP (0x8000) | g = group g of
//	           tbl8; else a next hop's index in nexthops
//	tbl8       array, BPF_F_MMAPABLE, shared (Tables), groups*64 elements
//	           value as tbl24's: group g's 256 entries (one per address
//	           of its /24) from element g*64; groups: one per route up
//	           to 32,760
//	           Both written in place by the process through a shared
//	           mapping (dir4.go: DIR-24-8, as the graph's table)
//	nexthops   array, shared (Tables), 32,768 entries
//	           value {u32 ifindex; u8 gateway[4]; u32 flags}          12 bytes
//	           gateway 0.0.0.0 = directly connected; flags bit 0 =
//	           Local (entry 1: the slow path, for local routes and /24s
//	           pinned to it)
//	neighbors  hash, shared (Tables)
//	           key   {u32 ifindex; u8 ip[4]}                          8 bytes
//	           value {u8 dst[6]; u8 src[6]; u32 pad; u64 expires}     24 bytes
//	           expires: CLOCK_MONOTONIC ns (bpf_ktime_get_ns); valid while now < expires
//	counters   per-CPU array, one entry, per Program
//	           value {u64 forwarded; u64 forwarded_bytes; u64 slow}   24 bytes
//	flows      hash, shared (Tables), maxFlows entries (preallocated)
//	           key   {u32 ifindex; u8 src[4]; u8 dst[4];
//	                  u8 sport[2]; u8 dport[2]; u32 proto}            20 bytes
//	           value {u32 ifindex; u32 slot; u8 eth_dst[6]; u8 eth_src[6];
//	                  u8 src[4]; u8 dst[4]; u8 sport[2]; u8 dport[2];
//	                  u8 ip_delta[2]; u8 l4_delta[2]; u8 ttl_dec;
//	                  u8 icmp_type; u8 pad[2]; u32 gen}               44 bytes
//	           key ifindex: input; value ifindex: output; ports in
//	           wire order (ICMP: the identifier in both key ports and in
//	           the value's sport); the deltas are Σ(~m + m') over the
//	           changed 16-bit words, folded to 16 bits, in wire order
//	           (0 = leave the checksum alone, ICMP only)
//	flow_stats array, BPF_F_MMAPABLE, shared (Tables), maxFlows entries
//	           key   u32 slot
//	           value {u64 packets; u64 bytes}                         16 bytes
//	           bytes: the IPv4 total lengths; mapped read-only into the
//	           process, read by FlowCounters with atomic loads
//	flow_gen   array of one {u32 gen; u32 count}, shared (Tables):
//	           SetFlowGeneration's value (a flow entry whose gen differs
//	           is a miss, so one update retires every older entry at
//	           once) and the number of installed flows (0: the program
//	           skips the flow lookup)
//	routes6    LPM trie, shared (Tables), as many entries as maxRoutes
//	           key   {u32 prefixlen; u8 addr[16]}                     20 bytes
//	           value {u32 ifindex; u32 flags; u8 gateway[16]}         24 bytes
//	           gateway :: = directly connected; flags as routes'
//	neighbors6 hash, shared (Tables), as many entries as neighbors
//	           key   {u32 ifindex; u8 ip[16]}                         20 bytes
//	           value {u8 dst[6]; u8 src[6]; u32 mtu; u64 expires}     24 bytes
//	flows6     hash, shared (Tables), maxFlows entries (preallocated)
//	           key   {u32 ifindex; u8 src[16]; u8 dst[16];
//	                  u8 sport[2]; u8 dport[2]; u32 proto}            44 bytes
//	           value {u32 ifindex; u32 slot; u8 eth_dst[6];
//	                  u8 eth_src[6]; u32 mtu; u8 hop_dec; u8 pad[3];
//	                  u32 gen}                                        32 bytes
//	           slots are flow_stats', shared with flows (one pool of
//	           maxFlows); bytes counted are IPv6 datagram lengths
//	fp_devmap  DEVMAP_HASH, shared (Tables), 4096 entries
//	           key u32 ifindex; value u32 ifindex (the device)
//	fp_egress  hash, shared (Tables), 4096 entries
//	           key   u32 ifindex
//	           value {u32 disabled; i32 err; u32 via}                12 bytes
//	           err: the last refusal's errno (negative), from the watcher;
//	           via: how frames leave through it (Via)
//	fp_egress_errs hash, shared (Tables): key u32 ifindex, value u64
//	           frames the kernel refused (the watcher adds atomically)
//	fp_local   hash, shared (Tables), 1024 entries: the router's addresses
//	           key   {u8 addr[16]} (IPv4: ::ffff:a.b.c.d)             16 bytes
//	           value u32, unused
//	fp_police  per-CPU array, 4 entries (classes echo, syn, udp, other),
//	           per Program (XDP or TC)
//	           value {u64 tat; u64 passed; u64 dropped}               24 bytes
//	           tat: CLOCK_MONOTONIC ns, the bucket's theoretical arrival time
//	xsks_map   XSKMAP, queues entries, per Program (the AF_XDP sockets)
//	qidconf_map array, queues entries, per Program; unused by the program,
//	           kept so that asavie/xdp's Register/Unregister work unchanged
//	.rodata    array of one, frozen, per loaded program (created by the
//	           loader): the program's constants, mac_lo and mac_hi (the
//	           device's MAC) and police_interval and police_burst
//	           (ns; 0: no policing), or devmap_id (the watcher)
//
// Updates replace whole map elements (the kernel swaps them under RCU),
// so a running program never sees half of a route, neighbour or flow.
//
// Flow slots: SetFlow gives a new key a free slot (the last freed
// first) and zeroes its counters before installing the entry; it fails
// with ErrFlowsFull when all maxFlows slots are in use. Replacing an
// installed key keeps its slot and zeroes it, so a replacement never
// needs a free slot. DeleteFlow removes the entry and frees the slot; a
// key that is not installed frees nothing. A frame the program is
// handling while its entry is deleted or replaced may still be counted
// in the old slot.
//
// # Frame length
//
// ForwardedBytes counts whole frames, flow hits included (a flow's own
// counters count IPv4 total lengths instead, as FastTrack does). The program reads their length
// with bpf_xdp_get_buff_len (Linux 5.18); if the kernel refuses that
// program, NewProgram loads a variant that subtracts the packet
// pointers, which the verifier allows only with CAP_PERFMON or
// CAP_SYS_ADMIN.
//
// # Building, regenerating, extending
//
// The sources are bpf/fastpath.c (the XDP program junction_fp, its
// variant junction_fp_ptrlen for kernels before 5.18, the redirect
// watcher junction_fp_err, the TC ingress program junction_fp_tc and
// the fast path in TC, junction_tcfp), bpf/fastpath.h (the map layouts) and
// bpf/bpf_defs.h (the few kernel UAPI numbers and macros they need,
// written out: no kernel or libbpf headers). cilium/ebpf's bpf2go
// compiles them with clang for little-endian hosts (-target bpfel:
// amd64, arm64 and the other little-endian GOARCHes; big-endian hosts
// get an error from NewProgram and run without a fast path) into
// fastpath_bpfel.o and fastpath_bpfel.go, which embeds it. Both are
// committed, so go build needs no clang. After changing anything in
// bpf/, regenerate and commit the result:
//
//	apt-get install clang llvm   # Debian: clang 14, llvm-strip
//	go generate ./drivers/afxdp/fastpath
//
// go generate also records the compiler (bpf/clang-version).
// TestObjectsUpToDate recompiles into a temporary directory with the
// same command and requires the committed bytes: bpf2go strips DWARF
// and maps the source directory away, so the same sources and clang
// version give the same bytes; with another clang version the test
// skips and says so (CI installs Debian's clang, .ci/run). The Go types
// of the map keys and values are bpf2go's too (its -type flags in
// objects.go: fastpathRoute for struct route, ...), generated from the
// object's BTF into fastpath_bpfel.go, but for the IPv4 flow key and
// value, whose anonymous struct in a union bpf2go cannot declare
// (flows.go keeps their offsets). TestLayouts checks every one against
// the object's BTF (even where TestObjectsUpToDate skips), and
// TestOtherTypes that types_other.go holds the same types for the
// big-endian hosts fastpath_bpfel.go is not built on (go test -run
// TestOtherTypes -update rewrites it after go generate).
//
// Loading (objects.go): the object is parsed once; each NewProgram and
// WatchRedirects copies it, sets its constants (the device's MAC,
// fp_devmap's id: volatile const globals, which become a frozen .rodata
// map per program that the verifier reads as constants) and replaces
// every map the C file declares with the one the Go side created
// (NewTables, NewProgram): the C declarations' max_entries are
// placeholders, while their type, key and value sizes and flags must
// equal the Go map's (the load fails otherwise).
//
// To extend the program (a new rule, a rewrite, a protocol):
//
//   - keep the rule in bpf/fastpath.c and its description in this file
//     together; every check must precede the first write, so that a
//     frame that takes the slow path reaches the graph unchanged;
//   - a new map: declare it in bpf/fastpath.c (struct in
//     bpf/fastpath.h), create it on the Go side and add it to the
//     replacements in program() (or the watcher's); add -type for its
//     key and value structs to objects.go's go:generate line, and the
//     map to TestLayouts;
//   - a new constant: a volatile const global, set in program();
//   - every packet access needs a bounds check against data_end that
//     the verifier can follow; helper calls that take a map must each
//     see one map (TestOneMapPerCallSite: a call site reached with two
//     maps loses the verifier's inlining, which is why bpf2go runs
//     clang with -mllvm -enable-tail-merge=false); hash keys are best
//     written in whole 32-bit words (flow_key.ports: a word written as
//     two halves and read whole stalls the store buffer);
//   - run go generate, the tests of this package as root (they run
//     the program on frames with BPF_PROG_TEST_RUN against a reference)
//     and BenchmarkRouteHit and BenchmarkFlowHit against the previous
//     object (benchmarks/drivers.md).
//
// # Who closes what
//
// Tables are closed by their owner, with Tables.Close, independently of
// the programs: a loaded program keeps its own reference to the maps, so
// it keeps forwarding with the last routes, neighbours and flows after
// Tables.Close, which only ends updates. To stop forwarding, detach or
// close the programs. Tables.Close also unmaps the flow counters:
// FlowCounters reads zeros after it (never a stale or unmapped page), and
// detaches the redirect watcher: close the Tables after the programs.
//
// A Program owns its program, XSKMAP, queue map and counter map.
// Program.XDP returns an asavie/xdp *xdp.Program sharing the program and
// the two queue maps: xdp.Program.Close closes those three, and
// Program.Close closes all four. Both may be called, in either order;
// closing twice is harmless. Counters keeps working until Program.Close.
package fastpath
