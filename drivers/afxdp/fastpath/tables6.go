package fastpath

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"net/netip"
	"time"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"
)

// IPv6 map layouts (bpf/fastpath.h): maps of their own, so the IPv4
// ones keep theirs. Addresses are their 16 wire bytes.
const (
	// routes6 (BPF_MAP_TYPE_LPM_TRIE) key: u32 prefixlen; u8 addr[16].
	route6KeySize = 20
	// routes6 value: u32 ifindex; u32 flags; u8 gateway[16] (:: =
	// directly connected).
	route6ValueSize  = 24
	route6OffIfindex = 0
	route6OffFlags   = 4
	route6OffGateway = 8

	// neighbors6 (BPF_MAP_TYPE_HASH) key: u32 ifindex; u8 ip[16].
	neigh6KeySize = 20
	// neighbors6 value: u8 dst[6]; u8 src[6]; u32 mtu (the output's:
	// longer datagrams take the slow path); u64 expires.
	neigh6ValueSize  = 24
	neigh6OffDst     = 0
	neigh6OffSrc     = 6
	neigh6OffMTU     = 12
	neigh6OffExpires = 16

	// flows6 (BPF_MAP_TYPE_HASH) key: u32 ifindex (input); u8 src[16];
	// u8 dst[16]; u8 sport[2]; u8 dport[2] (wire order); u32 proto
	// (TCP or UDP).
	flow6KeySize       = 44
	flow6KeyOffIfindex = 0
	flow6KeyOffSrc     = 4
	flow6KeyOffDst     = 20
	flow6KeyOffSport   = 36
	flow6KeyOffDport   = 38
	flow6KeyOffProto   = 40
	// flows6 value: u32 ifindex (output); u32 slot (flow_stats index,
	// shared with the IPv4 flows); u8 eth_dst[6]; u8 eth_src[6]; u32 mtu;
	// u8 hop_dec; u8 pad[3]; u32 gen.
	flow6ValueSize  = 32
	flow6OffIfindex = 0
	flow6OffSlot    = 4
	flow6OffEth     = 8
	flow6OffMTU     = 20
	flow6OffHopDec  = 24
	flow6OffGen     = 28
	minMTU6         = 1280 // RFC 8200: every IPv6 link carries 1280 bytes
)

// is6 says whether a is an IPv6 address the IPv6 maps take (not an
// IPv4-mapped one, which the IPv4 functions accept as IPv4).
func is6(a netip.Addr) bool { return a.Is6() && !a.Is4In6() }

// newMaps6 creates the IPv6 route, neighbour and flow maps, the same
// sizes as the IPv4 ones.
func (t *Tables) newMaps6(maxRoutes, maxNeighbors, maxFlows int) error {
	var err error
	if t.routes6, err = newMap(&ebpf.MapSpec{Name: "fp_routes6", Type: ebpf.LPMTrie, KeySize: route6KeySize,
		ValueSize: route6ValueSize, MaxEntries: uint32(maxRoutes), Flags: unix.BPF_F_NO_PREALLOC}); err != nil {
		return fmt.Errorf("fastpath: creating the IPv6 route map: %w", err)
	}
	if t.neighbors6, err = newMap(&ebpf.MapSpec{Name: "fp_neighbors6", Type: ebpf.Hash, KeySize: neigh6KeySize,
		ValueSize: neigh6ValueSize, MaxEntries: uint32(maxNeighbors)}); err != nil {
		return fmt.Errorf("fastpath: creating the IPv6 neighbour map: %w", err)
	}
	if t.flows6, err = newMap(&ebpf.MapSpec{Name: "fp_flows6", Type: ebpf.Hash, KeySize: flow6KeySize,
		ValueSize: flow6ValueSize, MaxEntries: uint32(maxFlows)}); err != nil {
		return fmt.Errorf("fastpath: creating the IPv6 flow map: %w", err)
	}
	t.slots6 = make(map[flow6Key]uint32)
	return nil
}

func route6Key(p netip.Prefix) []byte {
	p = p.Masked()
	k := make([]byte, route6KeySize)
	binary.NativeEndian.PutUint32(k[0:], uint32(p.Bits()))
	a := p.Addr().As16()
	copy(k[4:], a[:])
	return k
}

