package main

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/junction-dataplane/junction/drivers"
	"github.com/junction-dataplane/junction/elements"
	"github.com/junction-dataplane/junction/elements/classifier"
	"github.com/junction-dataplane/junction/internal/control"
	"github.com/junction-dataplane/junction/pipeline"
)

// The server side of `show …`: the running forwarder answers from its
// router (results in show.go).

func (cs *ctlServer) show(ctx context.Context, args []string) (any, error) {
	if len(args) == 0 {
		return nil, control.Usagef("show: what? flows, nat, routes, neighbors, interfaces, runtime or errors")
	}
	what, rest := args[0], args[1:]
	switch what {
	case "flows", "conntrack", "connections":
		return cs.showFlows(rest)
	case "nat":
		return cs.showNAT(rest)
	case "routes", "route", "fib":
		return cs.showRoutes(rest)
	case "neighbors", "neighbours", "neigh", "arp":
		return cs.showNeighbors(rest)
	case "interfaces", "interface", "int":
		return cs.showInterfaces(rest)
	case "runtime":
		return cs.showRuntime(rest)
	case "errors":
		return cs.showErrors(rest)
	}
	msg := fmt.Sprintf("show %q: want flows, nat, routes, neighbors, interfaces, runtime or errors", what)
	if s := nearest(what, []string{"flows", "nat", "routes", "neighbors", "interfaces", "runtime", "errors"}); s != "" {
		msg += fmt.Sprintf(" (did you mean %q?)", s)
	}
	return nil, control.Usagef("%s", msg)
}

func (cs *ctlServer) showFlows(args []string) (any, error) {
	fs := argFlags("show flows")
	n := fs.Int("n", 100, "show at most this many flows (0: all)")
	count := fs.Bool("count", false, "only count the flows")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return nil, err
	}
	if *n < 0 {
		return nil, control.Usagef("show flows: -n %d: want ≥ 0", *n)
	}
	filter, err := classifier.ParseFilter(strings.Join(pos, " "))
	if err != nil {
		return nil, control.Usagef("show flows: %v", err)
	}
	idx := elementsOf[elements.FlowLister](cs.r, cs.graph())
	if len(idx) == 0 {
		return nil, control.Usagef("show flows: this graph has no Conntrack")
	}
	res := &flowsResult{Filter: filter.String(), Flows: []elements.Flow{}}
	for _, i := range idx {
		for _, inst := range cs.r.Instances(i) {
			inst.(elements.FlowLister).Flows(func(f elements.Flow) bool {
				res.Total++
				if !filter.MatchFlow(f) {
					return true
				}
				res.Matched++
				if *count {
					return true
				}
				if *n > 0 && len(res.Flows) >= *n {
					res.Limited = true
					return true
				}
				res.Flows = append(res.Flows, f)
				return true
			})
		}
	}
	if *count {
		res.Flows, res.Count = nil, true
	}
	return res, nil
}

func (cs *ctlServer) showRoutes(args []string) (any, error) {
	fs := argFlags("show routes")
	el := fs.String("element", "", "an IPLookup: the table it reads")
	tbl := fs.String("table", "", "the route table (default: the only one, the one of the address's family, or main)")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return nil, err
	}
	if len(pos) > 1 {
		return nil, control.Usagef("show routes: one address or prefix at a time, got %q", strings.Join(pos, " "))
	}
	t, err := cs.pickTable(*tbl, *el, routeAddr(pos))
	if err != nil {
		return nil, err
	}
	rt := t.rt
	res := &routesResult{Element: t.el, Source: rt.RouteSource(), Routes: []elements.LiveRoute{}, Unmirrored: rt.Unmirrored()}
	if t.shared {
		res.Table = t.name
	}
	if len(pos) == 0 {
		res.Routes = rt.RouteList()
		res.Found = len(res.Routes) > 0
		nameHops(cs.graph(), res.Element, res.Routes) // routedev.go
		return res, nil
	}
	res.Query = pos[0]
	a, p, err := parseAddrOrPrefix(pos[0])
	if err != nil {
		return nil, control.Usagef("show routes: %v", err)
	}
	var r elements.LiveRoute
	if a.IsValid() {
		r, res.Found = rt.RouteFor(a)
	} else {
		r, res.Found = rt.RouteExact(p)
	}
	if res.Found {
		res.Routes = append(res.Routes, r)
	}
	nameHops(cs.graph(), res.Element, res.Routes) // routedev.go
	return res, nil
}

