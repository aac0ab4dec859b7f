package drivers

import (
	"math"

	"github.com/junction-dataplane/junction/packet"
)

// CounterTxTooLong names the counter of frames a driver refused to send
// because they were longer than the interface takes.
const CounterTxTooLong = "tx_dropped_too_long"

// MaxFrame is the longest untagged Ethernet frame (without FCS) an
// interface of the given MTU sends: the MTU plus the 14-byte Ethernet
// header (TooLong allows 4 bytes more for a frame with one 802.1Q or
// 802.1ad tag). mtu ≤ 0 (unknown) gives math.MaxInt: no limit, so that a
// transmit loop can compare every frame's length with it unconditionally.
func MaxFrame(mtu int) int {
	if mtu <= 0 {
		return math.MaxInt
	}
	return mtu + packet.EthernetLen
}

// TooLong reports whether frame f is too long for an interface whose
// MaxFrame is maxFrame: longer than maxFrame, and not a tagged frame
// within the tag's 4 extra bytes. A transmit path calls it only for the
// frames longer than maxFrame (one compare per frame otherwise) and
// drops and counts those it confirms: a frame longer than the link takes
// would otherwise be lost where no counter of the forwarder sees it (a
// veth drops it in its peer's receive check, a NIC may send it truncated
// or not at all). The graph's CheckMTU is what turns such packets into
// packet too big and fragmentation needed; this is the count of the ones
// a graph let through.
func TooLong(f []byte, maxFrame int) bool {
	l := len(f)
	if l <= maxFrame {
		return false
	}
	if l > maxFrame+4 || l < packet.EthernetLen {
		return true
	}
	t := uint16(f[12])<<8 | uint16(f[13])
	return t != 0x8100 && t != 0x88a8
}
