package main

import (
	"github.com/junction-dataplane/junction/drivers"
	"time"

	"github.com/junction-dataplane/junction/elements"
	"github.com/junction-dataplane/junction/pipeline"
)

// The results of `show …`, as the server sends them (JSON) and the
// client prints them (-format table).

type flowsResult struct {
	Filter  string          `json:"filter,omitempty"`
	Flows   []elements.Flow `json:"flows,omitempty"`
	Matched int             `json:"matched"` // flows matching the filter
	Total   int             `json:"total"`   // live flows
	Limited bool            `json:"limited,omitempty"`
	Count   bool            `json:"count_only,omitempty"` // -count: no flows listed
}

type routesResult struct {
	Element string `json:"element"`         // the table's first IPLookup
	Table   string `json:"table,omitempty"` // the [tables] name ("": the element's own)
	Source  string `json:"source"`
	// Unmirrored counts the kernel table's routes of types the mirror
	// does not copy (source kernel), by type.
	Unmirrored map[string]int       `json:"unmirrored,omitempty"`
	Query      string               `json:"query,omitempty"`
	Found      bool                 `json:"found"`
	Routes     []elements.LiveRoute `json:"routes"`
}

type neighborRow struct {
	Element string `json:"element"`
	elements.Neighbor
}

type ifaceRate struct {
	Seconds float64 `json:"seconds"` // the interval actually measured
	RxPPS   float64 `json:"rx_pps"`
	TxPPS   float64 `json:"tx_pps"`
	RxBPS   float64 `json:"rx_bps"` // bits per second
	TxBPS   float64 `json:"tx_bps"`
}

type queueStat struct {
	Element string  `json:"element"` // the FromDevice
	Worker  int     `json:"worker"`
	Queues  []int   `json:"queues"` // RX queues this worker polls
	Packets uint64  `json:"packets"`
	Drops   uint64  `json:"drops"`
	PPS1    float64 `json:"pps_1s"`
	PPS10   float64 `json:"pps_10s"`
}

type ifaceStat struct {
	Device    string                   `json:"device"`
	Driver    string                   `json:"driver"`
	RxPackets uint64                   `json:"rx_packets"`
	RxBytes   uint64                   `json:"rx_bytes"`
	TxPackets uint64                   `json:"tx_packets"`
	TxBytes   uint64                   `json:"tx_bytes"`
	Drops     []pipeline.DeviceCounter `json:"drops"` // loss counters by reason (drivers.IsLoss), the kernel's included (link_*)
	Counters  []pipeline.DeviceCounter `json:"counters"`
	Modes     []drivers.Mode           `json:"modes,omitempty"` // what the driver settled on (afxdp: XDP mode, zero-copy, effective fast path)
	Rate1     ifaceRate                `json:"rate_1s"`
	Rate10    ifaceRate                `json:"rate_10s"`
	// Queues are the driver's counters per RX queue (afxdp: each
	// socket's, with its XDP_STATISTICS; afpacket: each fanout socket's);
	// empty when the driver keeps none (show_queues.go).
	Queues []ifaceQueue `json:"queues"`
	// Workers are the graph's figures per worker: the FromDevice instance
	// reading the device on each worker, with the queues it polls.
	Workers []queueStat `json:"workers"`
}

type runtimeRow struct {
	Element         string  `json:"element"`
	Type            string  `json:"type"`
	Worker          int     `json:"worker"` // -1: all workers
	Packets         uint64  `json:"packets"`
	Batches         uint64  `json:"batches"`
	Drops           uint64  `json:"drops"`
	Consumed        uint64  `json:"consumed"` // freed by design (Discard...): not drops
	NsPerPacket     float64 `json:"ns_per_packet"`
	PacketsPerBatch float64 `json:"packets_per_batch"`
}

type runtimeResult struct {
	Uptime    time.Duration            `json:"uptime_ns"`
	Since     time.Duration            `json:"since_clear_ns"` // counted over this long (uptime if never cleared)
	Graph     pipeline.GraphGeneration `json:"graph"`          // the running graph: generation, file, when loaded
	PerWorker bool                     `json:"per_worker,omitempty"`
	Elements  []runtimeRow             `json:"elements"`
	Workers   []pipeline.WorkerStats   `json:"workers"`
	Totals    pipeline.Totals          `json:"totals"`
	// Snapshot is the accounting since the last clear (its Uptime is
	// Since), as run's exit table and forwarder stats print it: the
	// table format renders it with statstable.Render.
	Snapshot *pipeline.Snapshot `json:"snapshot"`
}

type errorRow struct {
	Element  string `json:"element"`
	Type     string `json:"type"`
	Worker   int    `json:"worker"` // -1: all workers
	Counter  string `json:"counter"`
	Drop     bool   `json:"drop"`
	Consumed bool   `json:"consumed,omitempty"` // freed by design (-all): not a drop
	Value    uint64 `json:"value"`
}

type errorsResult struct {
	Since time.Duration `json:"since_clear_ns"`
	Rows  []errorRow    `json:"errors"`
	// Drops are the elements' drops, DeviceDrops the devices' loss
	// counters (drivers.IsLoss); Consumed what elements freed by design,
	// which is not a drop.
	Drops       uint64 `json:"total_drops"`
	DeviceDrops uint64 `json:"device_drops"`
	Consumed    uint64 `json:"total_consumed"`
}
