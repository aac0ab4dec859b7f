package ip

import (
	"fmt"

	"github.com/vishvananda/netns"

	"github.com/junction-dataplane/junction/elements"
)

var _ elements.EnvChecker = (*IPLookupConfig)(nil)

// CheckEnv refuses what the kernel sync would at start: a netns to read
// routes from that does not exist. Opening it only reads.
func (c *IPLookupConfig) CheckEnv(elements.DeviceInfos) error {
	if c.Source != "kernel" || c.NetNS == "" {
		return nil
	}
	ns, err := netns.GetFromName(c.NetNS)
	if err != nil {
		return fmt.Errorf("source = \"kernel\": netns %q: %v", c.NetNS, err)
	}
	return ns.Close()
}
