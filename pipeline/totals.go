package pipeline

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
			CPUNanos: sub(w.CPUNanos, p.CPUNanos), Rounds: sub(w.Rounds, p.Rounds), SleepFallback: w.SleepFallback}
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
