package afpacket

import "github.com/junction-dataplane/junction/drivers"

var _ drivers.QueueStater = (*Device)(nil)

// QueueStats implements drivers.QueueStater: one entry per RX socket (a
// member of the device's fanout group), with its PACKET_STATISTICS drops
// as rx_kernel_dropped. Transmit sockets are per worker, not per queue:
// their counters are the device's only.
func (d *Device) QueueStats() []drivers.QueueCounters {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := make([]drivers.QueueCounters, 0, len(d.rx))
	for i, r := range d.rx {
		if !d.closed {
			r.readKernelStats()
		}
		out = append(out, drivers.QueueCounters{Queue: i, Counters: []drivers.Counter{
			{Name: "rx_packets", Value: r.pkts.Load()},
			{Name: "rx_bytes", Value: r.bytes.Load()},
			{Name: "rx_pool_empty", Value: r.poolEmpty.Load()},
			{Name: "rx_truncated", Value: r.truncated.Load()},
			{Name: "rx_own_skipped", Value: r.outgoingSeen.Load()},
			{Name: "rx_kernel_dropped", Value: r.kernelDrops.Total()},
		}})
	}
	return out
}
