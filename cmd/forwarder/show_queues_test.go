package main

import (
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/junction-dataplane/junction/conf"
	"github.com/junction-dataplane/junction/drivers"
)

// queueTestDevice is a gen device that reports counters per queue, as
// afxdp and afpacket do (their own tests check their figures against the
// kernel): queue 0 has all the received packets, queue 1 seven kernel
// drops. Like an idle afxdp socket, queue 1 also counts the kernel's
// tx_ring_empty and rx_fill_empty events, which are not losses.
type queueTestDevice struct{ drivers.Device }

// idleTxRingEmpty is what an idle afxdp router counted in tx_ring_empty
// after 23 s.
const idleTxRingEmpty = 84480

func (d queueTestDevice) Stats() []drivers.Counter {
	return append(d.Device.Stats(), drivers.Counter{Name: "rx_ring_full", Value: 7},
		drivers.Counter{Name: "rx_fill_empty", Value: 5}, drivers.Counter{Name: "tx_ring_empty", Value: idleTxRingEmpty})
}

func (d queueTestDevice) QueueStats() []drivers.QueueCounters {
	var rx, rxb uint64
	for _, c := range d.Stats() {
		switch c.Name {
		case "rx_packets":
			rx = c.Value
		case "rx_bytes":
			rxb = c.Value
		}
	}
	return []drivers.QueueCounters{
		{Queue: 0, Counters: []drivers.Counter{{Name: "rx_packets", Value: rx}, {Name: "rx_bytes", Value: rxb}, {Name: "rx_ring_full", Value: 0}}},
		{Queue: 1, Counters: []drivers.Counter{{Name: "rx_packets", Value: 0}, {Name: "rx_bytes", Value: 0}, {Name: "rx_ring_full", Value: 7},
			{Name: "rx_fill_empty", Value: 5}, {Name: "tx_ring_empty", Value: idleTxRingEmpty}}},
	}
}

func init() {
	gen, _ := drivers.Lookup("gen")
	drivers.Register(drivers.Driver{Name: "queuetest", NewConfig: gen.NewConfig, Doc: conf.Doc{Summary: "gen with per-queue counters (tests only)"},
		Open: func(cfg any, ctx drivers.OpenContext) (drivers.Device, error) {
			d, err := gen.Open(cfg, ctx)
			if err != nil {
				return nil, err
			}
			return queueTestDevice{d}, nil
		}})
}

const queueGraph = `
[devices.in]
driver = "queuetest"
dst    = "10.0.0.0/16"
queues = 2
mac    = "02:00:00:00:01:01"

[devices.out]
driver = "gen"
dst    = "10.3.0.0/24"

[graph]
links = ["FromDevice(in) -> ToDevice(out)", "FromDevice(out) -> Discard"]
`

// TestShowInterfacesQueues: a driver with per-queue counters gets a row
// per queue (the workers polling it, packets, drops by reason, rates),
// cleared by clear counters but for what came since; one without (gen)
// gets the per-worker rows, labelled as such.
func TestShowInterfacesQueues(t *testing.T) {
	path := ctlRouterGraph(t, queueGraph)
	time.Sleep(1100 * time.Millisecond) // a second of rate samples
	var ifs []ifaceStat
	ctlJSON(t, path, &ifs, "show", "interfaces")
	if len(ifs) != 2 || ifs[0].Device != "in" || len(ifs[0].Queues) != 2 || len(ifs[1].Queues) != 0 {
		t.Fatalf("interfaces: %+v", ifs)
	}
	q0, q1 := ifs[0].Queues[0], ifs[0].Queues[1]
	if q0.Queue != 0 || q0.RxPackets == 0 || q0.RxPackets > ifs[0].RxPackets || q0.RxPPS1 == 0 || len(q0.Drops) != 0 {
		t.Errorf("queue 0: %+v (device rx %d)", q0, ifs[0].RxPackets)
	}
	if q1.Queue != 1 || q1.RxPackets != 0 || len(q1.Drops) != 1 || q1.Drops[0].Name != "rx_ring_full" || q1.Drops[0].Value != 7 {
		t.Errorf("queue 1: %+v", q1)
	}
	// The device's drops are its losses only: rx_ring_full, not the
	// kernel's tx_ring_empty and rx_fill_empty events.
	for _, c := range ifs[0].Drops {
		if c.Name == "tx_ring_empty" || c.Name == "rx_fill_empty" || c.Name == "rx_pool_empty" {
			t.Errorf("device drops list the event counter %s %d: %+v", c.Name, c.Value, ifs[0].Drops)
		}
	}
	// show errors: the one loss is the device's rx_ring_full; what the
	// Discard took is consumed, and tx_ring_empty is no row at all.
	var errs errorsResult
	ctlJSON(t, path, &errs, "show", "errors")
	if errs.Drops != 0 || errs.DeviceDrops != 7 || len(errs.Rows) != 1 || errs.Rows[0].Counter != "rx_ring_full" || errs.Consumed == 0 {
		t.Errorf("show errors: %+v", errs)
	}
	code, out, _ := ctl(t, path, "show", "errors")
	if code != 0 || strings.Contains(out, "tx_ring_empty") || strings.Contains(out, "discarded") ||
		!strings.Contains(out, "total drops 7 (elements 0, devices 7), consumed ") {
		t.Errorf("show errors: exit %d\n%s", code, out)
	}
	code, out, _ = ctl(t, path, "show", "errors", "-all")
	if code != 0 || strings.Contains(out, "tx_ring_empty") || !regexp.MustCompile(`discarded \(consumed, not a drop\)`).MatchString(out) {
		t.Errorf("show errors -all: exit %d\n%s", code, out)
	}
	for _, q := range ifs[0].Queues {
		if len(q.Workers) != 1 || q.Workers[0] != 0 {
			t.Errorf("queue %d polled by workers %v, want [0]", q.Queue, q.Workers)
		}
	}
	if len(ifs[0].Workers) != 1 || ifs[0].Workers[0].Packets == 0 || len(ifs[0].Workers[0].Queues) != 2 {
		t.Errorf("per worker: %+v", ifs[0].Workers)
	}

	code, out, _ = ctl(t, path, "show", "interfaces")
	if code != 0 || !strings.Contains(out, "  queue 1 (workers [0]): rx 0 packets") || !strings.Contains(out, "drops: rx_ring_full 7") ||
		!strings.Contains(out, "per worker (the gen driver keeps no per-queue counters)") || !strings.Contains(out, "worker 0 (FromDevice(in)") {
		t.Errorf("table: exit %d\n%s", code, out)
	}
	if strings.Count(out, "per worker (") != 1 {
		t.Errorf("the per-worker label belongs to gen's device only:\n%s", out)
	}
	if strings.Contains(out, "tx_ring_empty 84480;") || strings.Contains(out, "drops: rx_ring_full 7, rx_fill_empty") {
		t.Errorf("an event counter listed with the drops:\n%s", out)
	}

	ctl(t, path, "clear", "counters")
	ctlJSON(t, path, &ifs, "show", "interfaces", "in")
	if len(ifs) != 1 || ifs[0].Queues[1].RxPackets != 0 || len(ifs[0].Queues[1].Drops) != 0 || ifs[0].Queues[0].RxPackets >= q0.RxPackets+ifs[0].RxPackets+1 {
		t.Errorf("after clear counters: %+v", ifs)
	}
}
