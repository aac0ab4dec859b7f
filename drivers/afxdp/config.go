package afxdp

import (
	"math/bits"

	"github.com/junction-dataplane/junction/conf"
	"github.com/junction-dataplane/junction/drivers"
)

// Config is the afxdp driver's keys (see manual).
type Config struct {
	Interface string `toml:"interface"`
	Queues    int    `toml:"queues"`
	Frames    int    `toml:"frames"`
	Ring      int    `toml:"ring"`
	Mode      string `toml:"mode"`
	FastPath  bool   `toml:"fastpath"`
	// FastPathRedirect: how the fast path sends frames out of this
	// device (see manual): "auto", "xdp" or "tc".
	FastPathRedirect string `toml:"fastpath_redirect"`
	RSS              string `toml:"rss"`
}

// Defaults. The rings are sized to hold a TCP sender's burst through a
// veth while the queue's worker is descheduled (1024 did not: see ring in
// manual); frames leave the fill ring full with room for what the graph and
// the transmit copies hold.
const (
	DefaultFrames = 16384
	DefaultRing   = 4096
	maxQueues     = 1024
)

func newConfig() any {
	return &Config{Frames: DefaultFrames, Ring: DefaultRing, Mode: "auto", FastPathRedirect: "auto"}
}

func pow2(n int) bool { return n > 0 && bits.OnesCount(uint(n)) == 1 }

// Validate checks the keys without touching the system.
func (c *Config) Validate() error {
	if err := drivers.ValidInterfaceName(c.Interface); err != nil {
		return err
	}
	if c.Queues < 0 || c.Queues > maxQueues {
		return conf.Errorf("queues", "%d out of range 0..%d (0 = the interface's RX queue count)", c.Queues, maxQueues)
	}
	if !pow2(c.Ring) || c.Ring < 64 || c.Ring > 16384 {
		return conf.Errorf("ring", "%d: must be a power of two in 64..16384", c.Ring)
	}
	if !pow2(c.Frames) || c.Frames > 1<<20 {
		return conf.Errorf("frames", "%d: must be a power of two up to 1048576", c.Frames)
	}
	if c.Frames < 2*c.Ring {
		return conf.Errorf("frames", "%d: must be at least twice ring (%d): ring frames are kept for transmit copies, the rest feed the fill ring and the graph", c.Frames, c.Ring)
	}
	switch c.Mode {
	case "auto", "native", "generic":
	default:
		return conf.Errorf("mode", "%q: must be \"auto\", \"native\" or \"generic\"", c.Mode)
	}
	switch c.FastPathRedirect {
	case "", "auto", "xdp", "tc": // "": auto (a Config built in code)
	default:
		return conf.Errorf("fastpath_redirect", "%q: must be \"auto\", \"xdp\" or \"tc\"", c.FastPathRedirect)
	}
	switch c.RSS {
	case "", "symmetric":
	default:
		return conf.Errorf("rss", "%q: must be \"symmetric\" (or absent: the device's RSS as it is)", c.RSS)
	}
	return nil
}
