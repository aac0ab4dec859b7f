package afxdp

import (
	"fmt"
	"net"

	"github.com/junction-dataplane/junction/conf"
	"github.com/junction-dataplane/junction/drivers"
	"github.com/junction-dataplane/junction/packet"
)

func init() { drivers.RegisterCheck("afxdp", check) }

// check is the part of open that reads the system without changing it:
// the interface exists in this network namespace, and the device's MAC
// (the mac key's, else the interface's).
func check(cfg any, ctx drivers.OpenContext) (drivers.Info, error) {
	info := drivers.Info{Name: ctx.Name, Driver: "afxdp", MAC: ctx.MAC, Addresses: ctx.Addresses}
	c, ok := cfg.(*Config)
	if !ok {
		return info, fmt.Errorf("afxdp: config is %T, want *afxdp.Config", cfg)
	}
	info.FastPath = c.FastPath
	ifi, err := net.InterfaceByName(c.Interface)
	if err != nil {
		return info, conf.Errorf("interface", "no interface %q in this network namespace (run the forwarder in the interface's namespace: ip netns exec NS forwarder run ...)", c.Interface)
	}
	if info.MAC == (packet.MAC{}) && len(ifi.HardwareAddr) == 6 {
		copy(info.MAC[:], ifi.HardwareAddr)
	}
	return info, nil
}
