package afxdp

import (
	"math/bits"
	"strconv"
	"strings"

	"github.com/junction-dataplane/junction/drivers/afxdp/fastpath"

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
	// LocalRate and LocalBurst: the fast path's policing of traffic
	// for the router (see manual): "N/s" or "off".
	LocalRate  string `toml:"local_rate"`
	LocalBurst int    `toml:"local_burst"`
}

// Defaults. The rings are sized to hold a TCP sender's burst through a
// veth while the queue's worker is descheduled (1024 did not: see ring in
// manual); frames leave the fill ring full with room for what the graph and
// the transmit copies hold.
const (
	DefaultFrames = 16384
	DefaultRing   = 4096
	maxQueues     = 1024
	// The policing of traffic for the router: generous for a router's
	// own control traffic (ping, BGP, SSH, ARP and ND are not policed
	// at all), far below what a flood sends.
	DefaultLocalRate  = "20000/s"
	DefaultLocalBurst = 2000
)

func newConfig() any {
	return &Config{Frames: DefaultFrames, Ring: DefaultRing, Mode: "auto", FastPathRedirect: "auto",
		LocalRate: DefaultLocalRate, LocalBurst: DefaultLocalBurst}
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
	if _, err := c.police(); err != nil {
		return err
	}
	switch c.RSS {
	case "", "symmetric":
	default:
		return conf.Errorf("rss", "%q: must be \"symmetric\" (or absent: the device's RSS as it is)", c.RSS)
	}
	return nil
}

// police reads local_rate and local_burst: "off" is no policing; a
// Config built in code without them gets the defaults.
func (c *Config) police() (fastpath.Police, error) {
	return ParseLocalRate(c.LocalRate, c.LocalBurst)
}

// ParseLocalRate reads a fast-path device's local_rate and local_burst
// keys (this driver's, and the afpacket driver's for its fast path in
// TC): "off" is no policing; "" and 0 (a Config built in code) are the
// defaults. Errors are located on the key.
func ParseLocalRate(localRate string, localBurst int) (fastpath.Police, error) {
	rate, burst := strings.TrimSpace(localRate), localBurst
	if rate == "" {
		rate = DefaultLocalRate
	}
	if burst == 0 {
		burst = DefaultLocalBurst
	}
	if rate == "off" {
		return fastpath.Police{}, nil
	}
	n, err := strconv.ParseUint(strings.TrimSuffix(rate, "/s"), 10, 64)
	if err != nil || n < 1 || n > 1e9 {
		return fastpath.Police{}, conf.Errorf("local_rate", "%q: want frames a second, e.g. \"20000/s\" (1..1000000000), or \"off\"", localRate)
	}
	if burst < 1 || burst > 1<<30 {
		return fastpath.Police{}, conf.Errorf("local_burst", "%d: want frames, 1..%d", localBurst, 1<<30)
	}
	return fastpath.Police{Rate: n, Burst: uint64(burst)}, nil
}
