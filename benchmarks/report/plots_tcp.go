package main

import (
	"fmt"
	"image/color"
	"math"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"github.com/junction-dataplane/junction/benchmarks/result"
)

// tcpCases are e2e-tcp.sh's iperf3 cases in the order drawn, with their
// axis labels: streams (-P) and direction (→ client to server, ← -R).
var tcpCases = []struct{ name, label string }{
	{"p1", "1 →"}, {"p1-R", "1 ←"}, {"p8", "8 →"}, {"p8-R", "8 ←"},
}

// plotTCP: e2e-tcp.sh's iperf3 runs, Gbit/s received by config and case,
// Linux and Junction side by side (median of the runs, min–max). A run
// that failed counts as 0 bit/s, as the script counts it.
func plotTCP(r *result.Result) (*plot.Plot, error) {
	type key struct{ cfg, cs, fwd string }
	vals := map[key][]float64{}
	var cfgs []string
	for _, run := range r.Runs {
		mbit, ok := run.Metrics["Mbit/s"]
		if !ok {
			continue // UDP runs (UDP=1) measure packets/s
		}
		k := key{run.Params["config"], run.Params["case"], run.Params["forwarder"]}
		if len(vals[key{k.cfg, "", ""}]) == 0 {
			cfgs = append(cfgs, k.cfg)
			vals[key{k.cfg, "", ""}] = []float64{0} // seen
		}
		vals[k] = append(vals[k], mbit/1000)
	}
	if len(cfgs) == 0 {
		return nil, fmt.Errorf("no TCP runs")
	}
	p := newPlot("TCP through Junction vs Linux on the same veths (iperf3 between ordinary hosts)", r)
	p.Y.Label.Text = "received, Gbit/s"
	p.X.Label.Text = "iperf3 streams, direction (→ to the server, ← -R); median of " +
		r.Traffic["runs"] + " runs × " + r.Traffic["duration"] + " s, min–max"
	// Each case takes three units of x: Linux's bar, Junction's, a gap.
	var ticks []plot.Tick
	var errs errPoints
	forwarders := []struct {
		name, legend string
		col          color.Color
	}{{"linux", "Linux (ip_forward; NAT: nftables masquerade)", colOther}, {"junction", "Junction (configs as shipped: afpacket, fast path in TC)", colJunction}}
	legend := map[string]bool{}
	x := 0.0
	for _, cfg := range cfgs {
		for _, c := range tcpCases {
			drawn := false
			for fi, f := range forwarders {
				v := vals[key{cfg, c.name, f.name}]
				if len(v) == 0 {
					continue
				}
				drawn = true
				s := result.Summarize(v)
				bc, err := plotter.NewBarChart(plotter.Values{s.Median}, vg.Points(13))
				if err != nil {
					return nil, err
				}
				bc.XMin = x + float64(fi)
				bc.Color = f.col
				bc.LineStyle.Width = 0
				p.Add(bc)
				if !legend[f.name] {
					legend[f.name] = true
					p.Legend.Add(f.legend, bc)
				}
				errs.XYs = append(errs.XYs, plotter.XY{X: x + float64(fi), Y: s.Median})
				errs.YErrors = append(errs.YErrors, struct{ Low, High float64 }{s.Median - s.Min, s.Max - s.Median})
			}
			if drawn {
				name := cfg
				if cfg == "nat" {
					name = "NAT"
				}
				ticks = append(ticks, plot.Tick{Value: x + 0.5, Label: name + "\n" + c.label})
				x += 3
			}
		}
	}
	if len(errs.XYs) == 0 {
		return nil, fmt.Errorf("no TCP runs of the known cases (%v)", tcpCaseNames())
	}
	eb, err := plotter.NewYErrorBars(errs)
	if err != nil {
		return nil, err
	}
	eb.CapWidth = vg.Points(5)
	p.Add(eb)
	p.X.Tick.Marker = plot.ConstantTicks(ticks)
	p.X.Min, p.X.Max = -1, x-1
	p.Y.Min = 0
	p.Y.Max = math.Ceil(p.Y.Max * 1.3) // room for the legend
	var yt []plot.Tick
	for v := 0.0; v <= p.Y.Max; v++ {
		yt = append(yt, plot.Tick{Value: v, Label: strconv.FormatFloat(v, 'f', 0, 64)})
	}
	p.Y.Tick.Marker = plot.ConstantTicks(yt)
	return p, nil
}

func tcpCaseNames() string {
	var s []string
	for _, c := range tcpCases {
		s = append(s, c.name)
	}
	return strings.Join(s, ", ")
}
