package afxdp

import (
	"testing"

	"github.com/junction-dataplane/junction/drivers"
	"github.com/junction-dataplane/junction/drivers/afxdp/fastpath"
	"github.com/junction-dataplane/junction/drivers/internal/drvtest"
	"github.com/junction-dataplane/junction/drivers/kfeature"
	"github.com/junction-dataplane/junction/internal/netns"
)

// TestLocalRate: drvtest.CheckLocalRate on a fast-path device: the XDP
// program polices traffic for the router.
func TestLocalRate(t *testing.T) {
	netns.RequireRoot(t)
	kfeature.Require(t, append([]kfeature.Feature{kfeature.AFXDP}, fastpath.Features...)...)
	drvtest.CheckLocalRate(t, drvtest.LocalRate{
		Open: func(ctx drivers.OpenContext, rate string) (drivers.Device, error) {
			c := cfg("lr0", "auto")
			c.FastPath, c.LocalRate, c.LocalBurst = true, rate, 10
			return Open(c, ctx)
		},
		Opened: func(t *testing.T, d drivers.Device) {
			if d.(*Device).fp == nil {
				d.Close()
				t.Skip("the fast path stepped down on this kernel")
			}
		},
	})
}
