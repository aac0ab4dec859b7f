package afpacket

import (
	"fmt"

	"github.com/junction-dataplane/junction/drivers"
	"github.com/junction-dataplane/junction/drivers/afxdp"
)

func init() { drivers.RegisterCheck("afpacket", check) }

// check is the part of open that reads the system without changing it:
// the interface exists in this network namespace, and the device's MAC
// (the mac key's, else the interface's); and what the fastpath key will
// make of this kernel (afxdp.PlanTC).
func check(cfg any, ctx drivers.OpenContext) (drivers.Info, error) {
	info := drivers.Info{Name: ctx.Name, Driver: "afpacket", MAC: ctx.MAC, Addresses: ctx.Addresses}
	c, ok := cfg.(*Config)
	if !ok {
		return info, fmt.Errorf("afpacket: config is %T, want *afpacket.Config", cfg)
	}
	info.FastPath = c.fastPathKey() != "off"
	if err := drivers.CheckInterface(&info, c.Interface); err != nil {
		return info, err
	}
	ws, err := afxdp.PlanTC(c.Interface, c.fastPathKey())
	info.Warnings = append(info.Warnings, ws...)
	return info, err
}
