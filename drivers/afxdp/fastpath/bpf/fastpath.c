// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * Junction's in-kernel fast path: the XDP program that forwards plain
 * IPv4 frames (routes, neighbours, offloaded flows) and hands every other
 * frame to the device's AF_XDP sockets, the raw-tracepoint program
 * that notices outputs refusing redirected frames, and the TC ingress
 * program that sends on the frames forwarded through TC; and the same
 * fast path as a TC ingress program (junction_tcfp), for devices that
 * run no XDP program. The rules are documented in doc.go; the map
 * layouts in fastpath.h.
 *
 * Built by bpf2go (go generate ./drivers/afxdp/fastpath) into
 * fastpath_bpfel.o, which is committed: go build needs no C compiler.
 *
 * Every map is created by the Go side (tables.go, program.go) and
 * replaces the declaration here when the program is loaded, so the
 * max_entries below are placeholders; types, key and value sizes and
 * flags must match the Go side's (the loader checks them).
 */
#include "fastpath.h"

char LICENSE[] SEC("license") = "GPL";

/*
 * Constants the Go side sets before loading (.rodata, frozen, so the
 * verifier knows them): the device's own MAC as a 32-bit and a 16-bit
 * load of its bytes read them (host order), and fp_devmap's map id.
 */
volatile const __u32 mac_lo;
volatile const __u16 mac_hi;
volatile const __u32 devmap_id;
/* Policing of traffic for the router (police_pass): the nanoseconds
 * between two frames at the class's rate, 0 for no policing (the
 * verifier then skips it all), and how far ahead of now a bucket may
 * run: (burst - 1) * police_interval. */
volatile const __u64 police_interval;
volatile const __u64 police_burst;

/* Shared by every device's program (Tables). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__type(key, __u32);
	__type(value, struct dir4_entries);
	__uint(max_entries, 1);
	__uint(map_flags, BPF_F_MMAPABLE);
} fp_tbl24 SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__type(key, __u32);
	__type(value, struct dir4_entries);
	__uint(max_entries, 1);
	__uint(map_flags, BPF_F_MMAPABLE);
} fp_tbl8 SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__type(key, __u32);
	__type(value, struct route);
	__uint(max_entries, 1);
} fp_nexthops SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, struct neigh_key);
	__type(value, struct neigh);
	__uint(max_entries, 1);
} fp_neighbors SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, struct flow_key);
	__type(value, struct flow);
	__uint(max_entries, 1);
} fp_flows SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__type(key, __u32);
	__type(value, struct flow_stats);
	__uint(max_entries, 1);
	__uint(map_flags, BPF_F_MMAPABLE);
} fp_flow_stats SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__type(key, __u32);
	__type(value, struct flow_gen);
	__uint(max_entries, 1);
} fp_flow_gen SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_DEVMAP_HASH);
	__type(key, __u32);
	__type(value, __u32);
	__uint(max_entries, 1);
} fp_devmap SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, __u32);
	__type(value, struct egress);
	__uint(max_entries, 1);
} fp_egress SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, __u32);
	__type(value, __u64);
	__uint(max_entries, 1);
} fp_egress_errs SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LPM_TRIE);
	__type(key, struct route6_key);
	__type(value, struct route6);
	__uint(max_entries, 1);
	__uint(map_flags, BPF_F_NO_PREALLOC);
} fp_routes6 SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, struct neigh6_key);
	__type(value, struct neigh6);
	__uint(max_entries, 1);
} fp_neighbors6 SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, struct flow6_key);
	__type(value, struct flow6);
	__uint(max_entries, 1);
} fp_flows6 SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, struct local_key);
	__type(value, __u32);
	__uint(max_entries, 1);
} fp_local SEC(".maps");

/* Each device's own (Program). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__type(key, __u32);
	__type(value, struct counters);
	__uint(max_entries, 1);
} fp_counters SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__type(key, __u32);
	__type(value, struct police);
	__uint(max_entries, POLICE_CLASSES);
} fp_police SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_XSKMAP);
	__type(key, __u32);
	__type(value, __u32);
	__uint(max_entries, 1);
} xsks_map SEC(".maps");

/* Frame offsets: Ethernet, then IPv4 without options. */
#define ETH_LEN 14
#define MIN_LEN (ETH_LEN + 20)
#define OFF_TYPE 12
#define OFF_VER_IHL (ETH_LEN + 0)
#define OFF_TOT_LEN (ETH_LEN + 2)
#define OFF_FRAG (ETH_LEN + 6) /* flags and fragment offset */
#define OFF_TTL (ETH_LEN + 8)
#define OFF_PROTO (ETH_LEN + 9)
#define OFF_CSUM (ETH_LEN + 10)
#define OFF_SRC (ETH_LEN + 12)
#define OFF_DST (ETH_LEN + 16)
#define OFF_L4 (ETH_LEN + 20)

#define PROTO_ICMP 1
#define PROTO_TCP 6
#define PROTO_UDP 17
#define ICMP_ECHO_REPLY 0
#define ICMP_ECHO_REQUEST 8
#define PROTO_ICMP6 58
#define ICMP6_ECHO_REQUEST 128
#define ICMP6_ND_FIRST 133 /* router solicitation, then advertisement, */
#define ICMP6_ND_LAST 137  /* neighbour solicitation, advertisement, redirect */

/* Loads and stores of packet bytes at any offset, in host order: the
 * kernels the fast path runs on allow unaligned packet access, and
 * one's-complement sums do not depend on byte order. */
