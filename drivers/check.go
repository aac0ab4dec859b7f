package drivers

import (
	"net"
	"sync"

	"github.com/junction-dataplane/junction/conf"
	"github.com/junction-dataplane/junction/packet"
)

// CheckFunc checks a device's config against the environment as Open
// would — files that must exist, interfaces that must be there — without
// opening anything, creating a file or touching an interface, and returns
// the Info the device would have (its MAC: the mac key's, or the
// interface's). forwarder check and the pipeline's validation pass run
// it; Open still reports the same errors for what only opening can find.
type CheckFunc func(cfg any, ctx OpenContext) (Info, error)

// The registry of driver checks, as the registry of drivers.
var (
	checkMu sync.RWMutex
	checks  = map[string]CheckFunc{}
)

// RegisterCheck sets the check of a driver (by name), from the driver's
// package; a driver without one is checked by its keys only.
func RegisterCheck(driver string, f CheckFunc) {
	checkMu.Lock()
	defer checkMu.Unlock()
	checks[driver] = f
}

// Check runs the driver's check. known is false for a driver without one:
// what its device will be is then unknown until it is opened.
func Check(driver string, cfg any, ctx OpenContext) (info Info, known bool, err error) {
	checkMu.RLock()
	f := checks[driver]
	checkMu.RUnlock()
	if f == nil {
		return Info{}, false, nil
	}
	info, err = f(cfg, ctx)
	return info, err == nil, err
}

// CheckInterface is the check of a driver on a kernel interface (afxdp,
// afpacket): the interface exists in this network namespace, and info's
// MAC, when the mac key left it unset, is the interface's.
func CheckInterface(info *Info, ifname string) error {
	ifi, err := net.InterfaceByName(ifname)
	if err != nil {
		return conf.Errorf("interface", "no interface %q in this network namespace (run the forwarder in the interface's namespace: ip netns exec NS forwarder run ...)", ifname)
	}
	if info.MAC == (packet.MAC{}) && len(ifi.HardwareAddr) == 6 {
		copy(info.MAC[:], ifi.HardwareAddr)
	}
	return nil
}

// ValidInterfaceName checks an interface key's value without touching the
// system: set, and no longer than an interface name can be.
func ValidInterfaceName(name string) error {
	if name == "" {
		return conf.Errorf("interface", "required: the network interface to open (e.g. \"eth0\")")
	}
	if len(name) > 15 {
		return conf.Errorf("interface", "%q is longer than an interface name can be (15 bytes)", name)
	}
	return nil
}
