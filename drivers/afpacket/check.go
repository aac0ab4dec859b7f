package afpacket

import (
	"fmt"

	"github.com/junction-dataplane/junction/drivers"
)

func init() { drivers.RegisterCheck("afpacket", check) }

// check is the part of open that reads the system without changing it:
// the interface exists in this network namespace, and the device's MAC
// (the mac key's, else the interface's).
func check(cfg any, ctx drivers.OpenContext) (drivers.Info, error) {
	info := drivers.Info{Name: ctx.Name, Driver: "afpacket", MAC: ctx.MAC, Addresses: ctx.Addresses}
	c, ok := cfg.(*Config)
	if !ok {
		return info, fmt.Errorf("afpacket: config is %T, want *afpacket.Config", cfg)
	}
	err := drivers.CheckInterface(&info, c.Interface)
	return info, err
}
