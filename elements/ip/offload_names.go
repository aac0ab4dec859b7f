package ip

import "github.com/junction-dataplane/junction/elements/offloadkey"

var _ offloadkey.Namer = (*IPLookupConfig)(nil)

// OffloadDevices implements offloadkey.Namer.
func (c *IPLookupConfig) OffloadDevices() []string { return c.Offload }