static __always_inline __u8 ld8(const void *p) { return *(const volatile __u8 *)p; }
static __always_inline __u16 ld16(const void *p) { return *(const volatile __u16 *)p; }
static __always_inline __u32 ld32(const void *p) { return *(const volatile __u32 *)p; }
static __always_inline void st8(void *p, __u8 v) { *(volatile __u8 *)p = v; }
static __always_inline void st16(void *p, __u16 v) { *(volatile __u16 *)p = v; }
static __always_inline void st32(void *p, __u32 v) { *(volatile __u32 *)p = v; }

/* The 12 MAC bytes (destination then source) to the frame's start. */
static __always_inline void set_macs(void *data, const __u8 *eth)
{
	st32(data + 0, ld32(eth + 0));
	st16(data + 4, ld16(eth + 4));
	st16(data + 6, ld16(eth + 6));
	st32(data + 8, ld32(eth + 8));
}

/*
 * RFC 1624 eqn. 3: HC' = ~(~HC + delta), delta being Σ(~m + m') over
 * the changed 16-bit words. Both in host order: a byte swap multiplies
 * a one's-complement sum by 256 modulo 0xffff and keeps 0 and 0xffff
 * apart, so the result is the wire-order one. ~HC + delta <= 0x1fffe:
 * one end-around carry folds it.
 */
static __always_inline __u16 csum_patch(__u16 hc, __u16 delta)
{
	__u32 s = (__u32)(__u16)~hc + delta;
	s = (s & 0xffff) + (s >> 16);
	return (__u16)~s;
}

/*
 * One body, two program types: ctx is the XDP program's struct xdp_md
 * (tc 0) or the TC program's struct __sk_buff (tc 1), and every
 * difference between the two is one of the few functions below, whose
 * tc argument is a constant the compiler folds away.
 */

/* The ingress interface. */
static __always_inline __u32 ctx_ingress(void *ctx, const int tc)
{
	if (tc)
		return ((struct __sk_buff *)ctx)->ingress_ifindex;
	return ((struct xdp_md *)ctx)->ingress_ifindex;
}

/* The frame holds len bytes. An XDP frame is all between data and
 * data_end; an skb may hold most of its bytes outside the linear part
 * (a GSO packet: up to 64 KiB in page fragments), so its length is
 * skb->len, the Ethernet header included at TC ingress. Fixed-offset
 * header reads are bounded against data_end in both. */
static __always_inline int frame_holds(void *ctx, const int tc, void *data, void *data_end, __u32 len)
{
	if (tc)
		return len <= ((struct __sk_buff *)ctx)->len;
	return data + len <= data_end;
}

/* The datagram fits the output's MTU. TC: the kernel's check against
 * out's MTU as it is now, segment by segment for a GSO packet (a whole
 * GSO packet exceeds any MTU; its segments are what the output sends). */
static __always_inline int tc_fits(void *ctx, __u32 out)
{
	__u32 l = 0;

	return bpf_check_mtu(ctx, out, &l, 0, BPF_MTU_CHK_SEGS) == 0;
}

/* The L4 checksum change a TC flow hit leaves for after its writes
 * (bpf_l4_csum_replace): off, the checksum's offset; pseudo, the
 * addresses' difference (a pseudo-header change); diff, the ports' or
 * the ICMP identifier's; flags, BPF_F_MARK_MANGLED_0 for UDP. An skb
 * sent by a local socket (CHECKSUM_PARTIAL: the field holds the
 * pseudo-header's sum, the device or the stack completes it) needs the
 * first only, any other both: the kernel helper knows which it is, the
 * program does not. off 0: none. */
struct l4fix {
	__u32 off;
	__u32 pseudo;
	__u32 diff;
	__u32 flags;
};

/* Σ(~m + m') over the 32-bit words m1 -> n1 and m2 -> n2, folded to 32
 * bits (a checksum difference: 2^16 = 1 modulo 0xffff), or 0 if no
 * word changes. */
static __always_inline __u32 diff32(__u32 m1, __u32 n1, __u32 m2, __u32 n2)
{
	__u64 s = 0;

	if (m1 != n1)
		s += (__u64)(__u32)~m1 + n1;
	if (m2 != n2)
		s += (__u64)(__u32)~m2 + n2;
	s = (s & 0xffffffff) + (s >> 32);
	return (__u32)((s & 0xffffffff) + (s >> 32));
}

/* The L4 checksum change of a flow hit rewriting addresses and ports
 * (TCP, UDP; ICMP's identifier with no pseudo-header), for TC. */
static __always_inline void set_fix(struct l4fix *fix, __u32 off, const struct flow_key *k, const struct flow *f, __u32 flags)
{
	fix->off = off;
	fix->pseudo = diff32(k->src, f->src, k->dst, f->dst);
	fix->diff = diff32(k->ports, f->ports, 0, 0);
	fix->flags = flags;
}

/* fp_egress[ifindex] exists and is enabled (egress.go). */
/* Whether the program may forward to ifindex, and *via how. */
static __always_inline int egress_enabled(__u32 ifindex, __u32 *via)
{
	struct egress *e = bpf_map_lookup_elem(&fp_egress, &ifindex);
	if (!e || e->disabled != 0)
		return 0;
	*via = e->via;
	return 1;
}

enum { FLOW_MISS, FLOW_SLOW, FLOW_HIT };

/* The entry of key, if there is one of the current flow generation. */
/*
 * route4_lookup is the route for dst (wire order) in the DIR-24-8 table
 * (fastpath.h), or 0 for none: one or two array loads and the next
 * hop's, whatever the table's size. Array look-ups are inlined by the
 * verifier (no helper call); the writer (dir4.go) fills a group before
 * an entry points to it and reuses a freed group or next hop only long
 * after, so a frame never reads one half-written.
 */
