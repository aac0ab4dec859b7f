package pipeline

import (
	"fmt"
	"io"
	"strings"
	"time"
)

// TableOptions choose what Snapshot.Render prints.
type TableOptions struct {
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
func (s *Snapshot) Render(w io.Writer, o TableOptions) error {
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
			fmt.Fprintln(w, s.workerLine(ws))
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
func (s *Snapshot) workerLine(ws WorkerStats) string {
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

// ElementTotals sums each element's rows across workers, in the order of
// s.Elements (graph order for a router's snapshot): counters by name,
// ns/packet weighted by the timed packets. Worker is -1.
func (s *Snapshot) ElementTotals() []ElementStats {
	var out []ElementStats
	at := map[string]int{}
	for _, e := range s.Elements {
		i, ok := at[e.Element]
		if !ok {
			i = len(out)
			at[e.Element] = i
			out = append(out, ElementStats{Element: e.Element, Type: e.Type, Worker: -1})
		}
		t := &out[i]
		t.Batches += e.Batches
		t.Packets += e.Packets
		t.Drops += e.Drops
		t.Consumed += e.Consumed
		t.TimedNanos += e.TimedNanos
		t.TimedPackets += e.TimedPackets
		for _, c := range e.Counters {
			found := false
			for k := range t.Counters {
				if t.Counters[k].Name == c.Name {
					t.Counters[k].Value += c.Value
					found = true
					break
				}
			}
			if !found {
				t.Counters = append(t.Counters, c)
			}
		}
	}
	for i := range out {
		out[i].fill()
	}
	return out
}

// Since returns the accounting of the interval from prev to s (two
// snapshots of one router): every counter's difference, the uptime
// between them. InFlight is s's.
func (s *Snapshot) Since(prev *Snapshot) *Snapshot {
	sub := func(a, b uint64) uint64 {
		if a < b {
			return 0
		}
		return a - b
	}
	d := &Snapshot{Uptime: s.Uptime - prev.Uptime}
	type ek struct {
		name   string
		worker int
	}
	pe := map[ek]ElementStats{}
	for _, e := range prev.Elements {
		pe[ek{e.Element, e.Worker}] = e
	}
	for _, e := range s.Elements {
		p := pe[ek{e.Element, e.Worker}]
		n := ElementStats{Element: e.Element, Type: e.Type, Worker: e.Worker,
			Batches: sub(e.Batches, p.Batches), Packets: sub(e.Packets, p.Packets), Drops: sub(e.Drops, p.Drops),
			Consumed:   sub(e.Consumed, p.Consumed),
			TimedNanos: sub(e.TimedNanos, p.TimedNanos), TimedPackets: sub(e.TimedPackets, p.TimedPackets)}
		for _, c := range e.Counters {
			v := c.Value
			for _, pc := range p.Counters {
				if pc.Name == c.Name {
					v = sub(v, pc.Value)
				}
			}
			n.Counters = append(n.Counters, Counter{Name: c.Name, Drop: c.Drop, Consumed: c.Consumed, Value: v})
		}
		n.fill()
		d.Elements = append(d.Elements, n)
	}
	pw := map[int]WorkerStats{}
	for _, w := range prev.Workers {
		pw[w.Worker] = w
	}
	for _, w := range s.Workers {
		p := pw[w.Worker]
		n := WorkerStats{Worker: w.Worker, CPU: w.CPU, Running: w.Running,
			BusyNanos: sub(w.BusyNanos, p.BusyNanos), IdleNanos: sub(w.IdleNanos, p.IdleNanos),
			TimedBusyNanos: sub(w.TimedBusyNanos, p.TimedBusyNanos), PreemptedNanos: sub(w.PreemptedNanos, p.PreemptedNanos),
			CPUNanos: sub(w.CPUNanos, p.CPUNanos), Rounds: sub(w.Rounds, p.Rounds)}
		n.Busy = share(n.BusyNanos, n.IdleNanos)
		d.Workers = append(d.Workers, n)
	}
	pd := map[string]DeviceStats{}
	for _, x := range prev.Devices {
		pd[x.Device] = x
	}
	for _, x := range s.Devices {
		p := pd[x.Device]
		n := DeviceStats{Device: x.Device, Driver: x.Driver}
		for _, c := range x.Counters {
			v := c.Value
			for _, pc := range p.Counters {
				if pc.Name == c.Name {
					v = sub(v, pc.Value)
				}
			}
			n.Counters = append(n.Counters, DeviceCounter{c.Name, v})
		}
		d.Devices = append(d.Devices, n)
	}
	d.Totals = Totals{RX: sub(s.Totals.RX, prev.Totals.RX), TX: sub(s.Totals.TX, prev.Totals.TX),
		Drops: sub(s.Totals.Drops, prev.Totals.Drops), Consumed: sub(s.Totals.Consumed, prev.Totals.Consumed), FastPath: sub(s.Totals.FastPath, prev.Totals.FastPath),
		InFlight: s.Totals.InFlight}
	return d
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
