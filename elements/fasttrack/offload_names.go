package fasttrack

import "github.com/junction-dataplane/junction/elements"

var _ elements.OffloadNamer = (*Config)(nil)

// OffloadDevices implements elements.OffloadNamer.
func (c *Config) OffloadDevices() []string { return c.Offload }
