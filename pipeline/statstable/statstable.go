package statstable

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/junction-dataplane/junction/pipeline"
)

// Options choose what Render prints.
type Options struct {
	// PerWorker adds, under each element's row of totals across workers,
	// one row per worker (and per-worker counters).
	PerWorker bool
	// NoWorkers leaves out the workers' busy/CPU lines (forwarder bench
	// drives the worker's rounds itself: there is no worker loop to
	// account for).
	NoWorkers bool
}

// BusyLegend defines the workers' figures in one line.
const BusyLegend = "busy: share of the worker loop's wall time spent in rounds that moved packets (the rest: idle, polling empty or asleep); cpu: the thread's CPU time, of the wall time since start (below busy+idle when its CPU was shared)"

// Render prints the accounting as operators read it (VPP's `show
// runtime`): one row per element in graph order (sources first) with its
// totals across workers — packets, drops (losses), consumed (freed by
// design; the column is left out when nothing was), ns/packet (sampled
// self time), packets per batch, batches — optionally each worker's rows
// under it;
// then the counters by element, each worker's busy share and CPU time
// with their definition, the devices' counters, and the totals. run's exit
// table, forwarder stats and bench print it; it reads only s.
func Render(w io.Writer, s *pipeline.Snapshot, o Options) error {
	t := &textTable{right: []bool{false, false, false, true, true, true, true, true, true}}
	t.row("element", "type", "", "packets", "drops", "consumed", "ns/pkt", "pkts/batch", "batches")
	workers := map[int]bool{}
	consumed := false
	for _, e := range s.Elements {
		workers[e.Worker] = true
		consumed = consumed || e.Consumed > 0
	}
	for _, tot := range s.ElementTotals() {
		t.row(tot.Element, tot.Type, "", fmt.Sprint(tot.Packets), fmt.Sprint(tot.Drops), fmt.Sprint(tot.Consumed),
			fixed(tot.NsPerPacket, 1), fixed(tot.PacketsPerBatch, 1), fmt.Sprint(tot.Batches))
		if !o.PerWorker || len(workers) < 2 {
			continue
		}
		for _, e := range s.Elements {
			if e.Element == tot.Element {
				t.row("", "", fmt.Sprintf("w%d", e.Worker), fmt.Sprint(e.Packets), fmt.Sprint(e.Drops), fmt.Sprint(e.Consumed),
					fixed(e.NsPerPacket, 1), fixed(e.PacketsPerBatch, 1), fmt.Sprint(e.Batches))
			}
		}
	}
	if !consumed {
		t.dropColumn(5)
	}
	if !o.PerWorker || len(workers) < 2 {
		t.dropColumn(2)
	}
	if err := t.write(w); err != nil {
		return err
	}

	var lines []string
	counters := s.Elements
	if !o.PerWorker {
		counters = s.ElementTotals()
	}
	for _, e := range counters {
		for _, c := range e.Counters {
			if c.Value == 0 {
				continue
			}
			kind := "count"
			switch {
			case c.Drop:
				kind = "drop"
			case c.Consumed:
				kind = "consumed"
			}
			who := e.Element
			if o.PerWorker && len(workers) > 1 {
				who = fmt.Sprintf("%s w%d", e.Element, e.Worker)
			}
			lines = append(lines, fmt.Sprintf("  %s %s %q: %d", who, kind, c.Name, c.Value))
		}
	}
	if len(lines) > 0 {
		fmt.Fprintln(w, "counters:")
		for _, l := range lines {
			fmt.Fprintln(w, l)
		}
	}
	if !o.NoWorkers && len(s.Workers) > 0 {
		fmt.Fprintln(w, BusyLegend)
		for _, ws := range s.Workers {
			fmt.Fprintln(w, workerLine(s, ws))
		}
	}
	for _, d := range s.Devices {
		var parts []string
		for _, c := range d.Counters {
			parts = append(parts, fmt.Sprintf("%s %d", c.Name, c.Value))
		}
		fmt.Fprintf(w, "device %s (%s): %s\n", d.Device, d.Driver, strings.Join(parts, ", "))
	}
	if s.Totals.FastPath > 0 {
		fmt.Fprintf(w, "fast path: %d packets forwarded by the devices in the kernel, never in the graph (not in the total below)\n", s.Totals.FastPath)
	}
	var more string
	if s.Totals.Consumed > 0 {
		more = fmt.Sprintf("  consumed %d", s.Totals.Consumed)
	}
	if s.Totals.InFlight > 0 {
		more += fmt.Sprintf("  in flight %d", s.Totals.InFlight)
	}
	_, err := fmt.Fprintf(w, "total: rx %d  tx %d  drops %d%s\n", s.Totals.RX, s.Totals.TX, s.Totals.Drops, more)
	return err
}