static __always_inline struct route *route4_lookup(__u32 dst)
{
	__u32 a = fp_htonl(dst), i = a >> 8, k = i / DIR4_PER_ELEM;
	struct dir4_entries *e = bpf_map_lookup_elem(&fp_tbl24, &k);
	__u32 v;

	if (!e)
		return 0;
	v = e->e[i % DIR4_PER_ELEM];
	if (v & DIR4_GROUP) {
		i = (v & ~DIR4_GROUP) << 8 | (a & 0xff);
		k = i / DIR4_PER_ELEM;
		e = bpf_map_lookup_elem(&fp_tbl8, &k);
		if (!e)
			return 0;
		v = e->e[i % DIR4_PER_ELEM];
	}
	if (v == 0)
		return 0;
	return bpf_map_lookup_elem(&fp_nexthops, &v);
}

static __always_inline struct flow *flow_lookup(struct flow_key *key, const struct flow_gen *fg)
{
	struct flow *f = bpf_map_lookup_elem(&fp_flows, key);
	if (!f || f->gen != fg->gen)
		return 0;
	return f;
}

/* A hit may be applied: TTL > the entry's decrement, the datagram
 * within the output's MTU (longer ones: the slow path's CheckMTU sends
 * fragmentation needed), output enabled. */
static __always_inline int flow_usable(void *ctx, const int tc, const struct flow *f, void *data, __u32 tot, __u32 *via)
{
	if (tc)
		return ld8(data + OFF_TTL) > f->ttl_dec && egress_enabled(f->ifindex, via) && tc_fits(ctx, f->ifindex);
	return ld8(data + OFF_TTL) > f->ttl_dec && (f->mtu == 0 || tot <= f->mtu) && egress_enabled(f->ifindex, via);
}

/*
 * The flow path, after checks 1-3 of the route path (frame >= 34 bytes,
 * our MAC, IPv4 without options). A frame that is no candidate, or whose
 * key is not in fp_flows, is a miss (FLOW_MISS: the route rules follow);
 * a hit whose checks fail goes to the slow path unchanged (FLOW_SLOW);
 * a hit is rewritten as FastTrack would, counted in its slot, and its
 * output left in *out (FLOW_HIT). Every check precedes the first write.
 * Each protocol has its own lookup, so that the verifier knows on each
 * path which L4 bytes the frame holds. *via: how to reach the output.
 * TC: the L4 checksum is not written but left in *fix.
 */
static __always_inline int flow_path(void *ctx, const int tc, void *data, void *data_end, __u32 *out, __u32 *via,
				     struct l4fix *fix)
{
	const __u32 min_l4 = 20 + 8; /* UDP header; ICMP echo header; TCP ports */
	const __u32 tcp_min = 20 + 20;
	__u32 zero = 0;
	struct flow_gen *fg = bpf_map_lookup_elem(&fp_flow_gen, &zero);
	struct flow_key key;
	struct flow *f;
	__u32 tot;

	/* No flow installed (a router that offloads none): no lookup. */
	if (!fg || fg->count == 0)
		return FLOW_MISS;
	/* Not a fragment: MF and the fragment offset zero (DF may be set). */
	if (ld16(data + OFF_FRAG) & fp_htons(0x3fff))
		return FLOW_MISS;
	/* min_l4 <= total length, the whole datagram in the frame; the
	 * frame's 14 + min_l4 bytes then checked again, as a constant the
	 * verifier understands. */
	tot = fp_ntohs(ld16(data + OFF_TOT_LEN));
	if (tot < min_l4)
		return FLOW_MISS;
	if (!frame_holds(ctx, tc, data, data_end, ETH_LEN + tot))
		return FLOW_MISS;
	if (data + ETH_LEN + min_l4 > data_end)
		return FLOW_MISS;

	key.ifindex = ctx_ingress(ctx, tc);
	key.src = ld32(data + OFF_SRC);
	key.dst = ld32(data + OFF_DST);

	switch (ld8(data + OFF_PROTO)) {
	case PROTO_TCP:
		/* The whole header present, ACK without SYN, FIN or RST. */
		if (tot < tcp_min)
			return FLOW_MISS;
		if (data + ETH_LEN + tcp_min > data_end)
			return FLOW_MISS;
		if ((ld8(data + OFF_L4 + 13) & 0x17) != 0x10)
			return FLOW_MISS;
		key.ports = ld32(data + OFF_L4);
		key.proto = PROTO_TCP;
		f = flow_lookup(&key, fg);
		if (!f)
			return FLOW_MISS;
		if (!flow_usable(ctx, tc, f, data, tot, via))
			return FLOW_SLOW;
		st32(data + OFF_L4, f->ports);
		if (tc)
			set_fix(fix, OFF_L4 + 16, &key, f, 0);
		else
			st16(data + OFF_L4 + 16, csum_patch(ld16(data + OFF_L4 + 16), f->l4_delta));
		break;

	case PROTO_UDP: {
		__u16 c;

		key.ports = ld32(data + OFF_L4);
		key.proto = PROTO_UDP;
		f = flow_lookup(&key, fg);
		if (!f)
			return FLOW_MISS;
		if (!flow_usable(ctx, tc, f, data, tot, via))
			return FLOW_SLOW;
		st32(data + OFF_L4, f->ports);
		if (tc) {
			set_fix(fix, OFF_L4 + 6, &key, f, BPF_F_MARK_MANGLED_0);
			break;
		}
		/* No checksum (0) stays so; a computed 0 is sent as 0xffff. */
		c = ld16(data + OFF_L4 + 6);
		if (c != 0) {
			c = csum_patch(c, f->l4_delta);
			st16(data + OFF_L4 + 6, c ? c : 0xffff);
		}
		break;
	}

	case PROTO_ICMP: {
		/* Echo request or reply: the identifier is both ports. */
		__u8 type = ld8(data + OFF_L4);
		__u16 id;

		if (type != ICMP_ECHO_REQUEST && type != ICMP_ECHO_REPLY)
			return FLOW_MISS;
		id = ld16(data + OFF_L4 + 4);
		key.ports = (__u32)id << 16 | id; /* one store: see flow_key */
		key.proto = PROTO_ICMP;
		f = flow_lookup(&key, fg);
		if (!f)
			return FLOW_MISS;
		/* The echo type of this direction only. */
		if (ld8(data + OFF_L4) != f->icmp_type)
			return FLOW_SLOW;
		if (!flow_usable(ctx, tc, f, data, tot, via))
			return FLOW_SLOW;
		st16(data + OFF_L4 + 4, f->sport);
		if (tc) {
			/* No pseudo-header: the identifier's difference only. */
			fix->off = OFF_L4 + 2;
			fix->diff = diff32(id, f->sport, 0, 0);
		} else {
			st16(data + OFF_L4 + 2, csum_patch(ld16(data + OFF_L4 + 2), f->l4_delta));
		}
		break;
	}

	default:
		return FLOW_MISS;
	}

