package fasttrack

import (
	"testing"

	"github.com/junction-dataplane/junction/drivers"
	"github.com/junction-dataplane/junction/elements"
)

type mtuOnly struct {
	drivers.Device
	mtu int
}

func (d mtuOnly) Info() drivers.Info { return drivers.Info{MTU: d.mtu} }

type mtuSet map[string]drivers.Device

func (s mtuSet) Device(name string) (drivers.Device, int, bool) { d, ok := s[name]; return d, 0, ok }
func (s mtuSet) Queues(string, int) []int                       { return nil }
func (s mtuSet) DeviceNames() []string {
	var n []string
	for k := range s {
		n = append(n, k)
	}
	return n
}

// TestMaxFrameOf: the smallest reported MTU plus the Ethernet header;
// no limit (0: FastTrack skips the check altogether) when no device
// reports one, as gen and pcap do not.
func TestMaxFrameOf(t *testing.T) {
	ctx := func(devs elements.DeviceSet) *elements.Context {
		return elements.NewContext("ft", 0, 1, 64, nil, &elements.Stats{}, nil, devs, nil)
	}
	for _, c := range []struct {
		devs elements.DeviceSet
		want int
	}{
		{nil, 0},
		{mtuSet{"gen": mtuOnly{}}, 0},
		{mtuSet{"gen": mtuOnly{}, "lan": mtuOnly{mtu: 1500}, "wan": mtuOnly{mtu: 1400}}, 1414},
	} {
		if got := maxFrameOf(ctx(c.devs)); got != c.want {
			t.Errorf("%v: maxFrameOf = %d, want %d", c.devs, got, c.want)
		}
	}
}
