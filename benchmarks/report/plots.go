package main

import (
	"fmt"
	"image/color"
	"io"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/junction-dataplane/junction/benchmarks/result"
)

// The plots, each drawn from one result file in results/ (a missing file
// — the end-to-end results when not run as root — skips its plot).
var plots = []struct {
	file, result string
	draw         func(r *result.Result) (*plot.Plot, error)
}{
	{"lookup-dests.svg", "lookup-dests", plotLookup},
	{"nat-flows.svg", "nat-flows", plotNAT},
	{"l3-workers.svg", "l3-workers", plotWorkers},
	{"elements-l3.svg", "l3-workers", plotElementsL3},
	{"elements-nat.svg", "nat-flows", plotElementsNAT},
	{"plugin-batch.svg", "plugin-batch", plotPlugin},
	{"e2e-router.svg", "e2e-router", plotE2E},
	{"e2e-nat.svg", "e2e-nat", plotE2E},
	{"e2e-tcp.svg", "e2e-tcp", plotTCP},
}

const plotW, plotH = 16 * vg.Centimeter, 10 * vg.Centimeter

var (
	colJunction = color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff}
	colOther    = color.RGBA{R: 0xd6, G: 0x27, B: 0x28, A: 0xff}
	colThird    = color.RGBA{R: 0x2c, G: 0xa0, B: 0x2c, A: 0xff}
	colGrey     = color.RGBA{R: 0x70, G: 0x70, B: 0x70, A: 0xff}
)

func renderPlots(resDir, plotDir string, png bool, log io.Writer) error {
	for _, p := range plots {
		path := filepath.Join(resDir, p.result+".json")
		if _, err := os.Stat(path); err != nil {
			fmt.Fprintf(log, "plot %s: skipped (no %s)\n", p.file, path)
			continue
		}
		r, err := result.ReadFile(path)
		if err != nil {
			return err
		}
		pl, err := p.draw(r)
		if err != nil {
			return fmt.Errorf("plot %s: %w", p.file, err)
		}
		if err := pl.Save(plotW, plotH, filepath.Join(plotDir, p.file)); err != nil {
			return fmt.Errorf("plot %s: %w", p.file, err)
		}
		if png {
			if err := pl.Save(plotW, plotH, filepath.Join(plotDir, strings.TrimSuffix(p.file, ".svg")+".png")); err != nil {
				return fmt.Errorf("plot %s: %w", p.file, err)
			}
		}
		fmt.Fprintf(log, "plot %s\n", filepath.Join(plotDir, p.file))
	}
	return nil
}

// newPlot starts a plot titled with what it shows and the machine it was
// measured on.
func newPlot(title string, r *result.Result) *plot.Plot {
	p := plot.New()
	m := r.Machine
	load := ""
	if m.Load1 > float64(m.Cores)/2 {
		load = fmt.Sprintf(", load %.1f (shared machine)", m.Load1)
	}
	p.Title.Text = title + "\n" + m.String() + load
	p.Title.TextStyle.Font.Size = vg.Points(10)
	p.Title.Padding = vg.Points(6)
	p.Legend.Top = true
	p.Legend.TextStyle.Font.Size = vg.Points(8)
	p.Add(plotter.NewGrid())
	return p
}

// errPoints are medians with their min..max range.
type errPoints struct {
	plotter.XYs
	plotter.YErrors
}

// series collects, per x, the values of a metric over a result's runs
// whose params match, and returns medians with ranges, sorted by x.
func series(r *result.Result, match map[string]string, x func(result.Run) (float64, bool), y func(result.Run) float64) errPoints {
	by := map[float64][]float64{}
	for _, run := range r.Runs {
		ok := true
		for k, v := range match {
			if run.Params[k] != v {
				ok = false
			}
		}
		xv, okx := x(run)
		if !ok || !okx {
			continue
		}
		by[xv] = append(by[xv], y(run))
	}
	var xs []float64
	for k := range by {
		xs = append(xs, k)
	}
	sort.Float64s(xs)
	var e errPoints
	for _, xv := range xs {
		s := result.Summarize(by[xv])
		e.XYs = append(e.XYs, plotter.XY{X: xv, Y: s.Median})
		e.YErrors = append(e.YErrors, struct{ Low, High float64 }{s.Median - s.Min, s.Max - s.Median})
	}
	return e
}

