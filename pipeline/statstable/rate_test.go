package statstable

import (
	"strings"
	"testing"
	"time"

	"github.com/junction-dataplane/junction/pipeline"
)

// TestRateLine: the interval's rates and each worker's busy share over it.
func TestRateLine(t *testing.T) {
	prev := &pipeline.Snapshot{Uptime: 3 * time.Second, Totals: pipeline.Totals{RX: 1000, TX: 900},
		Workers: []pipeline.WorkerStats{{Worker: 0, BusyNanos: 1e9, IdleNanos: 1e9}, {Worker: 1}}}
	cur := &pipeline.Snapshot{Uptime: 5 * time.Second, Totals: pipeline.Totals{RX: 11000, TX: 10900, Drops: 4},
		Workers: []pipeline.WorkerStats{{Worker: 0, BusyNanos: 2.5e9, IdleNanos: 1.5e9}, {Worker: 1, BusyNanos: 1e9, IdleNanos: 1e9}}}
	want := "5s  rx 5.00 kpps  tx 5.00 kpps  drops 2 pps  busy w0 75% w1 50%"
	if got := RateLine(prev, cur); got != want {
		t.Errorf("RateLine = %q, want %q", got, want)
	}
	if !strings.Contains(RateLine(cur, cur), "rx 0 pps") {
		t.Errorf("no interval: %q", RateLine(cur, cur))
	}
}

func TestFormatRate(t *testing.T) {
	for _, tc := range []struct {
		pps  float64
		want string
	}{{0, "0 pps"}, {999, "999 pps"}, {1500, "1.50 kpps"}, {12.31e6, "12.31 Mpps"}} {
		if got := FormatRate(tc.pps); got != tc.want {
			t.Errorf("FormatRate(%v) = %q, want %q", tc.pps, got, tc.want)
		}
	}
}
