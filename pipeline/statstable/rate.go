package statstable

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/junction-dataplane/junction/pipeline"
)

// RateLine summarises the interval between two snapshots of the same
// router: "3s  rx 12.31 Mpps  tx 12.30 Mpps  drops 0 pps  busy w0 100% w1 98%".
// The busy share is each worker's over the interval.
func RateLine(prev, cur *pipeline.Snapshot) string {
	dt := (cur.Uptime - prev.Uptime).Seconds()
	if dt <= 0 {
		dt = math.SmallestNonzeroFloat64
	}
	rate := func(a, b uint64) float64 {
		if b < a {
			return 0
		}
		return float64(b-a) / dt
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, "%s  rx %s  tx %s  drops %s  busy", cur.Uptime.Round(time.Second),
		FormatRate(rate(prev.Totals.RX, cur.Totals.RX)), FormatRate(rate(prev.Totals.TX, cur.Totals.TX)),
		FormatRate(rate(prev.Totals.Drops, cur.Totals.Drops)))
	for i, w := range cur.Workers {
		var b0, i0 uint64
		if i < len(prev.Workers) {
			b0, i0 = prev.Workers[i].BusyNanos, prev.Workers[i].IdleNanos
		}
		db, di := w.BusyNanos-min(b0, w.BusyNanos), w.IdleNanos-min(i0, w.IdleNanos)
		fmt.Fprintf(&sb, " w%d %.0f%%", w.Worker, 100*busyShare(db, di))
	}
	return sb.String()
}

// FormatRate prints packets per second with a unit: "12.31 Mpps",
// "850.00 kpps", "0 pps".
func FormatRate(pps float64) string {
	switch {
	case pps >= 1e6:
		return fmt.Sprintf("%.2f Mpps", pps/1e6)
	case pps >= 1e3:
		return fmt.Sprintf("%.2f kpps", pps/1e3)
	default:
		return fmt.Sprintf("%.0f pps", pps)
	}
}

// busyShare is busy's share of busy+idle (0 when both are 0).
func busyShare(busy, idle uint64) float64 {
	if busy+idle == 0 {
		return 0
	}
	return float64(busy) / float64(busy+idle)
}