func param(k string) func(result.Run) (float64, bool) {
	return func(r result.Run) (float64, bool) {
		v, err := strconv.ParseFloat(r.Params[k], 64)
		return v, err == nil
	}
}

func mpps(r result.Run) float64 { return r.Mpps }

// cpuMpps is the rate per second of the workers' CPU time (falling back
// to the wall-clock rate for results without it).
func cpuMpps(r result.Run) float64 {
	if v, ok := r.Metrics["mpps_per_cpu_second"]; ok {
		return v
	}
	return r.Mpps
}

// cpuNote explains the rate axis of the single-worker plots.
const cpuNote = "Mpps per worker CPU-second"

// addSeries draws medians as a line with points and min..max error bars.
func addSeries(p *plot.Plot, name string, e errPoints, c color.Color, shape draw.GlyphDrawer) error {
	if len(e.XYs) == 0 {
		return fmt.Errorf("no data for %q", name)
	}
	l, s, err := plotter.NewLinePoints(e.XYs)
	if err != nil {
		return err
	}
	l.Color = c
	l.Width = vg.Points(1.2)
	s.Color = c
	s.Shape = shape
	s.Radius = vg.Points(2.5)
	eb, err := plotter.NewYErrorBars(e)
	if err != nil {
		return err
	}
	eb.Color = c
	eb.CapWidth = vg.Points(5)
	p.Add(l, s, eb)
	p.Legend.Add(name, l, s)
	return nil
}

// siTicks marks the powers of ten of a log axis as 1, 10, 1k, 1M, with
// unlabelled minor ticks at 2..9 × each.
type siTicks struct{}

func (siTicks) Ticks(min, max float64) []plot.Tick {
	var t []plot.Tick
	for e := math.Floor(math.Log10(min)); e <= math.Ceil(math.Log10(max)); e++ {
		base := math.Pow(10, e)
		if base >= min*0.999 && base <= max*1.001 {
			t = append(t, plot.Tick{Value: base, Label: si(base)})
		}
		for m := 2.0; m < 10; m++ {
			if v := m * base; v >= min && v <= max {
				t = append(t, plot.Tick{Value: v})
			}
		}
	}
	return t
}

// rateTicks labels a log axis of rates at 1, 2, 5 × powers of ten.
type rateTicks struct{}

func (rateTicks) Ticks(min, max float64) []plot.Tick {
	var t []plot.Tick
	for e := math.Floor(math.Log10(min)); e <= math.Ceil(math.Log10(max)); e++ {
		for _, m := range []float64{1, 2, 3, 4, 5, 6, 7, 8, 9} {
			v := m * math.Pow(10, e)
			if v < min || v > max {
				continue
			}
			tk := plot.Tick{Value: v}
			if m == 1 || m == 2 || m == 5 {
				tk.Label = strconv.FormatFloat(v, 'g', -1, 64)
			}
			t = append(t, tk)
		}
	}
	return t
}

// plainTicks are the default ticks labelled without trailing zeros.
type plainTicks struct{}

func (plainTicks) Ticks(min, max float64) []plot.Tick {
	t := plot.DefaultTicks{}.Ticks(min, max)
	for i := range t {
		if t[i].Label != "" {
			t[i].Label = strconv.FormatFloat(t[i].Value, 'g', 4, 64)
		}
	}
	return t
}

