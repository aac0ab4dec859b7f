package afpacket

import (
	"errors"
	"testing"

	"github.com/junction-dataplane/junction/conf"
	"github.com/junction-dataplane/junction/drivers"
	"github.com/junction-dataplane/junction/drivers/afxdp/fastpath"
	"github.com/junction-dataplane/junction/drivers/internal/drvtest"
	"github.com/junction-dataplane/junction/drivers/kfeature"
)

// TestLocalRate: drvtest.CheckLocalRate on a device with the fast path
// in TC: the TC program polices traffic for the router before the
// sockets, which receive only what passed.
func TestLocalRate(t *testing.T) {
	kfeature.Require(t, fastpath.TCFeatures...)
	drvtest.CheckLocalRate(t, drvtest.LocalRate{
		Open: func(ctx drivers.OpenContext, rate string) (drivers.Device, error) {
			c := tcCfg("lr0", "tc")
			c.LocalRate, c.LocalBurst = rate, 10
			return Open(c, ctx)
		},
		Opened: func(t *testing.T, d drivers.Device) {
			if m := mode(d.(*Device)); m.Value != "tc" {
				d.Close()
				t.Fatalf("mode %+v, want tc", m)
			}
		},
		Sockets: true,
	})
}

// TestLocalRateKeys: bad local_rate and local_burst are located errors;
// a reload that changes either reopens the device.
func TestLocalRateKeys(t *testing.T) {
	for _, tc := range []struct {
		rate  string
		burst int
		key   string
	}{
		{"fast", 10, "local_rate"},
		{"0/s", 10, "local_rate"},
		{"2000000000/s", 10, "local_rate"},
		{"100/s", -1, "local_burst"},
		{"100/s", 1<<30 + 1, "local_burst"},
		{"off", 0, ""},
		{"", 0, ""}, // a Config built in code: the defaults
	} {
		c := cfg("eth0")
		c.LocalRate, c.LocalBurst = tc.rate, tc.burst
		err := c.Validate()
		ke, ok := errors.AsType[*conf.KeyError](err)
		switch {
		case tc.key == "" && err != nil:
			t.Errorf("%q/%d: %v", tc.rate, tc.burst, err)
		case tc.key != "" && (!ok || ke.Key != tc.key):
			t.Errorf("%q/%d: error %v, want one on %s", tc.rate, tc.burst, err, tc.key)
		}
	}
	if d := newConfig().(*Config); d.LocalRate != "20000/s" || d.LocalBurst != 2000 {
		t.Errorf("defaults %q, %d; want the afxdp driver's 20000/s, 2000", d.LocalRate, d.LocalBurst)
	}

	pr := drvtest.NewPair(t, 1)
	d, err := openIn(t, pr.DevNS, cfg(pr.DevIf), 1)
	if err != nil {
		t.Fatal(err)
	}
	for _, mod := range []func(*Config){func(c *Config) { c.LocalRate = "off" }, func(c *Config) { c.LocalBurst = 7 }} {
		c := cfg(pr.DevIf)
		mod(c)
		if _, _, err := d.Reconfigure(c, true); !errors.Is(err, drivers.ErrReopen) {
			t.Errorf("a reload changing local_rate or local_burst: %v, want ErrReopen", err)
		}
	}
}
