package main

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/junction-dataplane/junction/drivers"
	"github.com/junction-dataplane/junction/pipeline"
	"github.com/junction-dataplane/junction/pipeline/statstable"
)

// ifaceQueue is one RX queue of show interfaces, from a driver that keeps
// counters per queue (drivers.QueueStater).
type ifaceQueue struct {
	Queue     int    `json:"queue"`
	Workers   []int  `json:"workers"` // the workers polling it
	RxPackets uint64 `json:"rx_packets"`
	RxBytes   uint64 `json:"rx_bytes"`
	TxPackets uint64 `json:"tx_packets"`
	TxBytes   uint64 `json:"tx_bytes"`
	// Drops are its non-zero loss counters by reason (drivers.IsLoss), the
	// kernel's for its socket included (rx_kernel_dropped, rx_ring_full...;
	// not events such as tx_ring_empty or rx_fill_empty).
	Drops    []pipeline.DeviceCounter `json:"drops"`
	Counters []pipeline.DeviceCounter `json:"counters"`
	RxPPS1   float64                  `json:"rx_pps_1s"`
	RxPPS10  float64                  `json:"rx_pps_10s"`
}

func findQueue(d *pipeline.DeviceStats, q int) []pipeline.DeviceCounter {
	if d == nil {
		return nil
	}
	for _, qs := range d.Queues {
		if qs.Queue == q {
			return qs.Counters
		}
	}
	return nil
}

func queueCounter(cs []pipeline.DeviceCounter, name string) uint64 {
	for _, c := range cs {
		if c.Name == name {
			return c.Value
		}
	}
	return 0
}

// perQueue builds the per-queue rows of device d (counters since the last
// clear), with receive rates from the raw counters now (raw) and about 1
// and 10 s ago (p1, p10); workerQueues lists the queues each worker polls.
func perQueue(d, raw, p1, p10 *pipeline.DeviceStats, age1, age10 time.Duration, workerQueues [][]int) []ifaceQueue {
	out := []ifaceQueue{}
	if d == nil {
		return out
	}
	rate := func(q int, prev *pipeline.DeviceStats, age time.Duration) float64 {
		if prev == nil || age <= 0 {
			return 0
		}
		a, b := queueCounter(findQueue(raw, q), "rx_packets"), queueCounter(findQueue(prev, q), "rx_packets")
		if a < b {
			return 0
		}
		return float64(a-b) / age.Seconds()
	}
	for _, qs := range d.Queues {
		row := ifaceQueue{Queue: qs.Queue, Workers: []int{}, Counters: qs.Counters, Drops: []pipeline.DeviceCounter{},
			RxPackets: queueCounter(qs.Counters, "rx_packets"), RxBytes: queueCounter(qs.Counters, "rx_bytes"),
			TxPackets: queueCounter(qs.Counters, "tx_packets"), TxBytes: queueCounter(qs.Counters, "tx_bytes"),
			RxPPS1: rate(qs.Queue, p1, age1), RxPPS10: rate(qs.Queue, p10, age10)}
		for w, qq := range workerQueues {
			if slices.Contains(qq, qs.Queue) {
				row.Workers = append(row.Workers, w)
			}
		}
		for _, c := range qs.Counters {
			if drivers.IsLoss(c.Name) && c.Value > 0 {
				row.Drops = append(row.Drops, c)
			}
		}
		out = append(out, row)
	}
	return out
}

// subQueues is queues (of device dev) less their values in base.
func subQueues(dev string, queues []pipeline.QueueStats, base *pipeline.Snapshot) []pipeline.QueueStats {
	if len(queues) == 0 {
		return queues
	}
	b := findDevice(base, dev)
	out := make([]pipeline.QueueStats, len(queues))
	for i, q := range queues {
		prev := findQueue(b, q.Queue)
		cs := make([]pipeline.DeviceCounter, len(q.Counters))
		for j, c := range q.Counters {
			if v := queueCounter(prev, c.Name); v <= c.Value {
				c.Value -= v
			} else {
				c.Value = 0
			}
			cs[j] = c
		}
		out[i] = pipeline.QueueStats{Queue: q.Queue, Counters: cs}
	}
	return out
}

func intList(xs []int) string {
	s := make([]string, len(xs))
	for i, n := range xs {
		s[i] = strconv.Itoa(n)
	}
	return strings.Join(s, ",")
}

// printQueues prints a device's per-queue rows, then its per-worker ones,
// saying which is which.
func printQueues(w io.Writer, is *ifaceStat) {
	for _, q := range is.Queues {
		fmt.Fprintf(w, "  queue %d (workers [%s]): rx %d packets %d bytes, tx %d packets %d bytes, rx %s (1s) %s (10s)",
			q.Queue, intList(q.Workers), q.RxPackets, q.RxBytes, q.TxPackets, q.TxBytes, statstable.FormatRate(q.RxPPS1), statstable.FormatRate(q.RxPPS10))
		var drops []string
		for _, c := range q.Drops {
			drops = append(drops, fmt.Sprintf("%s %d", c.Name, c.Value))
		}
		if len(drops) > 0 {
			fmt.Fprintf(w, "; drops: %s", strings.Join(drops, ", "))
		}
		fmt.Fprintln(w)
	}
	if len(is.Workers) > 0 && len(is.Queues) == 0 {
		fmt.Fprintf(w, "  per worker (the %s driver keeps no per-queue counters):\n", is.Driver)
	}
	for _, q := range is.Workers {
		fmt.Fprintf(w, "  worker %d (%s, polls queues [%s]): %d packets, %d drops, %s (1s) %s (10s)\n", q.Worker, q.Element, intList(q.Queues),
			q.Packets, q.Drops, statstable.FormatRate(q.PPS1), statstable.FormatRate(q.PPS10))
	}
}