func si(v float64) string {
	switch {
	case v >= 1e6:
		return strconv.FormatFloat(v/1e6, 'g', -1, 64) + "M"
	case v >= 1e3:
		return strconv.FormatFloat(v/1e3, 'g', -1, 64) + "k"
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}

// plotLookup is the lead plot: the forwarding rate against the number of
// destinations seen, Junction measured, the Linux 3.1 route cache quoted.
func plotLookup(r *result.Result) (*plot.Plot, error) {
	prefixes := r.Traffic["prefixes"]
	p := newPlot("Forwarding rate vs destinations seen (L3 graph, "+si(atof(prefixes))+"-prefix table, 1 worker)", r)
	p.X.Label.Text = "distinct destinations in the traffic (log)"
	// Two lines: gonum places the label's box at the arithmetic middle
	// of a log axis, near its top, and pads the plot for a long one.
	p.Y.Label.Text = "Mpps per worker\nCPU-second (log)"
	p.X.Scale, p.Y.Scale = plot.LogScale{}, plot.LogScale{}
	p.X.Tick.Marker, p.Y.Tick.Marker = siTicks{}, rateTicks{}
	e := series(r, nil, param("destinations"), cpuMpps)
	if err := addSeries(p, "Junction IPLookup, measured here (median, min–max of rounds)", e, colJunction, draw.CircleGlyph{}); err != nil {
		return nil, err
	}
	// Quoted, not measured: the seed scenario's Linux 3.1 figures (5 Mpps
	// until the route cache held ~1M entries, 0.7 Mpps minutes after,
	// with random destinations across 10.0.0.0-10.18.255.255, 1.25M
	// addresses), on other hardware.
	ref := plotter.XYs{{X: 1e6, Y: 5}, {X: 1.25e6, Y: 0.7}}
	flat, err := plotter.NewLine(plotter.XYs{{X: 1, Y: 5}, {X: 1e6, Y: 5}})
	if err != nil {
		return nil, err
	}
	flat.Color, flat.Dashes = colOther, []vg.Length{vg.Points(4), vg.Points(3)}
	drop, err := plotter.NewLine(ref)
	if err != nil {
		return nil, err
	}
	drop.Color, drop.Dashes = colOther, []vg.Length{vg.Points(4), vg.Points(3)}
	pts, err := plotter.NewScatter(ref)
	if err != nil {
		return nil, err
	}
	pts.Color, pts.Shape, pts.Radius = colOther, draw.PyramidGlyph{}, vg.Points(3.5)
	lb, err := plotter.NewLabels(plotter.XYLabels{XYs: plotter.XYs{{X: 1.5e6, Y: 5}, {X: 1.5e6, Y: 0.7}},
		Labels: []string{"5 Mpps", "0.7 Mpps"}})
	if err != nil {
		return nil, err
	}
	for i := range lb.TextStyle {
		lb.TextStyle[i].Color = colOther
		lb.TextStyle[i].Font.Size = vg.Points(8)
	}
	p.Add(flat, drop, pts, lb)
	p.Legend.Add("Linux 3.1 route cache: QUOTED from its report (other hardware), not measured here", flat, pts)
	p.Legend.Left = true
	p.Legend.Top = false
	p.Y.Min = 0.5
	p.Y.Max = niceUp(math.Max(p.Y.Max*1.2, 10))
	p.X.Max = 5e6
	return p, nil
}

// plotNAT: NAT gateway rate against live flows, slow path against
// FastTrack, with the fast/slow ratio written at each flow count.
func plotNAT(r *result.Result) (*plot.Plot, error) {
	p := newPlot("NAT graph: FastTrack (fast path) vs slow path by live flows (1 worker)", r)
	p.X.Label.Text = "live UDP flows (log)"
	p.Y.Label.Text = cpuNote
	p.X.Scale, p.X.Tick.Marker = plot.LogScale{}, siTicks{}
	fast := series(r, map[string]string{"path": "fast"}, param("flows"), cpuMpps)
	slow := series(r, map[string]string{"path": "slow"}, param("flows"), cpuMpps)
	if err := addSeries(p, "FastTrack (flows seen twice skip Conntrack/DNAT/routing)", fast, colJunction, draw.CircleGlyph{}); err != nil {
		return nil, err
	}
	if err := addSeries(p, "slow path (Classifier, Conntrack, DNAT, IPLookup, DecTTL, EtherRewrite)", slow, colOther, draw.BoxGlyph{}); err != nil {
		return nil, err
	}
	var lbl plotter.XYLabels
	for i := range fast.XYs {
		if i < len(slow.XYs) && slow.XYs[i].X == fast.XYs[i].X && slow.XYs[i].Y > 0 {
			lbl.XYs = append(lbl.XYs, plotter.XY{X: fast.XYs[i].X * 1.08, Y: (fast.XYs[i].Y + slow.XYs[i].Y) / 2})
			lbl.Labels = append(lbl.Labels, fmt.Sprintf("%.1f×", fast.XYs[i].Y/slow.XYs[i].Y))
		}
	}
	if len(lbl.XYs) > 0 {
		lb, err := plotter.NewLabels(lbl)
		if err != nil {
			return nil, err
		}
		p.Add(lb)
	}
	p.Y.Min = 0
	p.Y.Max *= 1.35
	p.Y.Tick.Marker = plainTicks{}
	p.X.Min /= 1.5
	p.X.Max *= 1.5
	return p, nil
}

// plotWorkers: the L3 graph's aggregate rate on 1 and 2 workers, with
// perfect scaling from one worker drawn for reference.
func plotWorkers(r *result.Result) (*plot.Plot, error) {
	p := newPlot("L3 graph (bench-l3.toml): aggregate rate by workers", r)
	p.X.Label.Text = "workers (one per core, unpinned)"
	p.Y.Label.Text = "rate, Mpps"
	e := series(r, nil, param("workers"), mpps)
	if err := addSeries(p, "measured, wall clock (median, min–max)", e, colJunction, draw.CircleGlyph{}); err != nil {
		return nil, err
	}
	cpu := series(r, nil, param("workers"), func(run result.Run) float64 { return cpuMpps(run) * atof(run.Params["workers"]) })
	if err := addSeries(p, "workers × Mpps per CPU-second (the rate with the cores to itself)", cpu, colThird, draw.TriangleGlyph{}); err != nil {
		return nil, err
	}
	if len(cpu.XYs) > 0 {
		one := cpu.XYs[0].Y / cpu.XYs[0].X
		ideal := plotter.XYs{}
		for _, xy := range cpu.XYs {
			ideal = append(ideal, plotter.XY{X: xy.X, Y: one * xy.X})
		}
		l, err := plotter.NewLine(ideal)
		if err != nil {
			return nil, err
		}
		l.Color, l.Dashes = colGrey, []vg.Length{vg.Points(3), vg.Points(3)}
		p.Add(l)
		p.Legend.Add("linear scaling from 1 worker", l)
	}
	p.X.Tick.Marker = plot.ConstantTicks([]plot.Tick{{Value: 1, Label: "1"}, {Value: 2, Label: "2"}})
	p.X.Min, p.X.Max = 0.8, 2.2
	p.Y.Min = 0
	p.Y.Max *= 1.3
	p.Y.Tick.Marker = plainTicks{}
	return p, nil
}

// elementBars draws each element's median sampled self time (ns/packet)
// of the matching runs as horizontal bars, one group per variant.
func elementBars(r *result.Result, title string, groups []struct {
	name  string
	match map[string]string
}) (*plot.Plot, error) {
	p := newPlot(title, r)
	p.X.Label.Text = "self time, ns/packet (sampled; median of rounds, min–max)"
	// Element names in graph order, sinks and generator included.
	var names []string
	seen := map[string]bool{}
	vals := make([]map[string][]float64, len(groups))
	for gi, g := range groups {
		vals[gi] = map[string][]float64{}
		for _, run := range r.Runs {
			ok := true
			for k, v := range g.match {
				if run.Params[k] != v {
					ok = false
				}
			}
			if !ok {
				continue
			}
			for _, e := range run.Elements {
				if e.Packets == 0 {
					continue
				}
				// Anonymous elements are named Type@N or Type(args)@N.
				label := e.Name + " :: " + e.Type
				if i := strings.LastIndexByte(e.Name, '@'); i > 0 && strings.HasPrefix(e.Name, e.Type) {
					label = e.Name[:i]
				}
				if !seen[label] {
					seen[label] = true
					names = append(names, label)
				}
				vals[gi][label] = append(vals[gi][label], e.NsPerPacket)
			}
		}
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("no element figures")
	}
	// The costliest at the top (the nominal axis counts upwards), by the
	// first group's median.
	med := func(n string) float64 {
		for gi := range groups {
			if v := vals[gi][n]; len(v) > 0 {
				return result.Summarize(v).Median
			}
		}
		return 0
	}
	sort.SliceStable(names, func(i, j int) bool { return med(names[i]) < med(names[j]) })
	top := 0.0
	for gi := range groups {
		for _, v := range vals[gi] {
			top = math.Max(top, result.Summarize(v).Max)
		}
	}
	w := vg.Points(18 / float64(len(groups)))
	cols := []color.Color{colJunction, colOther, colThird}
	for gi, g := range groups {
		var v plotter.Values
		var errs errPoints
		for i, n := range names {
			s := result.Summarize(vals[gi][n])
			v = append(v, s.Median)
			errs.XYs = append(errs.XYs, plotter.XY{X: s.Median, Y: float64(i)})
			errs.YErrors = append(errs.YErrors, struct{ Low, High float64 }{s.Median - s.Min, s.Max - s.Median})
		}
		bc, err := plotter.NewBarChart(v, w)
		if err != nil {
			return nil, err
		}
		bc.Horizontal = true
		bc.Color = cols[gi%len(cols)]
		bc.LineStyle.Width = 0
		bc.Offset = w * vg.Length(float64(gi)-float64(len(groups)-1)/2)
		p.Add(bc)
		if len(groups) > 1 {
			p.Legend.Add(g.name, bc)
		}
		xe := xErrs{errs}
		eb, err := plotter.NewXErrorBars(xe)
		if err != nil {
			return nil, err
		}
		eb.CapWidth = vg.Points(3)
		_ = eb // offsets of grouped bars are not known to the error bars: drawn only for one group
		if len(groups) == 1 {
			p.Add(eb)
		}
	}
	p.NominalY(names...)
	p.X.Min, p.X.Max = 0, top*1.1
	p.X.Tick.Marker = plainTicks{}
	p.Legend.Top = false
	return p, nil
}

// xErrs turns errPoints sideways: Y errors become X errors.
type xErrs struct{ e errPoints }

func (x xErrs) Len() int                        { return len(x.e.XYs) }
func (x xErrs) XY(i int) (float64, float64)     { return x.e.XYs[i].X, x.e.XYs[i].Y }
func (x xErrs) XError(i int) (float64, float64) { return x.e.YErrors[i].Low, x.e.YErrors[i].High }

func plotElementsL3(r *result.Result) (*plot.Plot, error) {
	return elementBars(r, "Where the time goes: L3 graph (bench-l3.toml), 1 worker", []struct {
		name  string
		match map[string]string
	}{{"1 worker", map[string]string{"workers": "1"}}})
}

func plotElementsNAT(r *result.Result) (*plot.Plot, error) {
	flows := "10000"
	for _, run := range r.Runs {
		if run.Params["flows"] == flows {
			flows = run.Params["flows"]
		}
	}
	return elementBars(r, "Where the time goes: NAT graph (bench-nat.toml), "+si(atof(flows))+" flows, 1 worker", []struct {
		name  string
		match map[string]string
	}{
		{"slow path", map[string]string{"flows": flows, "path": "slow"}},
		{"FastTrack", map[string]string{"flows": flows, "path": "fast"}},
	})
}

// plotPlugin: ns/packet of DecTTL in process and in a plugin, by batch.
func plotPlugin(r *result.Result) (*plot.Plot, error) {
	p := newPlot("Plugin overhead by batch size (DecTTL in process vs in a plugin process)", r)
	p.X.Label.Text = "packets per batch (log)"
	p.Y.Label.Text = "ns/packet (log)"
	p.X.Scale, p.Y.Scale = plot.LogScale{}, plot.LogScale{}
	p.X.Tick.Marker = plot.ConstantTicks([]plot.Tick{{Value: 1, Label: "1"}, {Value: 4}, {Value: 16, Label: "16"}, {Value: 64, Label: "64"}, {Value: 256, Label: "256"}})
	p.Y.Tick.Marker = rateTicks{}
	ns := func(run result.Run) float64 { return run.NsPerPacket }
	if err := addSeries(p, "plugin (shared-memory rings, one wake-up per batch)", series(r, map[string]string{"where": "plugin"}, param("batch"), ns), colOther, draw.BoxGlyph{}); err != nil {
		return nil, err
	}
	if err := addSeries(p, "in process", series(r, map[string]string{"where": "inprocess"}, param("batch"), ns), colJunction, draw.CircleGlyph{}); err != nil {
		return nil, err
	}
	p.X.Min, p.X.Max = 0.8, 320
	p.Y.Max = niceUp(p.Y.Max)
	p.Legend.Top = true
	return p, nil
}

// plotE2E: the end-to-end comparison, one bar per phase of the script
// (median of its per-second rates, min–max).
func plotE2E(r *result.Result) (*plot.Plot, error) {
	names, runs := r.Series()
	p := newPlot(r.Description, r)
	p.Title.Text = strings.Replace(p.Title.Text, "; ", "\n", 1)
	p.Y.Label.Text = "delivered, Mpps"
	p.X.Label.Text = "phase (red: Linux, blue: Junction); median of per-second rates, min–max"
	var v plotter.Values
	var e errPoints
	for i, n := range names {
		var xs []float64
		for _, run := range runs[n] {
			xs = append(xs, run.Mpps)
		}
		s := result.Summarize(xs)
		v = append(v, s.Median)
		e.XYs = append(e.XYs, plotter.XY{X: float64(i), Y: s.Median})
		e.YErrors = append(e.YErrors, struct{ Low, High float64 }{s.Median - s.Min, s.Max - s.Median})
	}
	if len(v) == 0 {
		return nil, fmt.Errorf("no runs")
	}
	for i := range v {
		bc, err := plotter.NewBarChart(plotter.Values{v[i]}, vg.Points(40))
		if err != nil {
			return nil, err
		}
		bc.XMin = float64(i)
		bc.Color = colJunction
		if strings.HasPrefix(names[i], "linux") {
			bc.Color = colOther
		}
		bc.LineStyle.Width = 0
		p.Add(bc)
	}
	eb, err := plotter.NewYErrorBars(e)
	if err != nil {
		return nil, err
	}
	eb.CapWidth = vg.Points(8)
	p.Add(eb)
	p.NominalX(names...)
	p.X.Min, p.X.Max = -0.7, float64(len(names))-0.3
	p.Y.Min = 0
	p.Y.Tick.Marker = plainTicks{}
	return p, nil
}

// niceUp is the smallest 1, 2 or 5 × 10^k at or above v (v > 0): a log
// axis that ends on a labelled tick.
func niceUp(v float64) float64 {
	e := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*e >= v*0.999 {
			return m * e
		}
	}
	return 10 * e
}

