package main

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/junction-dataplane/junction/drivers"
	"github.com/junction-dataplane/junction/pipeline/statstable"

	"github.com/junction-dataplane/junction/elements"
)

// The client side of `show …`: `forwarder show WHAT` asks the running
// forwarder and prints its answer (results in show.go).

// showCmd is `forwarder show WHAT [args]`.
func showCmd(args []string, stdout, stderr io.Writer) error {
	cl, rest, err := clientArgs("show", args, stderr)
	if err != nil {
		return err
	}
	if len(rest) == 0 {
		return cl.usage("what? flows, nat, routes, neighbors, interfaces, runtime or errors")
	}
	// A mistyped WHAT is wrong usage whether or not a forwarder runs:
	// refused here, before the socket is tried. (The server checks it,
	// and what follows it, again.)
	switch rest[0] {
	case "flows", "conntrack", "connections", "nat", "routes", "route", "fib", "neighbors", "neighbours", "neigh", "arp",
		"interfaces", "interface", "int", "runtime", "errors":
	default:
		msg := fmt.Sprintf("show %q: want flows, nat, routes, neighbors, interfaces, runtime or errors", rest[0])
		if s := nearest(rest[0], []string{"flows", "nat", "routes", "neighbors", "interfaces", "runtime", "errors"}); s != "" {
			msg += fmt.Sprintf(" (did you mean %q?)", s)
		}
		return cl.usage(msg)
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
	case "nat":
		var r natResult
		if err := json.Unmarshal(data, &r); err != nil {
			return err
		}
		return printNAT(stdout, &r)
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
	return printMatched(w, r.Matched, r.Total, len(r.Flows), r.Limited, "flows")
}

func routeLine(r elements.LiveRoute) string {
	var b strings.Builder
	b.WriteString(r.Prefix.String())
	if r.Type != "" {
		b.WriteString(" ")
		b.WriteString(r.Type) // blackhole, unreachable, prohibit: no hops
	}
	for i, h := range r.Hops {
		if len(r.Hops) > 1 {
			fmt.Fprintf(&b, "\n    nexthop")
		}
		if h.Via.IsValid() {
			fmt.Fprintf(&b, " via %v", h.Via)
		} else if i == 0 || len(r.Hops) > 1 {
			b.WriteString(" connected")
		}
		fmt.Fprintf(&b, " out %s", hopOut(h)) // the device's name where the port leads to one
	}
	if r.Source != "config" {
		fmt.Fprintf(&b, "  [%s]", r.Source)
	}
	return b.String()
}

func printRoutes(w io.Writer, r *routesResult) error {
	name := r.Element
	if r.Table != "" {
		name = "table " + r.Table
	}
	if r.Query != "" && !r.Found {
		_, err := fmt.Fprintf(w, "%s: no route to %s\n", name, r.Query)
		return err
	}
	for _, rt := range r.Routes {
		if _, err := fmt.Fprintln(w, routeLine(rt)); err != nil {
			return err
		}
	}
	if r.Query == "" {
		fmt.Fprintf(w, "%s: %d routes (source %s)\n", name, len(r.Routes), r.Source)
		if len(r.Unmirrored) > 0 {
			var parts []string
			for _, k := range slices.Sorted(maps.Keys(r.Unmirrored)) {
				parts = append(parts, fmt.Sprintf("%d %s", r.Unmirrored[k], k))
			}
			fmt.Fprintf(w, "%s: kernel routes not mirrored (their type): %s\n", name, strings.Join(parts, ", "))
		}
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
		printModes(w, is.Modes)
		fmt.Fprintf(w, "  rx %d packets %d bytes   tx %d packets %d bytes\n", is.RxPackets, is.RxBytes, is.TxPackets, is.TxBytes)
		for _, r := range []ifaceRate{is.Rate1, is.Rate10} {
			fmt.Fprintf(w, "  rate over %.0fs: rx %s %s  tx %s %s\n", r.Seconds, statstable.FormatRate(r.RxPPS), bits(r.RxBPS), statstable.FormatRate(r.TxPPS), bits(r.TxBPS))
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

// printModes prints what the driver settled on: "  xdp native, zero_copy
// no, fastpath xdp", and under it why a mode runs short of what the file
// asked.
func printModes(w io.Writer, ms []drivers.Mode) {
	if len(ms) == 0 {
		return
	}
	var parts, notes []string
	for _, m := range ms {
		parts = append(parts, m.Name+" "+m.Value)
		if m.Note != "" {
			notes = append(notes, m.Name+": "+m.Note)
		}
	}
	fmt.Fprintf(w, "  %s\n", strings.Join(parts, ", "))
	for _, n := range notes {
		fmt.Fprintf(w, "    %s\n", n)
	}
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
	return statstable.Render(w, r.Snapshot, statstable.Options{PerWorker: r.PerWorker})
}

func printErrors(w io.Writer, r *errorsResult) error {
	rows := [][]string{{"count", "element", "worker", "reason"}}
	for _, e := range r.Rows {
		reason := e.Counter
		switch {
		case e.Consumed:
			reason += " (consumed, not a drop)"
		case !e.Drop:
			reason += " (not a drop)"
		}
		rows = append(rows, []string{strconv.FormatUint(e.Value, 10), e.Element, workerCol(e.Worker), reason})
	}
	if err := statstable.Write(w, []bool{true, false, false, false}, rows); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "total drops %d (elements %d, devices %d), consumed %d (by design, not drops), counted over %s\n",
		r.Drops+r.DeviceDrops, r.Drops, r.DeviceDrops, r.Consumed, r.Since.Round(time.Millisecond))
	return err
}
