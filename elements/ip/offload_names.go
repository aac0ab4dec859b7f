package ip

import "github.com/junction-dataplane/junction/elements"

var _ elements.OffloadNamer = (*IPLookupConfig)(nil)

// OffloadDevices implements elements.OffloadNamer.
func (c *IPLookupConfig) OffloadDevices() []string { return c.Offload }
