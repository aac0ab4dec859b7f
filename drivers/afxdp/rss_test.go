package afxdp

import (
	"errors"
	"testing"

	"github.com/junction-dataplane/junction/drivers"
	"github.com/junction-dataplane/junction/drivers/internal/drvtest"
	"github.com/junction-dataplane/junction/elements"
)

// TestRSSOnVeth: rss = "symmetric" on a veth, which has no RSS
// configuration: the device opens anyway, without an RSS configuration
// to predict queues from; a bad rss value is refused at its key.
func TestRSSOnVeth(t *testing.T) {
	c := cfg("eth0", "auto")
	c.RSS = "toeplitz"
	var ke *elements.KeyError
	if err := c.Validate(); !errors.As(err, &ke) || ke.Key != "rss" {
		t.Errorf("rss = \"toeplitz\": %v, want an error at key rss", err)
	}
	pr := drvtest.NewPair(t, 2)
	var d *Device
	err := pr.DevNS.Do(func() error {
		c := cfg(pr.DevIf, "auto")
		c.RSS = "symmetric"
		var err error
		d, err = Open(c, drivers.OpenContext{Name: "dut", Workers: 2, Batch: 64})
		return err
	})
	if err != nil {
		t.Fatalf("rss = \"symmetric\" on a veth: %v (want it opened, the limit logged)", err)
	}
	defer d.Close()
	if d.RSS() != nil {
		t.Errorf("a veth reported an RSS configuration: %+v", d.RSS())
	}
}