// workerLine is one worker's line: "worker 1 (cpu 1): busy 97.1% (busy
// 4.37s, idle 130ms); cpu 1.54s, 34% of 4.50s: the CPU was shared".
func workerLine(s *pipeline.Snapshot, ws pipeline.WorkerStats) string {
	cpu := "unpinned"
	if ws.CPU >= 0 {
		cpu = fmt.Sprintf("cpu %d", ws.CPU)
	}
	d := func(n uint64) string { return roundDur(time.Duration(n)).String() }
	var b strings.Builder
	fmt.Fprintf(&b, "worker %d (%s): busy %.1f%% (busy %s, idle %s)", ws.Worker, cpu, 100*ws.Busy, d(ws.BusyNanos), d(ws.IdleNanos))
	if ws.CPUNanos > 0 && s.Uptime > 0 {
		frac := float64(ws.CPUNanos) / float64(s.Uptime)
		fmt.Fprintf(&b, "; cpu %s, %.0f%% of %s", d(ws.CPUNanos), 100*frac, roundDur(s.Uptime))
		if loop := float64(ws.BusyNanos + ws.IdleNanos); loop > 0 && float64(ws.CPUNanos) < 0.8*loop && ws.Busy > 0.5 {
			b.WriteString(": its CPU was shared")
		}
	}
	if ws.TimedBusyNanos > 0 {
		fmt.Fprintf(&b, "; timed rounds: elements %.1f%% of busy", 100*float64(s.WorkerTimedNanos(ws.Worker))/float64(ws.TimedBusyNanos))
	}
	if ws.PreemptedNanos > 0 {
		fmt.Fprintf(&b, "; preempted %s", d(ws.PreemptedNanos))
	}
	if ws.SleepFallback != "" {
		fmt.Fprintf(&b, "; idle sleeps in ppoll (%s)", ws.SleepFallback)
	}
	return b.String()
}

// roundDur rounds a duration for reading: 3 significant digits.
func roundDur(d time.Duration) time.Duration {
	switch {
	case d >= 100*time.Second:
		return d.Round(time.Second)
	case d >= 10*time.Second:
		return d.Round(100 * time.Millisecond)
	case d >= time.Second:
		return d.Round(10 * time.Millisecond)
	case d >= 100*time.Millisecond:
		return d.Round(time.Millisecond)
	case d >= 10*time.Millisecond:
		return d.Round(100 * time.Microsecond)
	case d >= time.Millisecond:
		return d.Round(10 * time.Microsecond)
	}
	return d.Round(time.Microsecond)
}

// textTable lays out rows in columns: text left-aligned, numbers right.
type textTable struct {
	rows  [][]string
	right []bool
}

func (t *textTable) row(cells ...string) { t.rows = append(t.rows, cells) }

func (t *textTable) dropColumn(c int) {
	for i, r := range t.rows {
		t.rows[i] = append(r[:c:c], r[c+1:]...)
	}
	t.right = append(t.right[:c:c], t.right[c+1:]...)
}

func (t *textTable) write(w io.Writer) error {
	width := make([]int, len(t.right))
	for _, r := range t.rows {
		for i, c := range r {
			width[i] = max(width[i], len(c))
		}
	}
	var b strings.Builder
	for _, r := range t.rows {
		line := ""
		for i, c := range r {
			if i > 0 {
				line += "  "
			}
			pad := strings.Repeat(" ", width[i]-len(c))
			if t.right[i] {
				line += pad + c
			} else {
				line += c + pad
			}
		}
		b.WriteString(strings.TrimRight(line, " "))
		b.WriteByte('\n')
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// fixed prints v with prec decimals, "-" for nothing measured.
func fixed(v float64, prec int) string {
	if v == 0 {
		return "-"
	}
	return fmt.Sprintf("%.*f", prec, v)
}