func atof(s string) float64 {
	v, _ := strconv.ParseFloat(s, 64)
	return v
}

// writeSummary prints, per result, each variant's median Mpps and ns/packet
// with their ranges: the figures the report's text quotes.
func writeSummary(resDir string, w io.Writer) error {
	files, err := filepath.Glob(filepath.Join(resDir, "*.json"))
	if err != nil {
		return err
	}
	for _, f := range files {
		r, err := result.ReadFile(f)
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "\n%s (%s, load %.1f)\n", r.Name, r.Machine.String(), r.Machine.Load1)
		names, runs := r.Series()
		for _, n := range names {
			var mp, cp, ns, mbit []float64
			for _, x := range runs[n] {
				mp = append(mp, x.Mpps)
				if v, ok := x.Metrics["Mbit/s"]; ok {
					mbit = append(mbit, v) // iperf3 runs: no packet rate
				}
				ns = append(ns, x.NsPerPacket)
				if v, ok := x.Metrics["mpps_per_cpu_second"]; ok {
					cp = append(cp, v)
				}
			}
			a, b, c := result.Summarize(mp), result.Summarize(ns), result.Summarize(cp)
			if m := result.Summarize(mbit); m.N > 0 {
				fmt.Fprintf(w, "  %-28s %8.0f Mbit/s (%.0f–%.0f)  n=%d\n", n, m.Median, m.Min, m.Max, m.N)
				continue
			}
			fmt.Fprintf(w, "  %-28s %8.3g Mpps (%.3g–%.3g)", n, a.Median, a.Min, a.Max)
			if c.N > 0 {
				fmt.Fprintf(w, "  %8.3g Mpps/CPU-s (%.3g–%.3g)", c.Median, c.Min, c.Max)
			}
			if b.Median > 0 {
				fmt.Fprintf(w, "  %8.3g ns/pkt (%.3g–%.3g)", b.Median, b.Min, b.Max)
			}
			fmt.Fprintf(w, "  n=%d\n", a.N)
		}
	}
	return nil
}
