package pipeline

import (
	"testing"
	"time"
)

// tableSnapshot is a two-worker snapshot of a small router, in graph order.
func tableSnapshot() *Snapshot {
	el := func(name, typ string, w int, batches, pkts, drops, tns, tp uint64, cs ...Counter) ElementStats {
		e := ElementStats{Element: name, Type: typ, Worker: w, Batches: batches, Packets: pkts, Drops: drops,
			TimedNanos: tns, TimedPackets: tp, Counters: cs}
		e.fill()
		return e
	}
	s := &Snapshot{Uptime: 5 * time.Second}
	for w := 0; w < 2; w++ {
		k := uint64(w + 1)
		s.Elements = append(s.Elements,
			el("FromDevice(lan)@1", "FromDevice", w, 100*k, 6400*k, 0, 1000*k, 100*k),
			el("rt", "IPLookup", w, 100*k, 6400*k, 10*k, 3000*k, 100*k, Counter{Name: "no route", Drop: true, Value: 10 * k}),
			el("ToDevice(wan)@3", "ToDevice", w, 100*k, 6390*k, 0, 500*k, 100*k))
		s.Workers = append(s.Workers, WorkerStats{Worker: w, CPU: w, BusyNanos: 4e9, IdleNanos: 1e9, CPUNanos: uint64(1.5e9) * k,
			Busy: 0.8, TimedBusyNanos: 4500 * k})
	}
	s.Devices = []DeviceStats{{Device: "lan", Driver: "gen", Counters: []DeviceCounter{{"rx_packets", 19200}}},
		{Device: "wan", Driver: "gen", Counters: []DeviceCounter{{"tx_packets", 19170}}}}
	s.Totals = Totals{RX: 19200, TX: 19170, Drops: 30}
	return s
}

// TestElementTotals: sums across workers, ns/packet weighted by the timed
// packets, counters by name.
func TestElementTotals(t *testing.T) {
	tot := tableSnapshot().ElementTotals()
	if len(tot) != 3 || tot[0].Element != "FromDevice(lan)@1" || tot[2].Element != "ToDevice(wan)@3" {
		t.Fatalf("totals %+v", tot)
	}
	rt := tot[1]
	if rt.Packets != 19200 || rt.Drops != 30 || rt.Batches != 300 || rt.NsPerPacket != 30 || rt.Worker != -1 {
		t.Errorf("rt total %+v", rt)
	}
	if len(rt.Counters) != 1 || rt.Counters[0].Value != 30 {
		t.Errorf("rt counters %+v", rt.Counters)
	}
}

// TestSince: the interval between two snapshots holds the differences.
func TestSince(t *testing.T) {
	a, b := tableSnapshot(), tableSnapshot()
	for i := range b.Elements {
		b.Elements[i].Packets += 64
		b.Elements[i].Batches++
	}
	b.Totals.RX += 128
	b.Uptime += time.Second
	d := b.Since(a)
	if d.Uptime != time.Second || d.Totals.RX != 128 || d.Elements[0].Packets != 64 || d.Elements[0].Batches != 1 {
		t.Errorf("interval %+v", d)
	}
	if d.Workers[0].BusyNanos != 0 || d.Devices[0].Counters[0].Value != 0 {
		t.Errorf("unchanged counters not zero: %+v %+v", d.Workers[0], d.Devices[0])
	}
}