	/* Every protocol: TTL, IPv4 header checksum, addresses, MACs. */
	st8(data + OFF_TTL, ld8(data + OFF_TTL) - f->ttl_dec);
	st16(data + OFF_CSUM, csum_patch(ld16(data + OFF_CSUM), f->ip_delta));
	st32(data + OFF_SRC, f->src);
	st32(data + OFF_DST, f->dst);
	set_macs(data, f->eth);

	/* The flow's counters are shared by every CPU: atomic adds. */
	*out = f->ifindex;
	__u32 slot = f->slot;
	struct flow_stats *s = bpf_map_lookup_elem(&fp_flow_stats, &slot);
	if (s) {
		__sync_fetch_and_add(&s->packets, 1);
		__sync_fetch_and_add(&s->bytes, tot);
	}
	return FLOW_HIT;
}

/* IPv6 frame offsets: Ethernet, then the fixed header. */
#define MIN_LEN6 (ETH_LEN + 40)
#define OFF6_VER (ETH_LEN + 0)
#define OFF6_PLEN (ETH_LEN + 4)
#define OFF6_NEXT (ETH_LEN + 6)
#define OFF6_HOP (ETH_LEN + 7)
#define OFF6_SRC (ETH_LEN + 8)
#define OFF6_DST (ETH_LEN + 24)
#define OFF6_L4 (ETH_LEN + 40)

/* A source or destination the kernel never forwards: multicast
 * (ff00::/8), link-local (fe80::/10), and ::/64, which holds the
 * unspecified address, loopback and the IPv4-mapped and -compatible
 * ones. a is the address's first byte. */
static __always_inline int addr6_special(const void *a)
{
	__u8 b0 = ld8(a);

	if (b0 == 0xff)
		return 1;
	if (b0 == 0xfe && (ld8(a + 1) & 0xc0) == 0x80)
		return 1;
	return (ld32(a) | ld32(a + 4)) == 0;
}

/*
 * IPv6 (doc.go, "IPv6"): returns 1 with *out set when the
 * frame was rewritten for forwarding (a flow hit or a route), 0 for the
 * slow path, the frame unchanged. Every check precedes the first write.
 */
