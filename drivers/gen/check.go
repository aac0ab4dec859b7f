package gen

import (
	"fmt"

	"github.com/junction-dataplane/junction/drivers"
	"github.com/junction-dataplane/junction/packet"
)

func init() { drivers.RegisterCheck("gen", check) }

// check validates the keys against the worker count, as open does, and
// returns the Info the device will have: its MAC is the mac key's, else
// DefaultDstMAC.
func check(cfg any, ctx drivers.OpenContext) (drivers.Info, error) {
	c, ok := cfg.(*Config)
	if !ok {
		return drivers.Info{}, fmt.Errorf("gen: config is %T, want *gen.Config", cfg)
	}
	s, err := c.validate(max(ctx.Workers, 1), ctx.MAC)
	mac := ctx.MAC
	if mac == (packet.MAC{}) {
		mac, _ = packet.ParseMAC(DefaultDstMAC)
	}
	return drivers.Info{Name: ctx.Name, Driver: "gen", MAC: mac, Addresses: ctx.Addresses, FlowAffine: s.split}, err
}
