package arp

import (
	"github.com/junction-dataplane/junction/elements"
	"github.com/junction-dataplane/junction/packet"
)

var (
	_ elements.EnvChecker = (*QuerierConfig)(nil)
	_ elements.EnvChecker = (*ResponderConfig)(nil)
)

// CheckEnv refuses what newQuerier refuses: a device without a MAC.
func (c *QuerierConfig) CheckEnv(devices elements.DeviceInfos) error {
	info, ok := devices(c.Device)
	if ok && info.MAC == (packet.MAC{}) {
		return elements.Errorf("device", "device %q has no MAC address (set its mac key)", c.Device)
	}
	return nil
}

// CheckEnv refuses what newResponder refuses: without addresses of its
// own, a device with no IPv4 address (or no MAC) to answer for.
func (c *ResponderConfig) CheckEnv(devices elements.DeviceInfos) error {
	if len(c.Addresses) > 0 {
		return nil
	}
	info, ok := devices(c.Device)
	if !ok {
		return nil
	}
	dc := &ResponderConfig{}
	for _, p := range info.Addresses {
		if !p.Addr().Is4() {
			continue
		}
		if err := dc.add(p.Addr(), info.MAC); err != nil {
			return elements.Errorf("device", "device %q: %v", c.Device, err)
		}
	}
	if len(dc.entries) == 0 {
		return elements.Errorf("device", "device %q has no IPv4 address to answer for", c.Device)
	}
	return nil
}
