package drivers

import "github.com/junction-dataplane/junction/packet"

// CounterTxTooLong names the counter of frames a driver refused to send
// because they were longer than the interface takes (DropTooLong).
const CounterTxTooLong = "tx_dropped_too_long"

// MaxFrame is the longest Ethernet frame (without FCS) an interface of the
// given MTU sends: the MTU plus the 14-byte Ethernet header. A frame with
// one 802.1Q or 802.1ad tag may be 4 bytes longer (DropTooLong allows it).
// mtu ≤ 0 (unknown) gives 0: no limit.
func MaxFrame(mtu int) int {
	if mtu <= 0 {
		return 0
	}
	return mtu + packet.EthernetLen
}

// DropTooLong frees the packets of b longer than maxFrame (MaxFrame of the
// interface's MTU; 0 = no limit), keeps the rest in order and returns how
// many it freed. A transmit path calls it first: a frame longer than the
// link takes would otherwise be lost where no counter of the forwarder
// sees it (a veth drops it in its peer's receive check, a NIC may send it
// truncated or not at all). The graph's CheckMTU is what turns such
// packets into packet-too-big and fragmentation-needed messages; this is
// the count of the ones a graph let through.
func DropTooLong(b *packet.Batch, maxFrame int) int {
	if maxFrame <= 0 {
		return 0
	}
	i := 0
	for i < len(b.Pkts) && len(b.Pkts[i].Data) <= maxFrame {
		i++
	}
	if i == len(b.Pkts) {
		return 0 // the usual case: one compare per packet, nothing moved
	}
	n, dropped := i, 0
	for ; i < len(b.Pkts); i++ {
		p := b.Pkts[i]
		if l := len(p.Data); l > maxFrame && (l > maxFrame+4 || !tagged(p.Data)) {
			p.Free()
			dropped++
			continue
		}
		b.Pkts[n] = p
		n++
	}
	b.Truncate(n)
	return dropped
}

// tagged reports an 802.1Q or 802.1ad tag after the MACs.
func tagged(f []byte) bool {
	if len(f) < packet.EthernetLen {
		return false
	}
	t := uint16(f[12])<<8 | uint16(f[13])
	return t == 0x8100 || t == 0x88a8
}