func (cs *ctlServer) showNeighbors(args []string) (any, error) {
	fs := argFlags("show neighbors")
	el := fs.String("element", "", "only this ARPQuerier or NDPQuerier")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return nil, err
	}
	if len(pos) > 0 {
		return nil, control.Usagef("show neighbors: unexpected arguments %q", strings.Join(pos, " "))
	}
	idx := elementsOf[elements.NeighborLister](cs.r, cs.graph())
	if *el != "" {
		j, _, err := pickElement[elements.NeighborLister](cs, "neighbour table (ARPQuerier, NDPQuerier)", *el)
		if err != nil {
			return nil, err
		}
		idx = []int{j}
	}
	rows := []neighborRow{}
	for _, i := range idx {
		// The table is shared by the element's instances: one suffices.
		for _, n := range cs.r.Instances(i)[0].(elements.NeighborLister).Neighbors() {
			rows = append(rows, neighborRow{Element: cs.graph().Elements[i].Name, Neighbor: n})
		}
	}
	slices.SortFunc(rows, func(a, b neighborRow) int {
		if c := strings.Compare(a.Device, b.Device); c != 0 {
			return c
		}
		return a.Addr.Compare(b.Addr)
	})
	return rows, nil
}

// current returns the snapshot now, less the baseline of clear counters
// (its Uptime is then the time since the clear, so that busy and CPU
// shares are of that interval), and the router's uptime.
func (cs *ctlServer) current() (*pipeline.Snapshot, time.Duration) {
	s := cs.r.Snapshot()
	cs.baseMu.Lock()
	base := cs.baseline
	cs.baseMu.Unlock()
	if base == nil {
		return s, s.Uptime
	}
	return subSnapshot(s, base), s.Uptime
}

func (cs *ctlServer) clear(ctx context.Context, args []string) (any, error) {
	if len(args) != 1 || args[0] != "counters" {
		return nil, control.Usagef("clear: want \"clear counters\", got %q", strings.Join(args, " "))
	}
	s := cs.r.Snapshot()
	cs.baseMu.Lock()
	cs.baseline = s
	cs.baseMu.Unlock()
	return map[string]string{"cleared": "counters"}, nil
}

// gauge reports counters that are levels, not totals: clearing does not
// subtract them.
func gauge(name string) bool {
	return name == "entries" || strings.HasPrefix(name, "offloaded flows") || strings.HasSuffix(name, "flows")
}

// subSnapshot is s less base, counter by counter (matched by element,
// worker and name).
func subSnapshot(s, base *pipeline.Snapshot) *pipeline.Snapshot {
	out := *s
	out.Uptime = s.Uptime - base.Uptime
	type ek struct {
		el string
		w  int
	}
	be := map[ek]*pipeline.ElementStats{}
	for i := range base.Elements {
		e := &base.Elements[i]
		be[ek{e.Element, e.Worker}] = e
	}
	d := func(a, b uint64) uint64 {
		if a < b {
			return 0
		}
		return a - b
	}
	out.Elements = make([]pipeline.ElementStats, len(s.Elements))
	for i, e := range s.Elements {
		if b := be[ek{e.Element, e.Worker}]; b != nil {
			e.Batches, e.Packets, e.Drops, e.Consumed = d(e.Batches, b.Batches), d(e.Packets, b.Packets), d(e.Drops, b.Drops), d(e.Consumed, b.Consumed)
			e.TimedNanos, e.TimedPackets = d(e.TimedNanos, b.TimedNanos), d(e.TimedPackets, b.TimedPackets)
			cs := make([]pipeline.Counter, len(e.Counters))
			for j, c := range e.Counters {
				if !gauge(c.Name) {
					for _, bc := range b.Counters {
						if bc.Name == c.Name {
							c.Value = d(c.Value, bc.Value)
						}
					}
				}
				cs[j] = c
			}
			e.Counters = cs
			e.NsPerPacket, e.PacketsPerBatch, e.Nanos = 0, 0, 0
			if e.TimedPackets > 0 {
				e.NsPerPacket = float64(e.TimedNanos) / float64(e.TimedPackets)
				e.Nanos = uint64(e.NsPerPacket * float64(e.Packets))
			}
			if e.Batches > 0 {
				e.PacketsPerBatch = float64(e.Packets) / float64(e.Batches)
			}
		}
		out.Elements[i] = e
	}
	out.Workers = make([]pipeline.WorkerStats, len(s.Workers))
	for i, w := range s.Workers {
		if i < len(base.Workers) {
			b := base.Workers[i]
			w.BusyNanos, w.IdleNanos, w.CPUNanos = d(w.BusyNanos, b.BusyNanos), d(w.IdleNanos, b.IdleNanos), d(w.CPUNanos, b.CPUNanos)
			w.TimedBusyNanos, w.PreemptedNanos, w.Rounds = d(w.TimedBusyNanos, b.TimedBusyNanos), d(w.PreemptedNanos, b.PreemptedNanos), d(w.Rounds, b.Rounds)
			w.Busy = 0
			if w.BusyNanos+w.IdleNanos > 0 {
				w.Busy = float64(w.BusyNanos) / float64(w.BusyNanos+w.IdleNanos)
			}
		}
		out.Workers[i] = w
	}
	out.Devices = make([]pipeline.DeviceStats, len(s.Devices))
	for i, dv := range s.Devices {
		dv.Queues = subQueues(dv.Device, dv.Queues, base)
		cs := make([]pipeline.DeviceCounter, len(dv.Counters))
		for j, c := range dv.Counters {
			for _, bd := range base.Devices {
				if bd.Device != dv.Device {
					continue
				}
				for _, bc := range bd.Counters {
					if bc.Name == c.Name {
						c.Value = d(c.Value, bc.Value)
					}
				}
			}
			cs[j] = c
		}
		dv.Counters = cs
		out.Devices[i] = dv
	}
	t, bt := s.Totals, base.Totals
	out.Totals = pipeline.Totals{RX: d(t.RX, bt.RX), TX: d(t.TX, bt.TX), Drops: d(t.Drops, bt.Drops), Consumed: d(t.Consumed, bt.Consumed),
		InFlight: t.InFlight, FastPath: d(t.FastPath, bt.FastPath)}
	return &out
}

