package livedot

import (
	"fmt"
	"math"
	"reflect"
	"sort"
	"strings"
	"time"

	"github.com/junction-dataplane/junction/conf"
	"github.com/junction-dataplane/junction/pipeline"
	"github.com/junction-dataplane/junction/pipeline/graphfile"
)

// dotQuote quotes a DOT identifier or label as the graph file's DOT does.
func dotQuote(s string) string { return graphfile.DOTQuote(s) }

// Stats are the counters drawn on a graph by DOT: two
// snapshots of the running graph (Before may be nil: then the rates are
// averages since start).
type Stats struct {
	Before, After *pipeline.Snapshot
	// Source names where the counters came from, for the caption.
	Source string
}

// DOT renders graph g for reading: top to bottom, devices
// named on their FromDevice/ToDevice boxes, Classifier outputs labelled
// with their rule text, port labels only where an element has several
// ports, sources on the first rank and transmitters on the last. With
// st, every element shows its packets per second, its sampled self time
// per packet (also its fill colour, light below 8 ns, red from 256 ns)
// and its drops by reason (red: losses) and what it consumed by design
// (Discard's reason), and every link's pen width grows with its
// packets per second. Links carry no counters of their own: a link's
// rate is derived from its elements' (what its destination received,
// less what arrived on the destination's other links; or what its source
// pushed, less its other links), and is shown as unknown when neither
// settles it.
func DOT(g *graphfile.Graph, st *Stats) string {
	var b strings.Builder
	name := g.File
	if name == "" {
		name = "graph"
	}
	fmt.Fprintf(&b, "digraph %s {\n", dotQuote(name))
	b.WriteString("\trankdir=TB;\n\tnodesep=0.15;\n\tranksep=0.3;\n\tsize=\"7.5,10\";\n")
	b.WriteString("\tnode [shape=box, style=\"rounded,filled\", fillcolor=white, fontname=\"Helvetica\", fontsize=10, margin=\"0.08,0.03\", height=0.3];\n")
	b.WriteString("\tedge [fontname=\"Helvetica\", fontsize=8, arrowsize=0.6];\n")
	var live *liveFigures
	if st != nil && st.After != nil {
		live = newLiveFigures(g, st)
		fmt.Fprintf(&b, "\tlabel=%s;\n\tlabelloc=t;\n\tfontname=\"Helvetica\";\n\tfontsize=10;\n", dotQuote(live.caption()))
	}
	var sources, sinks []string
	nodes := make(map[*graphfile.Element]string, len(g.Elements))
	for _, e := range g.Elements {
		label := elementLabel(e)
		attrs := ""
		if live != nil {
			f := live.elems[e.Name]
			label += "\n" + rate(f.pps)
			if f.ns > 0 {
				label += fmt.Sprintf(", %.3g ns/pkt", f.ns)
			}
			for _, d := range f.dropLines() {
				label += "\n" + d
			}
			for _, d := range f.consumedLines() {
				label += "\n" + d
			}
			attrs = fmt.Sprintf(", fillcolor=%s", dotQuote(nsColour(f.ns)))
			if len(f.dropLines()) > 0 {
				attrs += ", color=\"#b00000\""
			}
		}
		nodes[e] = fmt.Sprintf("%s [label=%s%s];", dotQuote(e.Name), dotQuote(label), attrs)
		switch {
		case e.Instance != "":
			// Ranks would pull it out of its compound's cluster.
		case e.Type != nil && e.Type.Source:
			sources = append(sources, dotQuote(e.Name))
		case e.Out == 0 && len(graphfile.DeviceNames(e)) > 0:
			sinks = append(sinks, dotQuote(e.Name))
		}
	}
	g.DOTNodes(&b, func(e *graphfile.Element) string { return nodes[e] })
	if len(sources) > 0 {
		fmt.Fprintf(&b, "\t{ rank=source; %s; }\n", strings.Join(sources, "; "))
	}
	if len(sinks) > 0 {
		fmt.Fprintf(&b, "\t{ rank=sink; %s; }\n", strings.Join(sinks, "; "))
	}
	for i, lk := range g.Links {
		var attrs []string
		if l := portLabel(g, lk); l != "" {
			attrs = append(attrs, "taillabel="+dotQuote(l))
		}
		if to := g.Element(lk.To); to != nil && to.In > 1 && lk.ToPort > 0 {
			attrs = append(attrs, "headlabel="+dotQuote(fmt.Sprintf("[%d]", lk.ToPort)))
		}
		if live != nil {
			pps, ok := live.links[i], live.known[i]
			switch {
			case !ok:
				attrs = append(attrs, "style=dashed", "label=\"?\"")
			case pps > 0:
				attrs = append(attrs, fmt.Sprintf("penwidth=%.2f", live.pen(pps)), "label="+dotQuote(rate(pps)))
			default:
				attrs = append(attrs, "color=\"#a0a0a0\"")
			}
		}
		fmt.Fprintf(&b, "\t%s -> %s", dotQuote(lk.From), dotQuote(lk.To))
		if len(attrs) > 0 {
			fmt.Fprintf(&b, " [%s]", strings.Join(attrs, ", "))
		}
		b.WriteString(";\n")
	}
	b.WriteString("}\n")
	return b.String()
}

