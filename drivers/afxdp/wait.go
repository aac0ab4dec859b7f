package afxdp

import "github.com/junction-dataplane/junction/drivers"

var (
	_ drivers.RxWaiter = (*Device)(nil)
	_ drivers.TxWaiter = (*Device)(nil)
)

// RxFD implements drivers.RxWaiter: the queue's AF_XDP socket, which
// poll(2) reports readable while its RX ring holds frames (the kernel
// wakes it when it flushes frames onto the ring, in copy and zero-copy
// mode alike).
func (d *Device) RxFD(q int) int {
	if c := d.pending; c != nil && q >= len(d.queues) && q-len(d.queues) < len(c.added) {
		// A queue a reload is adding: the new graph is being built.
		return c.added[q-len(d.queues)].xsk.FD()
	}
	if q < 0 || q >= len(d.queues) || d.queues[q].xsk == nil {
		return -1
	}
	return d.queues[q].xsk.FD()
}

// TxIdle implements drivers.TxWaiter. In copy mode the kernel sends a TX
// ring's frames only when kicked (sendto), about 32 per kick, and poll(2)
// does not kick unless the socket was bound with XDP_USE_NEED_WAKEUP
// (xsk_poll; this driver does not set it): a worker that slept with
// frames on its ring would leave them there until it woke. TxIdle kicks
// once and reports whether the ring is empty.
func (d *Device) TxIdle(w int) bool {
	if w < 0 || w >= len(d.txq) {
		return true
	}
	return d.txq[w].txIdle()
}

func (q *queue) txIdle() bool {
	if q.shared {
		q.mu.Lock()
		defer q.mu.Unlock()
	}
	if q.xsk == nil {
		return true
	}
	if q.xsk.NumFreeTxSlots() == q.ring {
		return true
	}
	q.kick()
	return q.xsk.NumFreeTxSlots() == q.ring
}