static __always_inline int fastpath6(void *ctx, const int tc, void *data, void *data_end, __u32 *out, __u32 *via)
{
	__u32 zero = 0, plen, tot, next;
	__u8 hop;

	/* 1. Ethernet + the fixed IPv6 header present. */
	if (data + MIN_LEN6 > data_end)
		return 0;
	/* 3. Version 6. */
	if ((ld8(data + OFF6_VER) & 0xf0) != 0x60)
		return 0;
	/* 4. The whole datagram in the frame (padding allowed); a payload
	 * length of 0 (a jumbogram, or nothing) is no TCP or UDP. */
	plen = fp_ntohs(ld16(data + OFF6_PLEN));
	tot = 40 + plen;
	if (!frame_holds(ctx, tc, data, data_end, ETH_LEN + tot))
		return 0;
	/* 5. TCP or UDP right after the fixed header: extension headers
	 * (fragments included), ICMPv6 (neighbour discovery included) and
	 * every other protocol take the slow path. The header itself must
	 * be there: UDP's 8 bytes, TCP's 20. */
	next = ld8(data + OFF6_NEXT);
	if (next == PROTO_TCP) {
		if (plen < 20 || data + OFF6_L4 + 20 > data_end)
			return 0;
	} else if (next == PROTO_UDP) {
		if (plen < 8 || data + OFF6_L4 + 8 > data_end)
			return 0;
	} else {
		return 0;
	}
	/* 6. Hop limit about to expire: the slow path sends time exceeded. */
	hop = ld8(data + OFF6_HOP);
	if (hop <= 1)
		return 0;
	/* 7. No multicast, link-local, unspecified, loopback or mapped
	 * source or destination. */
	if (addr6_special(data + OFF6_SRC) || addr6_special(data + OFF6_DST))
		return 0;

	/* Flows: TCP with ACK and without SYN, FIN or RST, and UDP. */
	{
		struct flow_gen *fg = bpf_map_lookup_elem(&fp_flow_gen, &zero);

		if (fg && fg->count != 0 && (next == PROTO_UDP || (ld8(data + OFF6_L4 + 13) & 0x17) == 0x10)) {
			struct flow6_key key;
			struct flow6 *f;

			key.ifindex = ctx_ingress(ctx, tc);
			key.src[0] = ld32(data + OFF6_SRC);
			key.src[1] = ld32(data + OFF6_SRC + 4);
			key.src[2] = ld32(data + OFF6_SRC + 8);
			key.src[3] = ld32(data + OFF6_SRC + 12);
			key.dst[0] = ld32(data + OFF6_DST);
			key.dst[1] = ld32(data + OFF6_DST + 4);
			key.dst[2] = ld32(data + OFF6_DST + 8);
			key.dst[3] = ld32(data + OFF6_DST + 12);
			key.ports = ld32(data + OFF6_L4);
			key.proto = next;
			f = bpf_map_lookup_elem(&fp_flows6, &key);
			if (f && f->gen == fg->gen) {
				/* A hit: hop limit above the decrement, the
				 * datagram within the output's MTU, the output
				 * enabled; otherwise the slow path. */
				if (hop <= f->hop_dec || (!tc && tot > f->mtu) || !egress_enabled(f->ifindex, via))
					return 0;
				if (tc && !tc_fits(ctx, f->ifindex))
					return 0;
				st8(data + OFF6_HOP, hop - f->hop_dec);
				set_macs(data, f->eth);
				*out = f->ifindex;
				__u32 slot = f->slot;
				struct flow_stats *s = bpf_map_lookup_elem(&fp_flow_stats, &slot);
				if (s) {
					__sync_fetch_and_add(&s->packets, 1);
					__sync_fetch_and_add(&s->bytes, tot);
				}
				return 1;
			}
		}
	}

	{
		/* 8. Route: longest prefix match of the destination. */
		struct route6_key rk;
		struct route6 *r;
		struct neigh6_key nk;
		struct neigh6 *n;

		rk.prefixlen = 128;
		rk.addr[0] = ld32(data + OFF6_DST);
		rk.addr[1] = ld32(data + OFF6_DST + 4);
		rk.addr[2] = ld32(data + OFF6_DST + 8);
		rk.addr[3] = ld32(data + OFF6_DST + 12);
		r = bpf_map_lookup_elem(&fp_routes6, &rk);
		if (!r || (r->flags & ROUTE_F_LOCAL))
			return 0;
		/* 10. Not out the way it came in. */
		if (r->ifindex == ctx_ingress(ctx, tc))
			return 0;
		/* 9. Neighbour of the next hop (gateway, or the destination),
		 * not expired; the datagram within its output's MTU. */
		nk.ifindex = r->ifindex;
		if ((r->gateway[0] | r->gateway[1] | r->gateway[2] | r->gateway[3]) != 0) {
			nk.ip[0] = r->gateway[0];
			nk.ip[1] = r->gateway[1];
			nk.ip[2] = r->gateway[2];
			nk.ip[3] = r->gateway[3];
		} else {
			nk.ip[0] = rk.addr[0];
			nk.ip[1] = rk.addr[1];
			nk.ip[2] = rk.addr[2];
			nk.ip[3] = rk.addr[3];
		}
		n = bpf_map_lookup_elem(&fp_neighbors6, &nk);
		if (!n)
			return 0;
		if (bpf_ktime_get_ns() >= n->expires)
			return 0;
		if (!tc && tot > n->mtu)
			return 0;
		/* 11. An output the kernel has not refused. */
		if (!egress_enabled(nk.ifindex, via))
			return 0;
		if (tc && !tc_fits(ctx, nk.ifindex))
			return 0;

		/* Forward: the hop limit (no header checksum in IPv6), MACs. */
		st8(data + OFF6_HOP, hop - 1);
		set_macs(data, n->eth);
		*out = nk.ifindex;
	}
	return 1;
}

/*
 * Traffic for the router (doc.go, "Traffic for the router"): the
 * police class (POLICE_*) of a frame whose destination is one of the
 * router's addresses (fp_local), or -1 for any other frame, and for ARP
 * and IPv6 neighbour discovery (router and neighbour solicitations and
 * advertisements, redirects), which are never policed. IPv4 with
 * options and fragments after the first are POLICE_OTHER: their L4
 * header is not where the class would be read. One fp_local lookup for
 * both families.
 */
static __always_inline int local_class(void *data, void *data_end)
{
	struct local_key k;
	int cls = POLICE_OTHER;
	__u8 p;

	if (data + MIN_LEN > data_end)
		return -1;
	if (ld16(data + OFF_TYPE) == fp_htons(0x0800)) {
		k.addr[0] = 0;
		k.addr[1] = 0;
		k.addr[2] = fp_htonl(0xffff);
		k.addr[3] = ld32(data + OFF_DST);
		if (ld8(data + OFF_VER_IHL) == 0x45 && !(ld16(data + OFF_FRAG) & fp_htons(0x1fff))) {
			p = ld8(data + OFF_PROTO);
			if (p == PROTO_UDP)
				cls = POLICE_UDP;
			else if (p == PROTO_ICMP && data + OFF_L4 + 1 <= data_end && ld8(data + OFF_L4) == ICMP_ECHO_REQUEST)
				cls = POLICE_ECHO;
			else if (p == PROTO_TCP && data + OFF_L4 + 14 <= data_end && (ld8(data + OFF_L4 + 13) & 0x12) == 0x02)
				cls = POLICE_SYN;
		}
	} else if (ld16(data + OFF_TYPE) == fp_htons(0x86dd)) {
		if (data + MIN_LEN6 > data_end)
			return -1;
		k.addr[0] = ld32(data + OFF6_DST);
		k.addr[1] = ld32(data + OFF6_DST + 4);
		k.addr[2] = ld32(data + OFF6_DST + 8);
		k.addr[3] = ld32(data + OFF6_DST + 12);
		p = ld8(data + OFF6_NEXT);
		if (p == PROTO_UDP) {
			cls = POLICE_UDP;
		} else if (p == PROTO_ICMP6 && data + OFF6_L4 + 1 <= data_end) {
			__u8 t = ld8(data + OFF6_L4);

			if (t >= ICMP6_ND_FIRST && t <= ICMP6_ND_LAST)
				return -1;
			if (t == ICMP6_ECHO_REQUEST)
				cls = POLICE_ECHO;
		} else if (p == PROTO_TCP && data + OFF6_L4 + 14 <= data_end && (ld8(data + OFF6_L4 + 13) & 0x12) == 0x02) {
			cls = POLICE_SYN;
		}
	} else {
		return -1;
	}
	if (!bpf_map_lookup_elem(&fp_local, &k))
		return -1;
	return cls;
}

