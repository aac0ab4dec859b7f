package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/junction-dataplane/junction/elements"
	"github.com/junction-dataplane/junction/elements/classifier"
	"github.com/junction-dataplane/junction/internal/control"
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
	Element string               `json:"element"`
	Source  string               `json:"source"`
	Query   string               `json:"query,omitempty"`
	Found   bool                 `json:"found"`
	Routes  []elements.LiveRoute `json:"routes"`
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
	Drops     []pipeline.DeviceCounter `json:"drops"` // drop and error counters by reason, the kernel's included (link_*)
	Counters  []pipeline.DeviceCounter `json:"counters"`
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
	// table format renders it with pipeline's Snapshot.Render.
	Snapshot *pipeline.Snapshot `json:"snapshot"`
}

type errorRow struct {
	Element string `json:"element"`
	Type    string `json:"type"`
	Worker  int    `json:"worker"` // -1: all workers
	Counter string `json:"counter"`
	Drop    bool   `json:"drop"`
	Value   uint64 `json:"value"`
}

type errorsResult struct {
	Since time.Duration `json:"since_clear_ns"`
	Rows  []errorRow    `json:"errors"`
	Drops uint64        `json:"total_drops"`
}

// --- server ---

func (cs *ctlServer) show(ctx context.Context, args []string) (any, error) {
	if len(args) == 0 {
		return nil, control.Usagef("show: what? flows, routes, neighbors, interfaces, runtime or errors")
	}
	what, rest := args[0], args[1:]
	switch what {
	case "flows", "conntrack", "connections":
		return cs.showFlows(rest)
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
	msg := fmt.Sprintf("show %q: want flows, routes, neighbors, interfaces, runtime or errors", what)
	if s := nearest(what, []string{"flows", "routes", "neighbors", "interfaces", "runtime", "errors"}); s != "" {
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
	el := fs.String("element", "", "the IPLookup (when the graph has several)")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return nil, err
	}
	if len(pos) > 1 {
		return nil, control.Usagef("show routes: one address or prefix at a time, got %q", strings.Join(pos, " "))
	}
	i, rt, err := pickElement[elements.RouteTable](cs, "IPLookup", *el)
	if err != nil {
		return nil, err
	}
	res := &routesResult{Element: cs.graph().Elements[i].Name, Source: rt.RouteSource(), Routes: []elements.LiveRoute{}}
	if len(pos) == 0 {
		res.Routes = rt.RouteList()
		res.Found = len(res.Routes) > 0
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
			e.Batches, e.Packets, e.Drops = d(e.Batches, b.Batches), d(e.Packets, b.Packets), d(e.Drops, b.Drops)
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
	out.Totals = pipeline.Totals{RX: d(t.RX, bt.RX), TX: d(t.TX, bt.TX), Drops: d(t.Drops, bt.Drops), InFlight: t.InFlight, FastPath: d(t.FastPath, bt.FastPath)}
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
			Drops: e.Drops, NsPerPacket: e.NsPerPacket, PacketsPerBatch: e.PacketsPerBatch}
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
	res := &errorsResult{Since: s.Uptime, Rows: []errorRow{}}
	for _, tot := range s.ElementTotals() { // graph order
		for _, c := range tot.Counters {
			if (!c.Drop && !*all) || c.Value == 0 {
				continue
			}
			if c.Drop {
				res.Drops += c.Value
			}
			res.Rows = append(res.Rows, errorRow{Element: tot.Element, Type: tot.Type, Worker: -1, Counter: c.Name, Drop: c.Drop, Value: c.Value})
			if !*perWorker {
				continue
			}
			for _, e := range s.Elements {
				if e.Element != tot.Element {
					continue
				}
				for _, wc := range e.Counters {
					if wc.Name == c.Name && wc.Value > 0 {
						res.Rows = append(res.Rows, errorRow{Element: e.Element, Type: e.Type, Worker: e.Worker, Counter: c.Name, Drop: c.Drop, Value: wc.Value})
					}
				}
			}
		}
	}
	for _, d := range s.Devices {
		for _, c := range d.Counters {
			if isDropCounter(c.Name) && c.Value > 0 {
				res.Rows = append(res.Rows, errorRow{Element: "device " + d.Device, Type: d.Driver, Worker: -1, Counter: c.Name, Drop: true, Value: c.Value})
			}
		}
	}
	return res, nil
}

// isDropCounter reports whether a driver counter counts packets lost or
// refused (the kernel's link_rx_dropped, a full ring, an empty pool...).
func isDropCounter(name string) bool {
	for _, w := range []string{"drop", "error", "missed", "full", "empty", "invalid", "truncated"} {
		if strings.Contains(name, w) {
			return true
		}
	}
	return false
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
			for _, c := range d.Counters {
				if isDropCounter(c.Name) {
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

// --- client ---

// showCmd is `forwarder show WHAT [args]`.
func showCmd(args []string, stdout, stderr io.Writer) error {
	cl, rest, err := clientArgs("show", args, stderr)
	if err != nil {
		return err
	}
	if len(rest) == 0 {
		return cl.usage("what? flows, routes, neighbors, interfaces, runtime or errors")
	}
	data, err := cl.call("show", rest)
	if err != nil {
		return err
	}
	if cl.format == "json" {
		return writeJSON(stdout, data)
	}
	what := rest[0]
	switch what {
	case "flows", "conntrack", "connections":
		var r flowsResult
		if err := json.Unmarshal(data, &r); err != nil {
			return err
		}
		return printFlows(stdout, &r, r.Count)
	case "routes", "route", "fib":
		var r routesResult
		if err := json.Unmarshal(data, &r); err != nil {
			return err
		}
		return printRoutes(stdout, &r)
	case "neighbors", "neighbours", "neigh", "arp":
		var r []neighborRow
		if err := json.Unmarshal(data, &r); err != nil {
			return err
		}
		return printNeighbors(stdout, r)
	case "interfaces", "interface", "int":
		var r []ifaceStat
		if err := json.Unmarshal(data, &r); err != nil {
			return err
		}
		return printInterfaces(stdout, r)
	case "runtime":
		var r runtimeResult
		if err := json.Unmarshal(data, &r); err != nil {
			return err
		}
		return printRuntime(stdout, &r)
	case "errors":
		var r errorsResult
		if err := json.Unmarshal(data, &r); err != nil {
			return err
		}
		return printErrors(stdout, &r)
	}
	return writeJSON(stdout, data)
}

// clearCmd is `forwarder clear counters`.
func clearCmd(args []string, stdout, stderr io.Writer) error {
	cl, rest, err := clientArgs("clear", args, stderr)
	if err != nil {
		return err
	}
	if len(rest) != 1 || rest[0] != "counters" {
		return cl.usage(fmt.Sprintf("want \"clear counters\", got %q", strings.Join(rest, " ")))
	}
	data, err := cl.call("clear", rest)
	if err != nil {
		return err
	}
	if cl.format == "json" {
		return writeJSON(stdout, data)
	}
	fmt.Fprintln(stdout, "counters cleared")
	return nil
}

func writeJSON(w io.Writer, data json.RawMessage) error {
	_, err := fmt.Fprintf(w, "%s\n", data)
	return err
}

func tuple(t elements.FlowTuple, proto string) string {
	if proto == "tcp" || proto == "udp" {
		return netip.AddrPortFrom(t.Src, t.Sport).String() + " > " + netip.AddrPortFrom(t.Dst, t.Dport).String()
	}
	if proto == "icmp" || proto == "icmp6" {
		return fmt.Sprintf("%v > %v id %d", t.Src, t.Dst, t.Sport)
	}
	return fmt.Sprintf("%v > %v", t.Src, t.Dst)
}

func printFlows(w io.Writer, r *flowsResult, countOnly bool) error {
	if countOnly {
		_, err := fmt.Fprintf(w, "%d flows match %q (of %d)\n", r.Matched, r.Filter, r.Total)
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "PROTO\tORIGINAL\tREPLY\tSTATE\tNAT\tTIMEOUT\tPACKETS\tBYTES\tFAST\tWORKER")
	for _, f := range r.Flows {
		nat, fast := f.NAT, ""
		if nat == "" {
			nat = "-"
		}
		if f.FastTracked {
			fast = "yes"
		}
		state := f.State
		if f.Assured {
			state += " [ASSURED]"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%d/%d\t%d/%d\t%s\t%d\n", f.Proto, tuple(f.Orig, f.Proto), tuple(f.Reply, f.Proto),
			state, nat, f.Timeout.Round(time.Second), f.Packets[0], f.Packets[1], f.Bytes[0], f.Bytes[1], fast, f.Worker)
	}
	tw.Flush()
	more := ""
	if r.Limited {
		more = fmt.Sprintf(" (first %d shown: -n 0 shows all)", len(r.Flows))
	}
	_, err := fmt.Fprintf(w, "%d of %d flows match%s\n", r.Matched, r.Total, more)
	return err
}

func routeLine(r elements.LiveRoute) string {
	var b strings.Builder
	b.WriteString(r.Prefix.String())
	for i, h := range r.Hops {
		if len(r.Hops) > 1 {
			fmt.Fprintf(&b, "\n    nexthop")
		}
		if h.Via.IsValid() {
			fmt.Fprintf(&b, " via %v", h.Via)
		} else if i == 0 || len(r.Hops) > 1 {
			b.WriteString(" connected")
		}
		fmt.Fprintf(&b, " out %d", h.Out)
	}
	if r.Source != "config" {
		fmt.Fprintf(&b, "  [%s]", r.Source)
	}
	return b.String()
}

func printRoutes(w io.Writer, r *routesResult) error {
	if r.Query != "" && !r.Found {
		_, err := fmt.Fprintf(w, "%s: no route to %s\n", r.Element, r.Query)
		return err
	}
	for _, rt := range r.Routes {
		if _, err := fmt.Fprintln(w, routeLine(rt)); err != nil {
			return err
		}
	}
	if r.Query == "" {
		fmt.Fprintf(w, "%s: %d routes (source %s)\n", r.Element, len(r.Routes), r.Source)
	}
	return nil
}

func printNeighbors(w io.Writer, rows []neighborRow) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ADDRESS\tMAC\tSTATE\tAGE\tDEVICE\tELEMENT")
	for _, n := range rows {
		mac, age := n.MAC, "-"
		if mac == "" {
			mac = "-"
		}
		if n.Age > 0 {
			age = n.Age.Round(100 * time.Millisecond).String()
		}
		fmt.Fprintf(tw, "%v\t%s\t%s\t%s\t%s\t%s\n", n.Addr, mac, n.State, age, n.Device, n.Element)
	}
	return tw.Flush()
}

func printInterfaces(w io.Writer, rs []ifaceStat) error {
	for _, is := range rs {
		fmt.Fprintf(w, "%s (%s)\n", is.Device, is.Driver)
		fmt.Fprintf(w, "  rx %d packets %d bytes   tx %d packets %d bytes\n", is.RxPackets, is.RxBytes, is.TxPackets, is.TxBytes)
		for _, r := range []ifaceRate{is.Rate1, is.Rate10} {
			fmt.Fprintf(w, "  rate over %.0fs: rx %s %s  tx %s %s\n", r.Seconds, pipeline.FormatRate(r.RxPPS), bits(r.RxBPS), pipeline.FormatRate(r.TxPPS), bits(r.TxBPS))
		}
		var drops []string
		for _, c := range is.Drops {
			drops = append(drops, fmt.Sprintf("%s %d", c.Name, c.Value))
		}
		if len(drops) > 0 {
			fmt.Fprintf(w, "  drops: %s\n", strings.Join(drops, ", "))
		}
		printQueues(w, &is)
	}
	return nil
}

func bits(bps float64) string {
	switch {
	case bps >= 1e9:
		return fmt.Sprintf("%.2f Gbit/s", bps/1e9)
	case bps >= 1e6:
		return fmt.Sprintf("%.2f Mbit/s", bps/1e6)
	case bps >= 1e3:
		return fmt.Sprintf("%.2f kbit/s", bps/1e3)
	}
	return fmt.Sprintf("%.0f bit/s", bps)
}

func workerCol(w int) string {
	if w < 0 {
		return "all"
	}
	return strconv.Itoa(w)
}

func printRuntime(w io.Writer, r *runtimeResult) error {
	fmt.Fprintf(w, "uptime %s, counted over %s\n", r.Uptime.Round(time.Millisecond), r.Since.Round(time.Millisecond))
	if g := r.Graph; g.Generation > 0 {
		fmt.Fprintf(w, "graph %s, generation %d, loaded %s (%d reloads since start)\n", g.File, g.Generation, g.LoadedAt.Format(time.RFC3339), g.Generation-1)
	}
	if r.Snapshot == nil {
		return fmt.Errorf("show runtime: the forwarder sent no snapshot (an older forwarder? use -format json)")
	}
	// The same table as run's exit table and forwarder stats.
	return r.Snapshot.Render(w, pipeline.TableOptions{PerWorker: r.PerWorker})
}

func printErrors(w io.Writer, r *errorsResult) error {
	rows := [][]string{{"count", "element", "worker", "reason"}}
	for _, e := range r.Rows {
		reason := e.Counter
		if !e.Drop {
			reason += " (not a drop)"
		}
		rows = append(rows, []string{strconv.FormatUint(e.Value, 10), e.Element, workerCol(e.Worker), reason})
	}
	if err := pipeline.WriteTable(w, []bool{true, false, false, false}, rows); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "total element drops %d, counted over %s\n", r.Drops, r.Since.Round(time.Millisecond))
	return err
}
