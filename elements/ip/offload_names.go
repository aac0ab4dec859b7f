package ip

import "github.com/junction-dataplane/junction/elements/offloadkey"

var _ offloadkey.Namer = (*IPLookupConfig)(nil)

// OffloadDevices implements offloadkey.Namer: the devices of the table
// the element reads (its own offload key, or the [tables] section's).
func (c *IPLookupConfig) OffloadDevices() []string {
	if c.tbl != nil {
		return c.tbl.Offload
	}
	return c.Offload
}
