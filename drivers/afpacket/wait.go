package afpacket

import "github.com/junction-dataplane/junction/drivers"

var _ drivers.RxWaiter = (*Device)(nil)

// RxFD implements drivers.RxWaiter: the fanout member's packet socket,
// which poll(2) reports readable while its RX ring holds a frame the
// kernel has handed to user space (packet_poll). Transmission is a
// synchronous sendmmsg: nothing waits for a kick, so the device has no
// TxIdle.
func (d *Device) RxFD(q int) int {
	if g := d.pending; g != nil && q >= len(d.rx) && q-len(d.rx) < len(g.added) {
		return g.added[q-len(d.rx)].waitFD() // a queue a reload is adding
	}
	if q < 0 || q >= len(d.rx) {
		return -1
	}
	return d.rx[q].waitFD()
}