/*
 * Whether class cls's bucket on this CPU lets one more frame on: a
 * token bucket kept as GCRA's theoretical arrival time, tat. A frame
 * passes if tat is at most police_burst ahead of now, and moves tat
 * police_interval on; an idle bucket's tat is now. Per-CPU values:
 * plain read-modify-write.
 */
static __always_inline int police_pass(int cls)
{
	__u32 key = cls;
	struct police *b = bpf_map_lookup_elem(&fp_police, &key);
	__u64 now, tat;

	if (!b)
		return 1;
	now = bpf_ktime_get_ns();
	tat = b->tat;
	if (tat < now)
		tat = now;
	if (tat - now > police_burst) {
		b->dropped++;
		return 0;
	}
	b->tat = tat + police_interval;
	b->passed++;
	return 1;
}

/*
 * The fast path. tc 0: the XDP program (ctx a struct xdp_md); tc 1: the
 * TC ingress program (ctx a struct __sk_buff), which sends forwarded
 * frames on itself and leaves every other one to the stack.
 *
 * XDP: have_buff_len: the frame length comes from bpf_xdp_get_buff_len
 * (Linux 5.18); without it, from data_end - data, which the verifier
 * allows only with CAP_PERFMON (or CAP_SYS_ADMIN). have_meta: outputs
 * reached through TC get the frame with its output in the metadata
 * (bpf_xdp_adjust_meta); without it (a kernel whose verifier refuses
 * that helper in XDP programs) the program never calls it and every
 * output is reached through fp_devmap.
 *
 * TC: peer: an output reached as VIA_TC_PEER gets the frame with
 * bpf_redirect_peer (Linux 5.10); without it, and for every other
 * output, with bpf_redirect.
 */