func (cs *ctlServer) showRuntime(args []string) (any, error) {
	fs := argFlags("show runtime")
	perWorker := fs.Bool("workers", false, "also one row per element and worker")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return nil, err
	}
	if len(pos) > 0 {
		return nil, control.Usagef("show runtime: unexpected arguments %q", strings.Join(pos, " "))
	}
	s, uptime := cs.current()
	res := &runtimeResult{Uptime: uptime, Since: s.Uptime, Graph: s.Graph, PerWorker: *perWorker, Workers: s.Workers,
		Totals: s.Totals, Elements: []runtimeRow{}, Snapshot: s}
	// The snapshot's rows are in graph order (pipeline.GraphOrder), worker
	// by worker; ElementTotals keeps that order.
	row := func(e pipeline.ElementStats) runtimeRow {
		return runtimeRow{Element: e.Element, Type: e.Type, Worker: e.Worker, Packets: e.Packets, Batches: e.Batches,
			Drops: e.Drops, Consumed: e.Consumed, NsPerPacket: e.NsPerPacket, PacketsPerBatch: e.PacketsPerBatch}
	}
	for _, tot := range s.ElementTotals() {
		res.Elements = append(res.Elements, row(tot))
		if !*perWorker {
			continue
		}
		for _, e := range s.Elements {
			if e.Element == tot.Element {
				res.Elements = append(res.Elements, row(e))
			}
		}
	}
	return res, nil
}

func (cs *ctlServer) showErrors(args []string) (any, error) {
	fs := argFlags("show errors")
	perWorker := fs.Bool("workers", false, "one row per worker too")
	all := fs.Bool("all", false, "also counters that are not drops")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return nil, err
	}
	if len(pos) > 0 {
		return nil, control.Usagef("show errors: unexpected arguments %q", strings.Join(pos, " "))
	}
	s, _ := cs.current()
	return errorsOf(s, *perWorker, *all), nil
}

// errorsOf is show errors' answer from s (the accounting since the last
// clear): the elements' drops by reason and the devices' loss counters
// (drivers.IsLoss), in graph order; with all, also what elements consumed
// by design and their other counters, marked as not drops. Only drops are
// summed as drops: elements' in Drops, devices' in DeviceDrops; what was
// consumed is summed apart (Consumed).
func errorsOf(s *pipeline.Snapshot, perWorker, all bool) *errorsResult {
	res := &errorsResult{Since: s.Uptime, Rows: []errorRow{}}
	for _, tot := range s.ElementTotals() { // graph order
		for _, c := range tot.Counters {
			if c.Consumed {
				res.Consumed += c.Value
			}
			if (!c.Drop && !all) || c.Value == 0 {
				continue
			}
			if c.Drop {
				res.Drops += c.Value
			}
			res.Rows = append(res.Rows, errorRow{Element: tot.Element, Type: tot.Type, Worker: -1, Counter: c.Name, Drop: c.Drop, Consumed: c.Consumed, Value: c.Value})
			if !perWorker {
				continue
			}
			for _, e := range s.Elements {
				if e.Element != tot.Element {
					continue
				}
				for _, wc := range e.Counters {
					if wc.Name == c.Name && wc.Value > 0 {
						res.Rows = append(res.Rows, errorRow{Element: e.Element, Type: e.Type, Worker: e.Worker, Counter: c.Name, Drop: c.Drop, Consumed: c.Consumed, Value: wc.Value})
					}
				}
			}
		}
	}
	for _, d := range s.Devices {
		for _, c := range d.Counters {
			if drivers.IsLoss(c.Name) && c.Value > 0 {
				res.DeviceDrops += c.Value
				res.Rows = append(res.Rows, errorRow{Element: "device " + d.Device, Type: d.Driver, Worker: -1, Counter: c.Name, Drop: true, Value: c.Value})
			}
		}
	}
	return res
}

