/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Layouts of the fast path's map keys and values. The Go side's types
 * are generated from these structs by bpf2go (-type, objects.go), but
 * for the IPv4 flow key and value, kept by hand in flows.go;
 * TestLayouts checks every type's size and offsets against the
 * compiled object's BTF.
 *
 * Integers that are not addresses are in host byte order; IPv4
 * addresses, ports and checksum deltas are kept as their wire bytes
 * (declared as __u32/__u16 so that one load moves them).
 */
#ifndef JUNCTION_FASTPATH_H
#define JUNCTION_FASTPATH_H

#include "bpf_defs.h"

/*
 * The IPv4 routes: a DIR-24-8 table (dir4.go writes it in place through
 * a shared mapping). fp_tbl24 has an entry for every /24, fp_tbl8 256
 * entries for each /24 that holds longer prefixes (a group); an entry is
 * 0 (no route), a next hop's index in fp_nexthops, or DIR4_GROUP | the
 * group's number. Four 16-bit entries to an array element: an array's
 * elements take at least 8 bytes each.
 */
#define DIR4_PER_ELEM 4
#define DIR4_GROUP 0x8000

struct dir4_entries {
	__u16 e[DIR4_PER_ELEM];
};

#define ROUTE_F_LOCAL 1

/* fp_nexthops (array) value: what a route forwards to. */
struct route {
	__u32 ifindex;
	__u32 gateway; /* wire order; 0 = directly connected */
	__u32 flags;   /* ROUTE_F_LOCAL */
};

/* fp_neighbors (hash) key and value. */
struct neigh_key {
	__u32 ifindex;
	__u32 ip; /* wire order */
};

struct neigh {
	__u8 eth[12]; /* destination then source MAC, as in the Ethernet header */
	__u32 mtu;     /* the output's MTU: longer datagrams take the slow path; 0 = no limit */
	__u64 expires; /* CLOCK_MONOTONIC ns; valid while now < expires */
};

/* fp_counters (per-CPU array, one entry). */
struct counters {
	__u64 forwarded;
	__u64 forwarded_bytes;
	__u64 slow;
};

/* fp_flows (hash) key and value. */
struct flow_key {
	__u32 ifindex; /* input */
	__u32 src;     /* wire order */
	__u32 dst;
	union {
		struct {
			__u16 sport; /* wire order; ICMP echo: the identifier in both */
			__u16 dport;
		};
		/* Both, written with one 32-bit store: the hash reads the
		 * key in 32-bit words, and a word written as two halves
		 * cannot be forwarded from the store buffer (a stall that
		 * cost ~10 ns per flow hit). */
		__u32 ports;
	};
	__u32 proto;
};

struct flow {
	__u32 ifindex; /* output */
	__u32 slot;    /* fp_flow_stats index */
	__u8 eth[12];  /* destination then source MAC */
	__u32 src;     /* the rewritten tuple, wire order */
	__u32 dst;
	union {
		struct {
			__u16 sport; /* ICMP echo: the new identifier */
			__u16 dport;
		};
		__u32 ports;
	};
	__u16 ip_delta; /* RFC 1624 checksum deltas, wire order */
	__u16 l4_delta;
	__u8 ttl_dec;
	__u8 icmp_type;
	__u16 mtu; /* the output's MTU: longer datagrams take the slow path; 0 = no limit */
	__u32 gen; /* the flow generation the entry applies under */
};

/* fp_flow_gen (array, one entry). */
struct flow_gen {
	__u32 gen;   /* current flow generation */
	__u32 count; /* installed flows; 0: no flow lookup */
};

/* fp_flow_stats (array, mmapable, one entry per flow slot). */
struct flow_stats {
	__u64 packets;
	__u64 bytes; /* IPv4 total lengths */
};

/* fp_egress (hash, key u32 ifindex). */
struct egress {
	__u32 disabled;
	__s32 err; /* the last refused redirect's errno, negative */
	__u32 via; /* VIA_*: how frames leave through this output */
};

/* How a forwarded frame reaches its output: XDP_REDIRECT through
 * fp_devmap, or XDP_PASS with the output in the frame's metadata
 * (struct fp_meta) for the input's TC ingress program (junction_fp_tc),
 * which redirects the skb out of it (bpf_redirect) or into its veth
 * peer's ingress (bpf_redirect_peer). */
#define VIA_XDP 0
#define VIA_TC 1
#define VIA_TC_PEER 2

/* The metadata the XDP program leaves in front of a frame for the TC
 * program. */
#define FP_META_MAGIC 0x4a4e4354 /* "JNCT" */
struct fp_meta {
	__u32 magic;
	__u32 ifindex; /* output */
	__u32 via;     /* VIA_TC or VIA_TC_PEER */
};

/*
 * IPv6 (fastpath.c, fastpath6): its own maps, so that the IPv4 ones
 * keep their layouts. Addresses are their 16 wire bytes, kept as four
 * words so that keys are written in whole 32-bit stores.
 */

/* fp_routes6 (LPM trie) key and value. */
struct route6_key {
	__u32 prefixlen;
	__u32 addr[4]; /* wire order */
};

struct route6 {
	__u32 ifindex;
	__u32 flags;      /* ROUTE_F_LOCAL */
	__u32 gateway[4]; /* wire order; :: = directly connected */
};

/* fp_neighbors6 (hash) key and value. */
struct neigh6_key {
	__u32 ifindex;
	__u32 ip[4]; /* wire order */
};

struct neigh6 {
	__u8 eth[12];  /* destination then source MAC */
	__u32 mtu;     /* the output's MTU: longer datagrams take the slow path */
	__u64 expires; /* CLOCK_MONOTONIC ns; valid while now < expires */
};

/* fp_flows6 (hash) key and value: TCP and UDP only, no address or port
 * rewrite (no NAT for IPv6): Ethernet header and hop limit. */
struct flow6_key {
	__u32 ifindex; /* input */
	__u32 src[4];  /* wire order */
	__u32 dst[4];
	__u32 ports; /* source then destination port, wire order */
	__u32 proto;
};

struct flow6 {
	__u32 ifindex; /* output */
	__u32 slot;    /* fp_flow_stats index (shared with IPv4's flows) */
	__u8 eth[12];  /* destination then source MAC */
	__u32 mtu;     /* the output's MTU */
	__u8 hop_dec;
	__u8 pad[3];
	__u32 gen; /* the flow generation the entry applies under */
};

/*
 * Policing of traffic for the router (fastpath.c, local_class and
 * police_pass; doc.go, "Traffic for the router").
 */

/* fp_local (hash, shared): the router's own addresses, IPv4 ones as
 * IPv4-mapped IPv6 (::ffff:a.b.c.d), wire order; value unused (u32). */
struct local_key {
	__u32 addr[4];
};

/* fp_police (per-CPU array, one entry per class): a class's bucket on
 * one CPU and what it passed and dropped. */
#define POLICE_ECHO 0  /* ICMP and ICMPv6 echo requests */
#define POLICE_SYN 1   /* TCP SYN without ACK */
#define POLICE_UDP 2   /* UDP */
#define POLICE_OTHER 3 /* everything else for the router but ARP and ND */
#define POLICE_CLASSES 4

struct police {
	__u64 tat;     /* CLOCK_MONOTONIC ns: the bucket's theoretical arrival time (GCRA) */
	__u64 passed;  /* frames let on to the slow path */
	__u64 dropped; /* frames dropped beyond the rate */
};

#endif
