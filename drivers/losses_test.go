package drivers_test

import (
	"regexp"
	"testing"

	"github.com/junction-dataplane/junction/drivers"
	_ "github.com/junction-dataplane/junction/drivers/all"
)

// losses classifies every counter the standard drivers document: true for
// frames lost or refused, false for traffic and events. IsLoss must agree.
var losses = map[string]bool{
	// traffic
	"rx_packets": false, "rx_bytes": false, "tx_packets": false, "tx_bytes": false,
	"fastpath_forwarded": false, "fastpath_forwarded_bytes": false, "fastpath_to_graph": false,
	"fastpath_runs": false, "fastpath_run_ns": false, "loops": false, "rx_own_skipped": false,
	"local_rate_passed": false,
	// events that sound like losses
	"tx_ring_empty": false, "rx_fill_empty": false, "rx_pool_empty": false, "tx_kicks_failed": false,
	"fastpath_egress_disabled": false, "fastpath_egress_off": false,
	"fastpath_fallbacks": false, "xdp_reattached": false, "fastpath_tc_lost": false,
	"carrier_changes": false, // tap: the twin's link state copied
	// not known to have left: the totals count them with the transmit
	// losses (pipeline.Totals), but nothing says they were lost
	"tx_unconfirmed": false,
	// losses
	"tx_dropped": true, "tx_dropped_nobuf": true, "tx_dropped_too_long": true, "tx_errors": true,
	"tx_invalid_descs": true, "rx_invalid": true, "rx_ring_full": true, "rx_kernel_dropped": true,
	"rx_dropped_queue_removed": true, "rx_dropped_reload_aborted": true, "rx_truncated": true,
	"read_errors": true, "rx_errors": true, "oversize": true, "fastpath_redirect_errors": true,
	"link_rx_dropped": true, "link_tx_dropped": true, "link_rx_missed_errors": true, "link_peer_tx_dropped": true,
	"local_rate_dropped_echo": true, "local_rate_dropped_syn": true, "local_rate_dropped_udp": true, "local_rate_dropped_other": true,
}

// TestIsLoss: the classification of every documented counter, and every
// counter name a driver's manual mentions is classified here (a new
// counter must be decided on, not left to its name).
func TestIsLoss(t *testing.T) {
	for name, want := range losses {
		if got := drivers.IsLoss(name); got != want {
			t.Errorf("IsLoss(%q) = %v, want %v", name, got, want)
		}
	}
	// Counter-like words in the manuals' STATS sections: lower case with
	// an underscore (rx_packets, link_rx_dropped).
	word := regexp.MustCompile(`\b[a-z]+(?:_[a-z]+)+\b`)
	keys := map[string]bool{}
	for _, n := range drivers.Names() {
		d, _ := drivers.Lookup(n)
		for _, k := range d.Doc.Keys {
			keys[k.Name] = true
		}
	}
	for _, n := range drivers.Names() {
		d, _ := drivers.Lookup(n)
		for _, w := range word.FindAllString(d.Doc.Stats, -1) {
			if _, ok := losses[w]; !ok && !keys[w] && !notCounters[w] {
				t.Errorf("driver %s documents %q: classify it in losses (or notCounters)", n, w)
			}
		}
	}
}

// notCounters are words of the manuals' STATS sections that name no
// counter: a sysctl, a kernel field, run_ns of fastpath_run_ns/runs.
var notCounters = map[string]bool{"bpf_stats_enabled": true, "tp_drops": true, "run_ns": true}
