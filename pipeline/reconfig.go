package pipeline

import (
	"errors"
	"fmt"
	"reflect"
	"slices"

	"github.com/junction-dataplane/junction/drivers"
)

// reconfigureDevices handles the devices whose keys change in a reload.
// A device of an exclusive driver (afxdp: one socket per queue, one XDP
// program) cannot be opened a second time while the running one holds
// its interface: if its driver implements drivers.Reconfigurer and only
// keys it can change in place differ (afxdp: queues), it is kept open,
// same instance, and its prepared change joins the workers' barrier
// (Apply with every worker parked, Finish after); otherwise the reload is
// refused before anything is opened (opening it again would fail, or,
// where the kernel has no BPF links, take the XDP program off the
// running device first). A device of another driver that implements
// drivers.Reconfigurer is kept the same way when it can make the change in
// place (afpacket: more queues), refused when it says it cannot, and
// closed and opened again, like any other changed device, when it answers
// drivers.ErrReopen.
// The reconfigured devices are marked kept in keptNew and listed in
// rep.DevicesReconfigured (instead of closed and opened).
func reconfigureDevices(g1, g2 *Graph, running, devs []drivers.Device, keptNew []bool, rep *ReloadReport, dry bool) ([]drivers.WorkerChange, error) {
	var changes []drivers.WorkerChange
	keep := func(i int, od, d *Device, dev drivers.Device, c drivers.WorkerChange, summary string, changes []drivers.WorkerChange) []drivers.WorkerChange {
		devs[i] = dev
		keptNew[i] = true
		if c != nil {
			changes = append(changes, c)
		}
		rep.DevicesClosed = slices.DeleteFunc(rep.DevicesClosed, func(s string) bool { return s == od.Name+" ("+driverName(od)+", changed)" })
		rep.DevicesOpened = slices.DeleteFunc(rep.DevicesOpened, func(s string) bool { return s == d.Name+" ("+driverName(d)+", changed)" })
		rep.DevicesReconfigured = append(rep.DevicesReconfigured, d.Name+" ("+driverName(d)+"): "+summary)
		return changes
	}
	fail := func(err error) ([]drivers.WorkerChange, error) {
		for _, c := range changes {
			c.Abort()
		}
		return nil, err
	}
	for i, d := range g2.Devices {
		od := g1.Device(d.Name)
		if keptNew[i] || od == nil || od.Driver == nil {
			continue
		}
		dev := running[od.Index]
		rc, ok := dev.(drivers.Reconfigurer)
		if !od.Driver.Exclusive {
			if !ok || d.Driver == nil || d.Driver.Name != od.Driver.Name || d.MAC != od.MAC || !slices.Equal(d.Addresses, od.Addresses) ||
				reflect.TypeOf(d.Config) != reflect.TypeOf(od.Config) {
				continue // reopened
			}
			c, summary, err := rc.Reconfigure(d.Config, dry)
			if errors.Is(err, drivers.ErrReopen) {
				continue
			}
			if err != nil {
				return fail(fmt.Errorf("%s: device %q (driver %s): %w", d.Pos, d.Name, driverName(d), err))
			}
			changes = keep(i, od, d, dev, c, summary, changes)
			continue
		}
		if !ok || d.Driver == nil || d.Driver.Name != od.Driver.Name || d.MAC != od.MAC || !slices.Equal(d.Addresses, od.Addresses) ||
			reflect.TypeOf(d.Config) != reflect.TypeOf(od.Config) {
			return fail(fmt.Errorf("%s: device %q (driver %s): its keys change, but the running device holds its interface exclusively until the swap and a reload cannot reopen it: restart the forwarder to change them", d.Pos, d.Name, driverName(d)))
		}
		c, summary, err := rc.Reconfigure(d.Config, dry)
		if err != nil {
			return fail(fmt.Errorf("%s: device %q (driver %s): %w", d.Pos, d.Name, driverName(d), err))
		}
		changes = keep(i, od, d, dev, c, summary, changes)
	}
	return changes, nil
}