static __always_inline int fastpath(void *ctx, const int tc, const int have_buff_len, const int have_meta, const int peer)
{
	struct xdp_md *xctx = ctx;
	struct __sk_buff *skb = ctx;
	void *data = tc ? (void *)(long)skb->data : (void *)(long)xctx->data;
	void *data_end = tc ? (void *)(long)skb->data_end : (void *)(long)xctx->data_end;
	__u32 zero = 0, out, tot, s0, d0, via = VIA_XDP;
	struct l4fix fix = {};
	struct counters *c;
	__u64 sum, len;

	/* 0. TC: a frame that came with a VLAN tag has it in the skb, not
	 * in data (the kernel takes it out before TC runs): it belongs to a
	 * trunk, whose VLANs the graph serves (VLANDecap). Forwarded as it
	 * is here it would leave untagged, so it takes the slow path. XDP
	 * sees the tag in data, where the EtherType check below sends it
	 * there. */
	if (tc && skb->vlan_present)
		goto slow;
	/* 1. Ethernet + IPv4 header present: this check is what lets the
	 * verifier accept every fixed-offset access below. */
	if (data + MIN_LEN > data_end)
		goto slow;
	/* 2. Addressed to us, IPv4. */
	if (ld32(data) != mac_lo || ld16(data + 4) != mac_hi)
		goto slow;
	if (ld16(data + OFF_TYPE) != fp_htons(0x0800))
		goto not_ipv4;
	/* 3. Version 4, IHL 5: options take the slow path. */
	if (ld8(data + OFF_VER_IHL) != 0x45)
		goto slow;

	/* The flows: a hit is rewritten and redirected, a miss continues
	 * with the routes. */
	switch (flow_path(ctx, tc, data, data_end, &out, &via, &fix)) {
	case FLOW_HIT:
		goto forward;
	case FLOW_SLOW:
		goto slow;
	}

	/* 4. 20 <= total length and the whole datagram in the frame. */
	tot = fp_ntohs(ld16(data + OFF_TOT_LEN));
	if (tot < 20)
		goto slow;
	if (!frame_holds(ctx, tc, data, data_end, ETH_LEN + tot))
		goto slow;
	/* 4b. A fragment whose offset plus payload reaches beyond 65,535
	 * bytes (it could only reassemble into an oversized datagram, the
	 * ping-of-death shape): the slow path's CheckIPHeader drops it,
	 * counted. */
	if (((__u32)(fp_ntohs(ld16(data + OFF_FRAG)) & 0x1fff) << 3) + tot > 65535)
		goto slow;

	/* 5. Header checksum: the one's-complement sum of the header,
	 * checksum included, must be 0xffff. The sum depends neither on
	 * byte order nor on adding 32-bit instead of 16-bit words
	 * (2^16 = 1 mod 0xffff); three folds bring the < 2^35 sum to 16
	 * bits. */
	sum = (__u64)ld32(data + ETH_LEN + 0) + ld32(data + ETH_LEN + 4) + ld32(data + ETH_LEN + 8) +
	      ld32(data + ETH_LEN + 12) + ld32(data + ETH_LEN + 16);
	sum = (sum & 0xffff) + (sum >> 16);
	sum = (sum & 0xffff) + (sum >> 16);
	sum = (sum & 0xffff) + (sum >> 16);
	if (sum != 0xffff)
		goto slow;

	/* 6. TTL about to expire: the slow path sends time exceeded. */
	if (ld8(data + OFF_TTL) <= 1)
		goto slow;

	/* 7. Martians (RFC 1812 5.3.7): source and destination 0/8, 127/8
	 * and 224/3 (multicast, broadcast): the graph's CheckIPHeader
	 * counts and drops them. */
	s0 = ld8(data + OFF_SRC);
	if (s0 == 0 || s0 == 127 || s0 >= 224)
		goto slow;
	d0 = ld8(data + OFF_DST);
	if (d0 == 0 || d0 == 127 || d0 >= 224)
		goto slow;

	{
		/* 8. Route: longest prefix match of the destination. */
		__u32 dst = ld32(data + OFF_DST);
		struct route *r = route4_lookup(dst);
		struct neigh_key nk;
		struct neigh *n;

		if (!r || (r->flags & ROUTE_F_LOCAL))
			goto slow;
		/* 10 (checked early, it is cheap). Out the way it came in:
		 * the slow path decides (redirects, ICMP). */
		if (r->ifindex == ctx_ingress(ctx, tc))
			goto slow;
		/* 9. Neighbour of the next hop (gateway, or the destination),
		 * not expired; 9b below. */
		nk.ifindex = r->ifindex;
		nk.ip = r->gateway ? r->gateway : dst;
		n = bpf_map_lookup_elem(&fp_neighbors, &nk);
		if (!n)
			goto slow;
		if (bpf_ktime_get_ns() >= n->expires)
			goto slow;
		/* 9b. The datagram within the output's MTU: longer ones take
		 * the slow path, whose CheckMTU sends fragmentation needed. */
		if (!tc && n->mtu != 0 && tot > n->mtu)
			goto slow;
		/* 11. An output the kernel has not refused (egress.go). */
		if (!egress_enabled(nk.ifindex, &via))
			goto slow;
		if (tc && !tc_fits(ctx, nk.ifindex))
			goto slow;

		/* Forward. TTL - 1 and the checksum patched to match: the
		 * TTL is the high byte of the big-endian word TTL<<8|protocol,
		 * so ~m + m' = -0x0100, 0xfeff in one's complement. */
		st8(data + OFF_TTL, ld8(data + OFF_TTL) - 1);
		st16(data + OFF_CSUM, csum_patch(ld16(data + OFF_CSUM), fp_htons(0xfeff)));
		set_macs(data, n->eth);
		out = nk.ifindex;
	}

forward:
	/* Whole frames, Ethernet header included. */
	if (tc)
		len = skb->len;
	else if (have_buff_len)
		len = bpf_xdp_get_buff_len(ctx);
	else
		len = (__u64)((long)data_end - (long)data);
	/* Per-CPU values: plain read-modify-write is enough. */
	c = bpf_map_lookup_elem(&fp_counters, &zero);
	if (c) {
		c->forwarded++;
		c->forwarded_bytes += len;
	}
	if (tc) {
		/* A flow hit's L4 checksum, after every direct write (the
		 * helper may move the packet, ending their pointers). */
		if (fix.off) {
			if (fix.pseudo)
				bpf_l4_csum_replace(skb, fix.off, 0, fix.pseudo, BPF_F_PSEUDO_HDR | fix.flags);
			if (fix.diff)
				bpf_l4_csum_replace(skb, fix.off, 0, fix.diff, fix.flags);
		}
		/* Into a veth's peer: its ingress at once, no backlog queue;
		 * out of any other device (its qdisc and driver). */
		if (peer && via == VIA_TC_PEER)
			return bpf_redirect_peer(out, 0);
		return bpf_redirect(out, 0);
	}
	/* An output reached through TC: the frame goes up to the input's
	 * TC ingress program (junction_fp_tc) with the output in its
	 * metadata. On a veth this skips what an XDP redirect into it
	 * costs (its peer's NAPI and 256-frame ring, and its refusal while
	 * the peer runs neither XDP nor GRO). A driver without metadata
	 * support: through fp_devmap as below. */
	if (have_meta && via != VIA_XDP && bpf_xdp_adjust_meta(xctx, -(int)sizeof(struct fp_meta)) == 0) {
		struct fp_meta *m = (void *)(long)xctx->data_meta;

		if ((void *)(m + 1) <= (void *)(long)xctx->data) {
			m->magic = FP_META_MAGIC;
			m->ifindex = out;
			m->via = via;
			return XDP_PASS;
		}
	}
	/* Through fp_devmap, not bpf_redirect: a refusal then names that
	 * map's id in xdp:xdp_redirect_err, which is how the watcher tells
	 * it from other programs' (egress.go). A missing entry (a device
	 * being removed) returns the flags' action, XDP_DROP. */
	return bpf_redirect_map(&fp_devmap, out, XDP_DROP);

not_ipv4:
	/* IPv6 is decided here, after IPv4's test and out of its way: IPv4
	 * frames run the instructions they ran before IPv6 existed. */
	if (ld16(data + OFF_TYPE) == fp_htons(0x86dd) && fastpath6(ctx, tc, data, data_end, &out, &via))
		goto forward;
slow:
	/* Traffic for the router beyond its class's rate: dropped here,
	 * before the copy to the socket and the graph (XDP: the AF_XDP
	 * socket; TC: the packet sockets, which the kernel serves after
	 * TC). TC: a frame whose VLAN tag the kernel took out is not
	 * policed, as XDP, which sees the tag, does not police it. */
	if (police_interval != 0 && !(tc && skb->vlan_present)) {
		int cls = local_class(data, data_end);

		if (cls >= 0 && !police_pass(cls))
			return tc ? TC_ACT_SHOT : XDP_DROP;
	}
	c = bpf_map_lookup_elem(&fp_counters, &zero);
	if (c)
		c->slow++;
	/* TC: on to the next program or the stack, where the slow path's
	 * packet sockets (bound to the IPv4, IPv6 and ARP types, which the
	 * kernel serves after TC) take it. The frame is the graph's: marked
	 * as addressed to another host, the device's own IP, IPv6 and ARP
	 * stacks drop it on arrival (the packet sockets take every type but
	 * loopback), as they never see what an AF_XDP socket takes. Left
	 * PACKET_HOST, the kernel would route each such frame (and drop
	 * it, forwarding being off) and, where the namespace holds the
	 * router's addresses (the control plane's twins), answer the
	 * router's ARP, pings and connections a second time.
	 * bpf_skb_change_type is Linux 4.8: every kernel with tcx (6.6),
	 * which loading this program needs and probes, has it. */
	if (tc) {
		bpf_skb_change_type(skb, PACKET_OTHERHOST);
		return TC_ACT_UNSPEC;
	}
	/* Count, then what the AF_XDP default program does, with XDP_PASS
	 * as the fallback so that a queue without a socket hands its
	 * frames to the kernel instead of dropping them. */
	return bpf_redirect_map(&xsks_map, xctx->rx_queue_index, XDP_PASS);
}