// elementLabel is "name: Type(devices)" ("Type(devices)" when anonymous).
func elementLabel(e *graphfile.Element) string {
	if e.Type == nil {
		return e.Name
	}
	label := e.Type.Name
	devs := graphfile.DeviceNames(e)
	if len(devs) > 0 && len(devs) <= 2 {
		label += "(" + strings.Join(devs, ", ") + ")"
	}
	if !e.Anonymous {
		label = e.LocalName() + ": " + label
	}
	return label
}

// portLabel names an output port when its element has several: a
// Classifier's rule text, else "[N]".
func portLabel(g *graphfile.Graph, lk graphfile.Link) string {
	from := g.Element(lk.From)
	if from == nil || from.Out <= 1 {
		return ""
	}
	// Only where the element's packets part ways: a port alone on its
	// element (CheckIPHeader's good output, its bad one unconnected)
	// needs no label.
	ports := map[int]bool{}
	for _, l := range g.Links {
		if l.From == lk.From {
			ports[l.FromPort] = true
		}
	}
	if len(ports) <= 1 {
		return ""
	}
	if from.Type != nil && from.Type.Name == "Classifier" {
		if rules := configRules(from); lk.FromPort < len(rules) {
			r := rules[lk.FromPort]
			if len([]rune(r)) > 32 {
				r = string([]rune(r)[:31]) + "…"
			}
			return r
		}
	}
	return fmt.Sprintf("[%d]", lk.FromPort)
}

// configRules is the element config's rules list (toml key "rules").
func configRules(e *graphfile.Element) []string {
	rv := reflect.ValueOf(e.Config)
	if rv.Kind() != reflect.Pointer || rv.IsNil() || rv.Elem().Kind() != reflect.Struct {
		return nil
	}
	f, ok := conf.FindField(conf.Fields(rv.Elem().Type()), "rules")
	if !ok {
		return nil
	}
	v := conf.FieldValue(rv.Elem(), f)
	if v.Kind() != reflect.Slice || v.Type().Elem().Kind() != reflect.String {
		return nil
	}
	out := make([]string, v.Len())
	for i := range out {
		out[i] = v.Index(i).String()
	}
	return out
}

// nsColour maps a self time to a light-yellow-to-red fill (white when
// not measured), doubling ns per step from 8 ns.
func nsColour(ns float64) string {
	palette := []string{"#ffffcc", "#ffeda0", "#fed976", "#feb24c", "#fd8d3c", "#fc4e2a", "#e31a1c"}
	if ns <= 0 {
		return "white"
	}
	i := int(math.Floor(math.Log2(ns/8))) + 1
	return palette[max(0, min(i, len(palette)-1))]
}

// rate formats packets per second.
func rate(pps float64) string {
	switch {
	case pps >= 1e6:
		return fmt.Sprintf("%.3g Mpps", pps/1e6)
	case pps >= 1e3:
		return fmt.Sprintf("%.3g kpps", pps/1e3)
	}
	return fmt.Sprintf("%.3g pps", pps)
}

// liveFigures are the per-element and per-link rates of a LiveStats.
type liveFigures struct {
	st     *Stats
	secs   float64
	elems  map[string]*elemFigures
	links  []float64
	known  []bool
	maxPPS float64
}

type elemFigures struct {
	pps, ns  float64
	drops    map[string]float64 // per second, by reason
	consumed map[string]float64 // per second, by reason (not losses)
}

func (f *elemFigures) dropLines() []string { return reasonLines("drop", f.drops) }

func (f *elemFigures) consumedLines() []string { return reasonLines("consumed", f.consumed) }

func reasonLines(kind string, m map[string]float64) []string {
	var out []string
	for r, v := range m {
		if v > 0 {
			out = append(out, fmt.Sprintf("%s %s: %s", kind, r, rate(v)))
		}
	}
	sort.Strings(out)
	return out
}

