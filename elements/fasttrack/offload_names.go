package fasttrack

import "github.com/junction-dataplane/junction/elements/offloadkey"

var _ offloadkey.Namer = (*Config)(nil)

// OffloadDevices implements offloadkey.Namer.
func (c *Config) OffloadDevices() []string { return c.Offload }
