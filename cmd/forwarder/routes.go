package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"net/netip"
	"runtime"
	"strings"
	"time"

	"github.com/junction-dataplane/junction/elements/ip"
	"github.com/junction-dataplane/junction/elements/ip/route"
	"github.com/junction-dataplane/junction/elements/ip/tables"
)

// routesCmd: forwarder routes -config FILE [ADDR...] prints, for every
// IPLookup of the graph, the table's size and memory and the route each
// ADDR takes; forwarder routes -generate N writes a synthetic table.
func routesCmd(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("routes", stderr)
	config := fs.String("config", "", "graph file (default: the embedded default graph)")
	element := fs.String("element", "", "only this IPLookup element (default: all)")
	gen := fs.Int("generate", 0, "write a synthetic table of N IPv4 routes to stdout instead (routes_file syntax)")
	gen6 := fs.Int("generate6", 0, "with -generate: also N IPv6 routes")
	seed := fs.Uint64("seed", 1, "with -generate: the seed (the same seed gives the same table)")
	hops := fs.Int("nexthops", 300, "with -generate: distinct next hops")
	ports := fs.Int("ports", 2, "with -generate: output ports the next hops are spread over")
	ecmp := fs.Float64("ecmp", 0, "with -generate: share of routes (0..1) with 2-4 equal-cost paths")
	def := fs.Bool("default", false, "with -generate: add default routes")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: forwarder routes [-config FILE] [-element NAME] [ADDR...]\n"+
			"       forwarder routes -generate N [-generate6 M] [-seed S] [-nexthops K] [-ports P] [-ecmp F] [-default] > FILE")
		fs.PrintDefaults()
	}
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	genFlags := map[string]bool{"generate": true, "generate6": true, "seed": true, "nexthops": true, "ports": true, "ecmp": true, "default": true}
	generating, given := false, []string{}
	fs.Visit(func(f *flag.Flag) {
		generating = generating || f.Name == "generate" || f.Name == "generate6"
		if genFlags[f.Name] {
			given = append(given, "-"+f.Name)
		}
	})
	switch {
	case !generating && len(given) > 0:
		return usageErrorf("%s: only with -generate N", strings.Join(given, ", "))
	case !generating:
	case *gen < 0 || *gen6 < 0:
		return usageErrorf("-generate and -generate6 take a count of routes ≥ 0")
	case *gen == 0 && *gen6 == 0:
		return usageErrorf("-generate 0 -generate6 0: nothing to generate")
	case *hops < 1 || *ports < 1:
		return usageErrorf("-nexthops and -ports must be ≥ 1")
	case *ecmp < 0 || *ecmp > 1:
		return usageErrorf("-ecmp %v: want a share from 0 to 1", *ecmp)
	case *config != "" || *element != "" || fs.NArg() > 0:
		return usageErrorf("-generate writes a synthetic table: -config, -element and addresses do not apply")
	}
	if generating {
		rs := ip.GenerateRoutes(ip.GenOptions{Seed: *seed, Routes: *gen, Routes6: *gen6, NextHops: *hops,
			Ports: *ports, ECMP: *ecmp, Default: *def})
		return ip.WriteRoutes(stdout, rs)
	}
	var addrs []netip.Addr
	for _, a := range fs.Args() {
		x, err := netip.ParseAddr(a)
		if err != nil {
			return usageErrorf("%q is not an IPv4 or IPv6 address", a)
		}
		addrs = append(addrs, x)
	}
	runtime.GC()
	var m0 runtime.MemStats
	runtime.ReadMemStats(&m0)
	t0 := time.Now()
	defer withoutPlugins()()
	g, err := loadGraph(*config)
	if err != nil {
		return err
	}
	found := 0
	w := bufio.NewWriter(stdout)
	defer w.Flush()
	seen := map[*tables.Config]bool{} // a table several lookups read is built once
	for _, el := range g.Elements {
		c, ok := el.Config.(*ip.IPLookupConfig)
		if !ok || (*element != "" && el.Name != *element) || seen[c.Table()] {
			continue
		}
		seen[c.Table()] = true
		found++
		tb, stop, err := ip.BuildTable(c)
		if err != nil {
			return fmt.Errorf("%s: %v", el.Name, err)
		}
		load := time.Since(t0)
		runtime.GC()
		var m1 runtime.MemStats
		runtime.ReadMemStats(&m1)
		m := tb.Mem()
		if t := g.Table(c.Table().Name); t != nil {
			fmt.Fprintf(w, "table %s (read by %s; source %s)\n", t.Name, strings.Join(t.Users, ", "), c.Table().SourceName())
		} else {
			fmt.Fprintf(w, "%s (IPLookup, source %s)\n", el.Name, c.Table().SourceName())
		}
		fmt.Fprintf(w, "  routes:        %d IPv4, %d IPv6; %d next-hop sets; %d /24s with longer prefixes\n",
			m.Routes4, m.Routes6, m.NextHopSets, m.Groups)
		fmt.Fprintf(w, "  memory:        IPv4 %s, IPv6 %s (what lookups read); control %s; Go heap %s\n",
			mib(m.Bytes4), mib(m.Bytes6), mib(m.ControlBytes), mib(int(m1.HeapAlloc)-int(m0.HeapAlloc)))
		fmt.Fprintf(w, "  loaded in:     %v (parse, check and build)\n", load.Round(time.Millisecond))
		for _, a := range addrs {
			r, ok := tb.Route(a)
			if !ok {
				miss := "dropped (no route)"
				if c.Miss >= 0 {
					miss = fmt.Sprintf("out %d (miss)", c.Miss)
				}
				fmt.Fprintf(w, "  %-15s -> %s\n", a, miss)
				continue
			}
			if r.Type != route.Unicast {
				fmt.Fprintf(w, "  %-15s -> %s: %v (not forwarded)\n", a, r.Prefix, r.Type)
				continue
			}
			var paths []string
			for _, h := range r.Hops() {
				via := "connected"
				if h.Via.IsValid() {
					via = "via " + h.Via.String()
				}
				paths = append(paths, fmt.Sprintf("%s out %d", via, h.Out))
			}
			note := ""
			if len(paths) > 1 {
				note = " (ECMP: a flow takes one, by its flow hash)"
			}
			fmt.Fprintf(w, "  %-15s -> %s: %s%s\n", a, r.Prefix, strings.Join(paths, " | "), note)
		}
		if err := stop(); err != nil {
			return err
		}
		t0 = time.Now()
	}
	if found == 0 {
		if *element != "" {
			return fmt.Errorf("no IPLookup element named %q", *element)
		}
		return fmt.Errorf("the graph has no IPLookup element")
	}
	return nil
}

func mib(b int) string {
	if b < 1<<20 {
		return fmt.Sprintf("%.1f KiB", float64(b)/1024)
	}
	return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20))
}
