package configs_test

import (
	"testing"
	"time"

	"github.com/junction-dataplane/junction/pipeline"
)

// TestSnapshotTxNeverAboveRx: a snapshot of a running router never shows
// more packets sent than received: the devices' sent counters are read
// before the sources' received ones.
func TestSnapshotTxNeverAboveRx(t *testing.T) {
	g, err := pipeline.Load("bench-l3.toml")
	if err != nil {
		t.Fatal(err)
	}
	r, err := pipeline.Start(g, pipeline.Options{Workers: 2, NoPin: true})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		r.Stop()
		r.Wait()
	}()
	bad, n := 0, 0
	for t0 := time.Now(); time.Since(t0) < 500*time.Millisecond; n++ {
		s := r.Snapshot()
		if s.Totals.TX > s.Totals.RX {
			bad++
			if bad <= 3 {
				t.Errorf("snapshot %d: tx %d > rx %d", n, s.Totals.TX, s.Totals.RX)
			}
		}
	}
	if s := r.Snapshot(); s.Totals.TX == 0 {
		t.Fatalf("nothing sent in %d snapshots: the test proves nothing", n)
	}
	if bad > 0 {
		t.Errorf("%d of %d snapshots had tx above rx", bad, n)
	}
}