func (t *Tables) setRoute6(p netip.Prefix, r Route) error {
	v := make([]byte, route6ValueSize)
	if r.Local {
		binary.NativeEndian.PutUint32(v[route6OffFlags:], routeFlagLocal)
	} else {
		if r.Ifindex <= 0 || r.Ifindex > math.MaxUint32 {
			return fmt.Errorf("fastpath: route %v: bad ifindex %d", p, r.Ifindex)
		}
		binary.NativeEndian.PutUint32(v[route6OffIfindex:], uint32(r.Ifindex))
		if r.Gateway.IsValid() {
			if !is6(r.Gateway) {
				return fmt.Errorf("fastpath: route %v: gateway %v is not IPv6", p, r.Gateway)
			}
			gw := r.Gateway.As16()
			copy(v[route6OffGateway:], gw[:])
		}
	}
	return t.routes6.Put(route6Key(p), v)
}

func (t *Tables) deleteRoute6(p netip.Prefix) error {
	if err := t.routes6.Delete(route6Key(p)); err != nil && !errors.Is(err, ebpf.ErrKeyNotExist) {
		return err
	}
	return nil
}

func neigh6Key(ifindex int, ip netip.Addr) ([]byte, error) {
	if !is6(ip) {
		return nil, fmt.Errorf("fastpath: neighbour %v: not IPv6", ip)
	}
	if ifindex <= 0 || ifindex > math.MaxUint32 {
		return nil, fmt.Errorf("fastpath: neighbour %v: bad ifindex %d", ip, ifindex)
	}
	k := make([]byte, neigh6KeySize)
	binary.NativeEndian.PutUint32(k[0:], uint32(ifindex))
	a := ip.As16()
	copy(k[4:], a[:])
	return k, nil
}

// SetNeighbor6 is SetNeighbor for an IPv6 next hop, with the output's
// MTU: an IPv6 datagram longer than mtu (>= 1280) takes the slow path,
// whose CheckMTU sends packet too big (the kernel would drop it
// silently at the output).
func (t *Tables) SetNeighbor6(ifindex int, ip netip.Addr, dst, src [6]byte, mtu int, lifetime time.Duration) error {
	k, err := neigh6Key(ifindex, ip)
	if err != nil {
		return err
	}
	if mtu < minMTU6 || mtu > math.MaxUint32 {
		return fmt.Errorf("fastpath: neighbour %v: MTU %d (IPv6 needs >= %d)", ip, mtu, minMTU6)
	}
	expires, err := expiry(lifetime)
	if err != nil {
		return err
	}
	v := make([]byte, neigh6ValueSize)
	copy(v[neigh6OffDst:], dst[:])
	copy(v[neigh6OffSrc:], src[:])
	binary.NativeEndian.PutUint32(v[neigh6OffMTU:], uint32(mtu))
	binary.NativeEndian.PutUint64(v[neigh6OffExpires:], expires)
	return t.neighbors6.Put(k, v)
}

func (t *Tables) deleteNeighbor6(ifindex int, ip netip.Addr) error {
	k, err := neigh6Key(ifindex, ip)
	if err != nil {
		return err
	}
	if err := t.neighbors6.Delete(k); err != nil && !errors.Is(err, ebpf.ErrKeyNotExist) {
		return err
	}
	return nil
}

// expiry is the CLOCK_MONOTONIC time lifetime from now (0 for a lifetime
// <= 0: already expired).
func expiry(lifetime time.Duration) (uint64, error) {
	now, err := monotonicNow()
	if err != nil {
		return 0, fmt.Errorf("fastpath: reading CLOCK_MONOTONIC: %w", err)
	}
	switch {
	case lifetime <= 0:
		return 0, nil
	case int64(lifetime) > math.MaxInt64-now:
		return math.MaxUint64, nil
	}
	return uint64(now + int64(lifetime)), nil
}

// flow6Key is an IPv6 FlowKey as the map stores it.
type flow6Key [flow6KeySize]byte

// isFlow6 says whether k is an IPv6 flow (both addresses IPv6).
func isFlow6(k FlowKey) bool { return is6(k.Src) || is6(k.Dst) }

func encodeFlow6Key(k FlowKey) (flow6Key, error) {
	var b flow6Key
	if k.Ifindex <= 0 || k.Ifindex > math.MaxUint32 {
		return b, fmt.Errorf("fastpath: flow: bad input ifindex %d", k.Ifindex)
	}
	if k.Proto != protoTCP && k.Proto != protoUDP {
		return b, fmt.Errorf("fastpath: IPv6 flow: protocol %d (only TCP and UDP: ICMPv6 takes the slow path)", k.Proto)
	}
	if !is6(k.Src) || !is6(k.Dst) {
		return b, fmt.Errorf("fastpath: flow %v -> %v: both addresses IPv6, or both IPv4", k.Src, k.Dst)
	}
	s, d := k.Src.As16(), k.Dst.As16()
	binary.NativeEndian.PutUint32(b[flow6KeyOffIfindex:], uint32(k.Ifindex))
	copy(b[flow6KeyOffSrc:], s[:])
	copy(b[flow6KeyOffDst:], d[:])
	binary.BigEndian.PutUint16(b[flow6KeyOffSport:], k.Sport)
	binary.BigEndian.PutUint16(b[flow6KeyOffDport:], k.Dport)
	binary.NativeEndian.PutUint32(b[flow6KeyOffProto:], uint32(k.Proto))
	return b, nil
}

