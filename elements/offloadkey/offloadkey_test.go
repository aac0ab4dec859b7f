package offloadkey

import (
	"errors"
	"strings"
	"testing"

	"github.com/junction-dataplane/junction/conf"
	"github.com/junction-dataplane/junction/drivers"
)

// table is a FastPathTable; only its identity matters here.
type table struct {
	drivers.FastPathTable
	id int
}

type fastDev struct {
	drivers.Device
	ft drivers.FastPathTable
}

func (d *fastDev) FastPathTable() drivers.FastPathTable { return d.ft }

type plainDev struct{ drivers.Device }

type devIndex struct {
	dev drivers.Device
	ix  int
}

type devMap map[string]devIndex

func (m devMap) Device(n string) (drivers.Device, int, bool) {
	d, ok := m[n]
	return d.dev, d.ix, ok
}

func TestResolve(t *testing.T) {
	t1, t2 := &table{id: 1}, &table{id: 2}
	lan, wan := &fastDev{ft: t1}, &fastDev{ft: t1}
	devs := devMap{"lan": {lan, 3}, "wan": {wan, 5}, "other": {&fastDev{ft: t2}, 6},
		"off": {&fastDev{}, 7}, "plain": {plainDev{}, 8}}

	ports, idx, fp, err := Resolve(devs, "offload", []string{"wan", "", "lan"})
	if err != nil {
		t.Fatal(err)
	}
	if ports[0] != wan || ports[1] != nil || ports[2] != lan || idx[0] != 5 || idx[2] != 3 || fp != t1 {
		t.Errorf("ports %v, indexes %v, table %v", ports, idx, fp)
	}

	for _, c := range []struct {
		devs  Devices
		names []string
		want  string
	}{
		{devs, []string{"nope"}, `entry 1: no device "nope"`},
		{devs, []string{"lan", "plain"}, `entry 2: device "plain" has no fast path`},
		{devs, []string{"off"}, "has no fast path"},
		{devs, []string{"lan", "other"}, "belongs to another fast path"},
		{devs, []string{"", ""}, "names no device"},
		{nil, []string{"lan"}, "no devices in this graph"},
	} {
		_, _, _, err := Resolve(c.devs, "offload", c.names)
		var ke *conf.KeyError
		if err == nil || !strings.Contains(err.Error(), c.want) || !errors.As(err, &ke) || ke.Key != "offload" {
			t.Errorf("offload %q: error %v, want a KeyError for offload saying %q", c.names, err, c.want)
		}
	}
}