SEC("xdp")
int junction_fp(struct xdp_md *ctx)
{
	return fastpath(ctx, 0, 1, 1, 0);
}

/* For kernels before 5.18; loaded under the same name (ProgramName). */
SEC("xdp")
int junction_fp_ptrlen(struct xdp_md *ctx)
{
	return fastpath(ctx, 0, 0, 1, 0);
}

/* For kernels that refuse bpf_xdp_adjust_meta in XDP programs: no
 * hand-off to TC. */
SEC("xdp")
int junction_fp_nometa(struct xdp_md *ctx)
{
	return fastpath(ctx, 0, 1, 0, 0);
}

SEC("xdp")
int junction_fp_ptrlen_nometa(struct xdp_md *ctx)
{
	return fastpath(ctx, 0, 0, 0, 0);
}

/* The fast path as a TC ingress program (tcx), for a device that runs
 * no XDP program: what the XDP program forwards, it sends on with
 * bpf_redirect_peer (an output veth's peer) or bpf_redirect; everything
 * else goes on to the stack. Loaded under TCProgramName. */
SEC("tc")
int junction_tcfp(struct __sk_buff *skb)
{
	return fastpath(skb, 1, 0, 0, 1);
}

/* For kernels without bpf_redirect_peer: bpf_redirect to every output
 * (into a veth: through its peer's backlog queue). */
SEC("tc")
int junction_tcfp_nopeer(struct __sk_buff *skb)
{
	return fastpath(skb, 1, 0, 0, 0);
}

/*
 * The redirect watcher, on xdp:xdp_redirect_err (TP_PROTO dev, xdp,
 * tgt, err, map_type, map_id, index): for an event of fp_devmap, it
 * marks fp_egress[index] disabled with the event's errno and adds 1 to
 * fp_egress_errs[index]. Every other event (another program's
 * redirects, XSKMAP failures) is ignored.
 */
SEC("raw_tracepoint/xdp_redirect_err")
int junction_fp_err(struct bpf_raw_tracepoint_args *ctx)
{
	__u32 key;
	struct egress v;
	__u64 *n;

	if ((__u32)ctx->args[5] != devmap_id)
		return 0;
	key = (__u32)ctx->args[6];
	/* The whole value, so that the XDP program never sees a half
	 * written one; BPF_EXIST: only outputs AddEgress registered. */
	v.disabled = 1;
	v.err = (__s32)ctx->args[3];
	v.via = VIA_XDP; /* the Go side sets it again when it turns the output on */
	bpf_map_update_elem(&fp_egress, &key, &v, BPF_EXIST);
	n = bpf_map_lookup_elem(&fp_egress_errs, &key);
	if (n)
		__sync_fetch_and_add(n, 1);
	return 0;
}

/*
 * The TC ingress program (tcx) of every fast-path device: a frame the
 * XDP program forwarded through TC (metadata FP_META_MAGIC) is
 * redirected to its output: into the output veth's peer's ingress, or
 * out of the output. Every other frame (the XDP program passes those
 * only when a queue has no AF_XDP socket) goes on to the stack.
 */
SEC("tcx/ingress")
int junction_fp_tc(struct __sk_buff *skb)
{
	struct fp_meta *m = (void *)(long)skb->data_meta;

	if ((void *)(m + 1) > (void *)(long)skb->data || m->magic != FP_META_MAGIC)
		return TC_ACT_UNSPEC;
	if (m->via == VIA_TC_PEER)
		return bpf_redirect_peer(m->ifindex, 0);
	return bpf_redirect(m->ifindex, 0);
}
