package afxdp

import "github.com/junction-dataplane/junction/drivers"

var _ drivers.QueueStater = (*Device)(nil)

// QueueStats implements drivers.QueueStater: each queue's socket counters
// and its kernel's XDP_STATISTICS (rx_kernel_dropped: rx_dropped, frames
// the kernel dropped for the socket; rx_ring_full: the RX ring was full;
// rx_fill_empty: the fill ring had no frame; tx_invalid_descs;
// tx_ring_empty), with the names Stats sums them under. A queue that
// transmits for several workers (a shared socket) counts their frames.
func (d *Device) QueueStats() []drivers.QueueCounters {
	d.mu.RLock()
	defer d.mu.RUnlock()
	out := make([]drivers.QueueCounters, 0, len(d.queues))
	for _, q := range d.queues {
		k := q.kernelStats() // the last reading once closed
		out = append(out, drivers.QueueCounters{Queue: int(q.id), Counters: []drivers.Counter{
			{Name: "rx_packets", Value: q.rxPkts.Load()},
			{Name: "rx_bytes", Value: q.rxBytes.Load()},
			{Name: "tx_packets", Value: q.txPkts.Load()},
			{Name: "tx_bytes", Value: q.txBytes.Load()},
			{Name: "tx_dropped", Value: q.txDropped.Load()},
			{Name: "tx_dropped_nobuf", Value: q.txNoBuf.Load()},
			{Name: "tx_kicks_failed", Value: q.txKickFailed.Load()},
			{Name: drivers.CounterTxUnconfirmed, Value: q.txUnconfirmed.Load()},
			{Name: "rx_pool_empty", Value: q.poolEmpty.Load()},
			{Name: "rx_invalid", Value: q.rxInvalid.Load()},
			{Name: "rx_kernel_dropped", Value: k.Rx_dropped},
			{Name: "rx_ring_full", Value: k.Rx_ring_full},
			{Name: "rx_fill_empty", Value: k.Rx_fill_ring_empty_descs},
			{Name: "tx_invalid_descs", Value: k.Tx_invalid_descs},
			{Name: "tx_ring_empty", Value: k.Tx_ring_empty_descs},
		}})
	}
	return out
}
