package statstable

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/junction-dataplane/junction/pipeline"
)

var updateGolden = flag.Bool("update-table", false, "rewrite testdata/*.golden")

// tableSnapshot is a two-worker snapshot of a small router, in graph order.
func tableSnapshot() *pipeline.Snapshot {
	el := func(name, typ string, w int, batches, pkts, drops, tns, tp uint64, cs ...pipeline.Counter) pipeline.ElementStats {
		e := pipeline.ElementStats{Element: name, Type: typ, Worker: w, Batches: batches, Packets: pkts, Drops: drops,
			TimedNanos: tns, TimedPackets: tp, Counters: cs}
		fill(&e)
		return e
	}
	s := &pipeline.Snapshot{Uptime: 5 * time.Second}
	for w := 0; w < 2; w++ {
		k := uint64(w + 1)
		s.Elements = append(s.Elements,
			el("FromDevice(lan)@1", "FromDevice", w, 100*k, 6400*k, 0, 1000*k, 100*k),
			el("rt", "IPLookup", w, 100*k, 6400*k, 10*k, 3000*k, 100*k, pipeline.Counter{Name: "no route", Drop: true, Value: 10 * k}),
			el("ToDevice(wan)@3", "ToDevice", w, 100*k, 6390*k, 0, 500*k, 100*k))
		s.Workers = append(s.Workers, pipeline.WorkerStats{Worker: w, CPU: w, BusyNanos: 4e9, IdleNanos: 1e9, CPUNanos: uint64(1.5e9) * k,
			Busy: 0.8, TimedBusyNanos: 4500 * k})
	}
	s.Devices = []pipeline.DeviceStats{{Device: "lan", Driver: "gen", Counters: []pipeline.DeviceCounter{{Name: "rx_packets", Value: 19200}}},
		{Device: "wan", Driver: "gen", Counters: []pipeline.DeviceCounter{{Name: "tx_packets", Value: 19170}}}}
	s.Totals = pipeline.Totals{RX: 19200, TX: 19170, Drops: 30}
	return s
}

// fill sets the figures a router's snapshot derives from the counters.
func fill(e *pipeline.ElementStats) {
	if e.TimedPackets > 0 {
		e.NsPerPacket = float64(e.TimedNanos) / float64(e.TimedPackets)
		e.Nanos = uint64(e.NsPerPacket*float64(e.Packets) + 0.5)
	}
	if e.Batches > 0 {
		e.PacketsPerBatch = float64(e.Packets) / float64(e.Batches)
	}
}

// consumedSnapshot is tableSnapshot with a Discard(not ip) that consumed
// 5 packets on worker 0 and 10 on worker 1: its consumption is a column and
// a total of its own, not drops.
func consumedSnapshot() *pipeline.Snapshot {
	s := tableSnapshot()
	for w := 0; w < 2; w++ {
		k := uint64(w + 1)
		e := pipeline.ElementStats{Element: "Discard@4", Type: "Discard", Worker: w, Batches: 5 * k, Packets: 5 * k, Consumed: 5 * k,
			TimedNanos: 50 * k, TimedPackets: 5 * k, Counters: []pipeline.Counter{{Name: "not ip", Consumed: true, Value: 5 * k}}}
		fill(&e)
		s.Elements = append(s.Elements, e)
	}
	s.Devices[0].Counters[0].Value += 15
	s.Totals.RX += 15
	s.Totals.Consumed = 15
	return s
}

// TestRenderGolden: the table's layout, with and without per-worker rows,
// and with the consumed column.
func TestRenderGolden(t *testing.T) {
	for _, c := range []struct {
		name string
		o    Options
		s    func() *pipeline.Snapshot
	}{
		{"totals", Options{}, tableSnapshot},
		{"per-worker", Options{PerWorker: true}, tableSnapshot},
		{"no-workers", Options{NoWorkers: true}, tableSnapshot},
		{"consumed", Options{}, consumedSnapshot},
		{"consumed-per-worker", Options{PerWorker: true}, consumedSnapshot},
	} {
		var buf bytes.Buffer
		if err := Render(&buf, c.s(), c.o); err != nil {
			t.Fatal(err)
		}
		path := filepath.Join("testdata", c.name+".golden")
		if *updateGolden {
			if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if buf.String() != string(want) {
			t.Errorf("%s:\n%s\nwant:\n%s", c.name, buf.String(), want)
		}
	}
}

// TestWorkerLineSleepFallback: a worker that could not park on the
// runtime's poller says so, with the reason, on its line.
func TestWorkerLineSleepFallback(t *testing.T) {
	s := tableSnapshot()
	ws := s.Workers[1]
	if line := workerLine(s, ws); strings.Contains(line, "ppoll") {
		t.Errorf("a worker that parks mentions ppoll: %s", line)
	}
	ws.SleepFallback = "runtime poller: watching descriptor 9: operation not permitted"
	if line := workerLine(s, ws); !strings.Contains(line, "; idle sleeps in ppoll (runtime poller: watching descriptor 9: operation not permitted)") {
		t.Errorf("the fallback is not on the worker's line: %s", line)
	}
}
