package drivers

import "strings"

// IsLoss reports whether a driver counter counts frames lost or refused:
// frames that were received or handed over to be sent and will never
// arrive where they were going (tx_dropped, rx_ring_full, link_rx_dropped,
// rx_truncated, fastpath_redirect_errors...). forwarder show errors and
// show interfaces list these as a device's drops; every other counter is
// traffic or an event.
//
// A counter is a loss when its name says so (it mentions "drop", "error",
// "missed", "full", "invalid", "truncated" or "oversize"), except for the
// event counters in notLosses, whose names only sound like losses. The
// counters keep their names (the kernel's, or the driver's contract):
// the classification lives here.
func IsLoss(name string) bool {
	if notLosses[name] {
		return false
	}
	for _, w := range lossWords {
		if strings.Contains(name, w) {
			return true
		}
	}
	return false
}

var lossWords = []string{"drop", "error", "missed", "full", "invalid", "truncated", "oversize"}

// notLosses are driver counters that count events, not frames lost. Some
// sound like losses; listing them here keeps them so even if their names
// come to match a loss word.
var notLosses = map[string]bool{
	// afxdp, the kernel's XDP_STATISTICS tx_ring_empty_descs: times the
	// kernel looked at the socket's TX ring and found nothing to send, as
	// it does on every wake-up of an idle socket.
	"tx_ring_empty": true,
	// afxdp, the kernel's rx_fill_ring_empty_descs: times the kernel
	// looked for a frame on the fill ring and found none. An event, not
	// frames: in copy mode the frame it then could not receive is counted
	// in rx_kernel_dropped, in zero-copy mode the NIC keeps it or counts
	// it (link_rx_missed_errors, link_rx_dropped).
	"rx_fill_empty": true,
	// Every driver: times a receive found no free packet in the worker's
	// pool (the graph held them all). afpacket leaves the frame in its
	// ring for the next poll, gen makes the packet later, pcap reads it
	// later; afxdp leaves the fill ring unrefilled, and what the kernel
	// then loses is in rx_kernel_dropped.
	"rx_pool_empty": true,
	// afxdp: kicks the kernel refused; the frames stay on the TX ring for
	// the next kick.
	"tx_kicks_failed": true,
	// afxdp fast path: times an output was turned off, and whether it is
	// (the frames take the graph's path; a refused frame is counted in
	// fastpath_redirect_errors).
	"fastpath_egress_disabled": true,
	"fastpath_egress_off":      true,
	// afxdp: steps down from the fast path the file asked for, and the
	// programs another tool removed (the driver put the XDP one back; a
	// lost TC program leaves its outputs to XDP or the graph).
	"fastpath_fallbacks": true,
	"xdp_reattached":     true,
	"fastpath_tc_lost":   true,
}
