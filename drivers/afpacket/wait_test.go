package afpacket

import (
	"testing"

	"github.com/junction-dataplane/junction/drivers/internal/drvtest"
)

// TestRxFD: the queue's descriptor is readable while frames wait and not
// once they are received, and a frame arriving wakes a poll(2) on it.
func TestRxFD(t *testing.T) {
	pr := drvtest.NewPair(t, 1)
	d, err := openIn(t, pr.DevNS, cfg(pr.DevIf), 1)
	if err != nil {
		t.Fatal(err)
	}
	drvtest.CheckRxFD(t, pr, d)
}