func devCounter(d *pipeline.DeviceStats, names ...string) uint64 {
	if d == nil {
		return 0
	}
	for _, c := range d.Counters {
		for _, n := range names {
			if c.Name == n {
				return c.Value
			}
		}
	}
	return 0
}

func findDevice(s *pipeline.Snapshot, name string) *pipeline.DeviceStats {
	if s == nil {
		return nil
	}
	for i := range s.Devices {
		if s.Devices[i].Device == name {
			return &s.Devices[i]
		}
	}
	return nil
}

func elementPackets(s *pipeline.Snapshot, el string, w int) uint64 {
	if s == nil {
		return 0
	}
	for _, e := range s.Elements {
		if e.Element == el && e.Worker == w {
			return e.Packets
		}
	}
	return 0
}

func (cs *ctlServer) showInterfaces(args []string) (any, error) {
	fs := argFlags("show interfaces")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return nil, err
	}
	for _, p := range pos {
		if cs.graph().Device(p) == nil {
			var names []string
			for _, d := range cs.graph().Devices {
				names = append(names, d.Name)
			}
			return nil, control.Usagef("show interfaces: no device %q (this graph has: %s)", p, strings.Join(names, ", "))
		}
	}
	now := time.Now()
	raw := cs.r.Snapshot()
	s, _ := cs.current()
	p1, age1 := cs.rates.back(now, time.Second)
	p10, age10 := cs.rates.back(now, 10*time.Second)
	rate := func(cur, prev *pipeline.DeviceStats, age time.Duration) ifaceRate {
		r := ifaceRate{Seconds: age.Seconds()}
		if prev == nil || age <= 0 {
			return r
		}
		sec := age.Seconds()
		per := func(names ...string) float64 {
			a, b := devCounter(cur, names...), devCounter(prev, names...)
			if a < b {
				return 0
			}
			return float64(a-b) / sec
		}
		r.RxPPS, r.TxPPS = per("rx_packets", "rx"), per("tx_packets", "tx")
		r.RxBPS, r.TxBPS = 8*per("rx_bytes"), 8*per("tx_bytes")
		return r
	}
	out := []ifaceStat{}
	for di, gd := range cs.graph().Devices {
		if len(pos) > 0 && !slices.Contains(pos, gd.Name) {
			continue
		}
		d := findDevice(s, gd.Name)
		rd := findDevice(raw, gd.Name)
		is := ifaceStat{Device: gd.Name, Counters: []pipeline.DeviceCounter{}, Drops: []pipeline.DeviceCounter{}, Workers: []queueStat{}}
		if gd.Driver != nil {
			is.Driver = gd.Driver.Name
		}
		if d != nil {
			is.RxPackets, is.RxBytes = devCounter(d, "rx_packets", "rx"), devCounter(d, "rx_bytes")
			is.TxPackets, is.TxBytes = devCounter(d, "tx_packets", "tx"), devCounter(d, "tx_bytes")
			is.Counters = d.Counters
			is.Modes = d.Modes
			for _, c := range d.Counters {
				if drivers.IsLoss(c.Name) {
					is.Drops = append(is.Drops, c)
				}
			}
		}
		is.Rate1 = rate(rd, findDevice(p1, gd.Name), age1)
		is.Rate10 = rate(rd, findDevice(p10, gd.Name), age10)
		// Per queue: the FromDevice instances reading this device, one
		// per worker, with the queues each polls.
		queues := cs.r.WorkerQueues(di)
		is.Queues = perQueue(d, findDevice(raw, gd.Name), findDevice(p1, gd.Name), findDevice(p10, gd.Name), age1, age10, queues)
		for _, e := range cs.graph().Elements {
			if e.Type == nil || e.Type.Name != "FromDevice" || e.Device() != gd.Name {
				continue
			}
			for w := range queues {
				q := queueStat{Element: e.Name, Worker: w, Queues: queues[w]}
				if q.Queues == nil {
					q.Queues = []int{}
				}
				for _, es := range s.Elements {
					if es.Element == e.Name && es.Worker == w {
						q.Packets, q.Drops = es.Packets, es.Drops
					}
				}
				cur := elementPackets(raw, e.Name, w)
				if age1 > 0 {
					q.PPS1 = float64(cur-min(cur, elementPackets(p1, e.Name, w))) / age1.Seconds()
				}
				if age10 > 0 {
					q.PPS10 = float64(cur-min(cur, elementPackets(p10, e.Name, w))) / age10.Seconds()
				}
				is.Workers = append(is.Workers, q)
			}
		}
		out = append(out, is)
	}
	return out, nil
}