func newLiveFigures(g *graphfile.Graph, st *Stats) *liveFigures {
	lf := &liveFigures{st: st, elems: map[string]*elemFigures{}}
	dt := st.After.Uptime
	if st.Before != nil {
		dt -= st.Before.Uptime
	}
	lf.secs = dt.Seconds()
	if lf.secs <= 0 {
		lf.secs = 1
	}
	type sums struct{ pkts, tns, tpk float64 }
	acc := map[string]*sums{}
	drops := map[string]map[string]float64{}
	consumed := map[string]map[string]float64{}
	add := func(s *pipeline.Snapshot, sign float64) {
		if s == nil {
			return
		}
		for _, es := range s.Elements {
			a := acc[es.Element]
			if a == nil {
				a = &sums{}
				acc[es.Element] = a
				drops[es.Element] = map[string]float64{}
				consumed[es.Element] = map[string]float64{}
			}
			a.pkts += sign * float64(es.Packets)
			a.tns += sign * float64(es.TimedNanos)
			a.tpk += sign * float64(es.TimedPackets)
			for _, c := range es.Counters {
				switch {
				case c.Drop:
					drops[es.Element][c.Name] += sign * float64(c.Value)
				case c.Consumed:
					consumed[es.Element][c.Name] += sign * float64(c.Value)
				}
			}
		}
	}
	add(st.After, 1)
	add(st.Before, -1)
	for _, e := range g.Elements {
		f := &elemFigures{drops: map[string]float64{}, consumed: map[string]float64{}}
		if a := acc[e.Name]; a != nil {
			f.pps = max(a.pkts, 0) / lf.secs
			if a.tpk > 0 {
				f.ns = a.tns / a.tpk
			}
			for r, v := range drops[e.Name] {
				f.drops[r] = max(v, 0) / lf.secs
			}
			for r, v := range consumed[e.Name] {
				f.consumed[r] = max(v, 0) / lf.secs
			}
		}
		lf.elems[e.Name] = f
	}
	lf.solveLinks(g)
	return lf
}

// solveLinks derives link rates from element rates: first from what each
// destination received (its one unsettled input link gets the rest),
// then, when that settles nothing more, from what each source pushed (a
// source's packets; another element's received less dropped).
func (lf *liveFigures) solveLinks(g *graphfile.Graph) {
	n := len(g.Links)
	lf.links, lf.known = make([]float64, n), make([]bool, n)
	in, out := map[string][]int{}, map[string][]int{}
	for i, lk := range g.Links {
		in[lk.To] = append(in[lk.To], i)
		out[lk.From] = append(out[lk.From], i)
	}
	settle := func(total float64, idx []int) bool {
		unknown, sum := -1, 0.0
		for _, i := range idx {
			if lf.known[i] {
				sum += lf.links[i]
			} else if unknown >= 0 {
				return false
			} else {
				unknown = i
			}
		}
		if unknown < 0 {
			return false
		}
		lf.links[unknown], lf.known[unknown] = max(total-sum, 0), true
		return true
	}
	for {
		progress := false
		for _, e := range g.Elements {
			if settle(lf.elems[e.Name].pps, in[e.Name]) {
				progress = true
			}
		}
		if !progress {
			for _, e := range g.Elements {
				f := lf.elems[e.Name]
				pushed := f.pps
				if e.Type == nil || !e.Type.Source {
					for _, d := range f.drops {
						pushed -= d
					}
					for _, d := range f.consumed {
						pushed -= d
					}
				}
				if settle(pushed, out[e.Name]) {
					progress = true
					break
				}
			}
		}
		if !progress {
			break
		}
	}
	for i := range lf.links {
		if lf.known[i] {
			lf.maxPPS = max(lf.maxPPS, lf.links[i])
		}
	}
}

// pen maps a rate to a pen width, 0.5 (nothing) to 6 (the busiest link),
// by the square root of its share of the busiest: a tenth of the traffic
// is still a third of the width.
func (lf *liveFigures) pen(pps float64) float64 {
	if lf.maxPPS <= 0 {
		return 1
	}
	return 0.5 + 5.5*math.Sqrt(pps/lf.maxPPS)
}

func (lf *liveFigures) caption() string {
	what := fmt.Sprintf("over %v", (time.Duration(lf.secs * 1e9)).Round(time.Millisecond))
	if lf.st.Before == nil {
		what = "averaged over the uptime"
	}
	src := ""
	if lf.st.Source != "" {
		src = " from " + lf.st.Source
	}
	return fmt.Sprintf("packets/s %s%s\nedge width: packets/s (?: not derivable from the element counters)\n"+
		"fill: sampled self time, ns/packet (yellow < 16, red ≥ 256); red outline: drops (losses; consumed: freed by design)", what, src)
}
