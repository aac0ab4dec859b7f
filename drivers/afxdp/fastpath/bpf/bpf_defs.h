/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The few kernel and libbpf definitions the fast path's programs need,
 * written out so that building them needs only clang (no kernel or
 * libbpf headers). Values are the kernel's UAPI numbers
 * (include/uapi/linux/bpf.h); they never change.
 */
#ifndef JUNCTION_BPF_DEFS_H
#define JUNCTION_BPF_DEFS_H

typedef unsigned char __u8;
typedef unsigned short __u16;
typedef unsigned int __u32;
typedef unsigned long long __u64;
typedef int __s32;
typedef long long __s64;

/* Sections: the ELF section names cilium/ebpf (like libbpf) reads the
 * program type, maps and license from. */
#define SEC(name) __attribute__((section(name), used))
#define __always_inline inline __attribute__((always_inline))

/* BTF-defined maps: the declarations encode type, sizes and limits in
 * the variable's type, which the loader reads from BTF. */
#define __uint(name, val) int(*name)[val]
#define __type(name, val) typeof(val) *name

/* enum bpf_map_type */
#define BPF_MAP_TYPE_HASH 1
#define BPF_MAP_TYPE_ARRAY 2
#define BPF_MAP_TYPE_PERCPU_ARRAY 6
#define BPF_MAP_TYPE_LPM_TRIE 11
#define BPF_MAP_TYPE_XSKMAP 17
#define BPF_MAP_TYPE_DEVMAP_HASH 25

/* Map flags and update flags. */
#define BPF_F_NO_PREALLOC (1U << 0)
#define BPF_F_MMAPABLE (1U << 10)
#define BPF_EXIST 2

/* enum xdp_action */
#define XDP_ABORTED 0
#define XDP_DROP 1
#define XDP_PASS 2
#define XDP_TX 3
#define XDP_REDIRECT 4

/* struct xdp_md: the XDP program's context (only the fields read). */
struct xdp_md {
	__u32 data;
	__u32 data_end;
	__u32 data_meta;
	__u32 ingress_ifindex;
	__u32 rx_queue_index;
	__u32 egress_ifindex;
};

/* struct __sk_buff: a TC program's context, up to gso_size (len,
 * ingress_ifindex, data, data_end and data_meta are read; the others
 * keep the offsets). */
struct __sk_buff {
	__u32 len, pkt_type, mark, queue_mapping, protocol, vlan_present, vlan_tci, vlan_proto;
	__u32 priority, ingress_ifindex, ifindex, tc_index, cb[5], hash, tc_classid;
	__u32 data;     /* offset 76 */
	__u32 data_end; /* 80 */
	__u32 napi_id, family, remote_ip4, local_ip4, remote_ip6[4], local_ip6[4], remote_port, local_port;
	__u32 data_meta; /* 140 */
	__u64 flow_keys, tstamp;
	__u32 wire_len, gso_segs;
	__u64 sk;
	__u32 gso_size; /* 176 */
};

/* TC (tcx) verdicts: go on with the next program or the stack, drop,
 * and redirect. */
#define TC_ACT_UNSPEC (-1)
#define TC_ACT_SHOT 2
#define TC_ACT_REDIRECT 7
/* linux/if_packet.h: a frame addressed to another host. */
#define PACKET_OTHERHOST 3

/* bpf_l4_csum_replace flags: the changed words are in the pseudo-header
 * (addresses); a UDP checksum of 0 (none) stays 0, a computed 0 becomes
 * 0xffff. Size 0 (the low bits): "to" is a checksum difference. */
#define BPF_F_PSEUDO_HDR (1ULL << 4)
#define BPF_F_MARK_MANGLED_0 (1ULL << 5)

/* bpf_check_mtu flags: check each segment of a GSO packet. */
#define BPF_MTU_CHK_SEGS 1

/* struct bpf_raw_tracepoint_args: a raw tracepoint's context, the
 * tracepoint's TP_PROTO arguments as u64s. */
struct bpf_raw_tracepoint_args {
	__u64 args[0];
};

/* Helpers, by their stable numbers (enum bpf_func_id). */
static void *(*bpf_map_lookup_elem)(void *map, const void *key) = (void *)1;
static long (*bpf_map_update_elem)(void *map, const void *key, const void *value, __u64 flags) = (void *)2;
static __u64 (*bpf_ktime_get_ns)(void) = (void *)5;
static long (*bpf_redirect)(__u32 ifindex, __u64 flags) = (void *)23;
static long (*bpf_xdp_adjust_meta)(struct xdp_md *ctx, int delta) = (void *)54;
static long (*bpf_redirect_map)(void *map, __u64 key, __u64 flags) = (void *)51;
static long (*bpf_l4_csum_replace)(struct __sk_buff *skb, __u32 offset, __u64 from, __u64 to, __u64 flags) = (void *)11;
/* Linux 5.10. */
static long (*bpf_redirect_peer)(__u32 ifindex, __u64 flags) = (void *)155;
static long (*bpf_skb_change_type)(struct __sk_buff *skb, __u32 type) = (void *)32;
/* Linux 5.12. */
static long (*bpf_check_mtu)(void *ctx, __u32 ifindex, __u32 *mtu_len, __s32 len_diff, __u64 flags) = (void *)163;
/* Linux 5.18. */
static __u64 (*bpf_xdp_get_buff_len)(struct xdp_md *ctx) = (void *)188;

/* Network byte order of a 16- or 32-bit constant or value. */
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define fp_htons(x) ((__u16)__builtin_bswap16(x))
#define fp_htonl(x) ((__u32)__builtin_bswap32(x))
#elif __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
#define fp_htons(x) ((__u16)(x))
#define fp_htonl(x) ((__u32)(x))
#else
#error "unknown byte order"
#endif
#define fp_ntohs(x) fp_htons(x)

#endif