// encodeFlow6Value is the map value for an IPv6 flow, without the slot.
// IPv6 flows are not translated: a's tuple, when set, must be k's.
func encodeFlow6Value(k FlowKey, a FlowAction) ([]byte, error) {
	if a.Ifindex <= 0 || a.Ifindex > math.MaxUint32 {
		return nil, fmt.Errorf("fastpath: flow: bad output ifindex %d", a.Ifindex)
	}
	if a.Src.IsValid() && a.Src != k.Src || a.Dst.IsValid() && a.Dst != k.Dst ||
		a.Sport != 0 && a.Sport != k.Sport || a.Dport != 0 && a.Dport != k.Dport {
		return nil, fmt.Errorf("fastpath: IPv6 flow %v -> %v: no address or port translation", k.Src, k.Dst)
	}
	if a.MTU < minMTU6 || a.MTU > math.MaxUint32 {
		return nil, fmt.Errorf("fastpath: IPv6 flow: MTU %d (IPv6 needs >= %d)", a.MTU, minMTU6)
	}
	v := make([]byte, flow6ValueSize)
	binary.NativeEndian.PutUint32(v[flow6OffIfindex:], uint32(a.Ifindex))
	copy(v[flow6OffEth:], a.EthDst[:])
	copy(v[flow6OffEth+6:], a.EthSrc[:])
	binary.NativeEndian.PutUint32(v[flow6OffMTU:], uint32(a.MTU))
	v[flow6OffHopDec] = a.TTLDec
	binary.NativeEndian.PutUint32(v[flow6OffGen:], a.Gen)
	return v, nil
}

// setFlow6 is setFlow for IPv6: the same slots and generation (under
// flowMu), its own map.
func (t *Tables) setFlow6(k FlowKey, a FlowAction, replaceOK bool) (slot int, err error) {
	key, err := encodeFlow6Key(k)
	if err != nil {
		return -1, err
	}
	v, err := encodeFlow6Value(k, a)
	if err != nil {
		return -1, err
	}
	t.flowMu.Lock()
	defer t.flowMu.Unlock()
	s, replace := t.slots6[key]
	if replace && !replaceOK {
		return -1, ErrFlowExists
	}
	if !replace {
		if len(t.free) == 0 {
			return -1, ErrFlowsFull
		}
		s = t.free[len(t.free)-1]
	}
	if err := t.flowStats.Put(s, make([]byte, flowStatSize)); err != nil {
		return -1, fmt.Errorf("fastpath: zeroing flow counters: %w", err)
	}
	binary.NativeEndian.PutUint32(v[flow6OffSlot:], s)
	if err := t.flows6.Put(key[:], v); err != nil {
		return -1, fmt.Errorf("fastpath: installing a flow: %w", err)
	}
	if !replace {
		t.free = t.free[:len(t.free)-1]
		t.slots6[key] = s
		if t.flowCount() == 1 {
			if err := t.putFlowGen(); err != nil {
				return int(s), err
			}
		}
	}
	return int(s), nil
}

// deleteFlow6 is DeleteFlow for IPv6.
func (t *Tables) deleteFlow6(k FlowKey, slot int) error {
	key, err := encodeFlow6Key(k)
	if err != nil {
		return err
	}
	t.flowMu.Lock()
	defer t.flowMu.Unlock()
	s, ok := t.slots6[key]
	if !ok {
		return nil
	}
	if slot != int(s) {
		return fmt.Errorf("fastpath: DeleteFlow: the flow is at slot %d, not %d", s, slot)
	}
	if err := t.flows6.Delete(key[:]); err != nil && !errors.Is(err, ebpf.ErrKeyNotExist) {
		return err
	}
	delete(t.slots6, key)
	t.free = append(t.free, s)
	if t.flowCount() == 0 {
		return t.putFlowGen()
	}
	return nil
}

// flowCount is the number of installed flows, both families (under
// flowMu): fp_flow_gen's count.
func (t *Tables) flowCount() int { return len(t.slots) + len(t.slots6) }
