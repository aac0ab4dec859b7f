package afxdp

import (
	"fmt"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/junction-dataplane/junction/drivers"
)

var _ drivers.RxPositioner = (*Device)(nil)

// RxPosition implements drivers.RxPositioner: the RX ring's producer index
// (the kernel's, read atomically: any goroutine may ask) and consumer index
// (written by the queue's reader).
func (d *Device) RxPosition(q int) (arrived, taken uint32) {
	if q < 0 || q >= len(d.queues) || d.queues[q].rxProd == nil {
		return 0, 0
	}
	qu := d.queues[q]
	return atomic.LoadUint32(qu.rxProd), atomic.LoadUint32(qu.rxCons)
}

// mapRxIndices maps the RX ring's producer and consumer indices a second
// time (the socket's own mapping is private to the xdp package): only the
// page that holds them.
func (q *queue) mapRxIndices(fd int, off unix.XDPMmapOffsets) error {
	n := int(max(off.Rx.Producer, off.Rx.Consumer)) + 4
	mem, err := unix.Mmap(fd, unix.XDP_PGOFF_RX_RING, n, unix.PROT_READ, unix.MAP_SHARED|unix.MAP_POPULATE)
	if err != nil {
		return fmt.Errorf("mapping the RX ring's indices: %v", err)
	}
	q.rxMem = mem
	q.rxProd = (*uint32)(unsafe.Pointer(&mem[off.Rx.Producer]))
	q.rxCons = (*uint32)(unsafe.Pointer(&mem[off.Rx.Consumer]))
	return nil
}
