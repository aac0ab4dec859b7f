package offloadkey

import (
	"github.com/junction-dataplane/junction/conf"
	"github.com/junction-dataplane/junction/drivers"
)

// Devices is the device lookup Resolve needs: elements.DeviceSet, which
// Context.Devices is, has it.
type Devices interface {
	Device(name string) (dev drivers.Device, index int, ok bool)
}

// Namer is implemented by configs whose offload key names the devices
// whose fast path they program (IPLookup, FastTrack). The pipeline's
// validation pass, shared by forwarder check and run, verifies before any
// device is opened that each named device exists and runs a fast path
// (drivers.Info.FastPath), as Resolve does when the element is built.
type Namer interface {
	// OffloadDevices returns the key's entries ("" for a port that is
	// not offloaded).
	OffloadDevices() []string
}

// Resolve resolves offload key key: names are device names, one per port
// in port order ("" for a port without one). It returns the devices by
// port (nil where the name is ""), their device indexes (the InDevice
// annotation of their packets), and the table they share. Errors are
// conf.KeyErrors naming key and the entry.
func Resolve(devs Devices, key string, names []string) ([]drivers.Device, []int, drivers.FastPathTable, error) {
	ports := make([]drivers.Device, len(names))
	idx := make([]int, len(names))
	var fp drivers.FastPathTable
	for i, n := range names {
		if n == "" {
			continue
		}
		if devs == nil {
			return nil, nil, nil, conf.Errorf(key, "entry %d: no devices in this graph", i+1)
		}
		d, ix, ok := devs.Device(n)
		if !ok {
			return nil, nil, nil, NoDevice(key, i, n)
		}
		f, ok := d.(drivers.FastPath)
		if !ok || f.FastPathTable() == nil {
			return nil, nil, nil, NoFastPath(key, i, n)
		}
		if fp == nil {
			fp = f.FastPathTable()
		} else if f.FastPathTable() != fp {
			return nil, nil, nil, conf.Errorf(key, "entry %d: device %q belongs to another fast path than the earlier entries'", i+1, n)
		}
		ports[i], idx[i] = d, ix
	}
	if fp == nil {
		return nil, nil, nil, conf.Errorf(key, "names no device")
	}
	return ports, idx, fp, nil
}

// NoDevice is the error for entry i (from 0) of key naming a device the
// graph does not have.
func NoDevice(key string, i int, name string) error {
	return conf.Errorf(key, "entry %d: no device %q", i+1, name)
}

// NoFastPath is the error for entry i (from 0) of key naming a device
// without a fast path.
func NoFastPath(key string, i int, name string) error {
	return conf.Errorf(key, "entry %d: device %q has no fast path (it needs driver = \"afxdp\" with fastpath = true, or driver = \"afpacket\" with fastpath = \"auto\" or \"tc\")", i+1, name)
}
