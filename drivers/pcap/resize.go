package pcap

import "github.com/junction-dataplane/junction/drivers"

var _ drivers.WorkerResizer = (*Device)(nil)

// ResizeWorkers implements drivers.WorkerResizer: a pcap device keeps
// nothing per worker (one file each way, written under a lock per batch),
// so a reload that changes the number of workers keeps it open as it is.
func (d *Device) ResizeWorkers(int) (drivers.WorkerChange, error) {
	return drivers.NoWorkerChange{}, nil
}
