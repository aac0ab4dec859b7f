package pipeline

import "github.com/junction-dataplane/junction/drivers"

// QueueStats are one RX queue's driver counters.
type QueueStats struct {
	Queue    int             `json:"queue"`
	Counters []DeviceCounter `json:"counters"`
}

// queueStats reads d's per-queue counters, if its driver keeps them.
func queueStats(d drivers.Device) []QueueStats {
	qs, ok := d.(drivers.QueueStater)
	if !ok {
		return nil
	}
	per := qs.QueueStats()
	out := make([]QueueStats, len(per))
	for i, q := range per {
		out[i] = QueueStats{Queue: q.Queue, Counters: make([]DeviceCounter, len(q.Counters))}
		for j, c := range q.Counters {
			out[i].Counters[j] = DeviceCounter{c.Name, c.Value}
		}
	}
	return out
}
