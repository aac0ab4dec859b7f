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
		p, b, e, t, o, k := r.counts()
		out = append(out, drivers.QueueCounters{Queue: i, Counters: []drivers.Counter{
			{Name: "rx_packets", Value: p},
			{Name: "rx_bytes", Value: b},
			{Name: "rx_pool_empty", Value: e},
			{Name: "rx_truncated", Value: t},
			{Name: "rx_own_skipped", Value: o},
			{Name: "rx_kernel_dropped", Value: k},
		}})
	}
	return out
}
