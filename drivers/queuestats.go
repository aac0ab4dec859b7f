package drivers

// QueueCounters are one RX queue's counters, as a QueueStater reports
// them: the same names as the device's Stats, counting that queue's
// share (its socket's, for the kernel's counters).
type QueueCounters struct {
	Queue    int
	Counters []Counter
}

// QueueStater is implemented by a device that keeps its counters per RX
// queue (afxdp: one AF_XDP socket per queue with its XDP_STATISTICS;
// afpacket: one socket per fanout member with its PACKET_STATISTICS), so
// that forwarder show interfaces prints them queue by queue. Summed over
// the queues, a counter equals the device's Stats counter of that name
// (transmit counters may be the device's only: queues are for receiving).
// It is read off the hot path, as Stats is.
type QueueStater interface {
	QueueStats() []QueueCounters
}
