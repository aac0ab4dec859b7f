package main

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/BurntSushi/toml"

	"github.com/junction-dataplane/junction/benchmarks/result"
	"github.com/junction-dataplane/junction/pipeline"
)

// benchJSONOut is what `bench -json` knows before the run: the name of
// the measurement and the command line.
type benchJSONOut struct {
	name, command string
}

// benchJSON returns the -json output's description, or nil without -json.
func benchJSON(on bool, name string, args []string) *benchJSONOut {
	if !on {
		return nil
	}
	return &benchJSONOut{name: name, command: "forwarder bench " + strings.Join(args, " ")}
}

// write prints the run as one result.Result: where it ran (origin: the
// machine, the commit, the load at the start), the whole graph's figures,
// and every element's packets, sampled self time and drops by reason
// over the measured interval (after less before).
func (j *benchJSONOut) write(w io.Writer, g *pipeline.Graph, origin benchOrigin, pkts int, elapsed time.Duration, mallocs uint64, before, after *pipeline.Snapshot) error {
	r := result.New(j.name)
	r.Machine = origin.machine
	r.Command = j.command
	r.Description = "whole graph on one worker, generator and sinks included; element figures are sampled self time"
	r.Traffic = genTraffic(g)
	run := result.Run{
		Name:            j.name,
		Params:          map[string]string{"batch": fmt.Sprint(g.Batch), "workers": "1"},
		Packets:         uint64(pkts),
		Seconds:         elapsed.Seconds(),
		NsPerPacket:     float64(elapsed.Nanoseconds()) / float64(pkts),
		Mpps:            float64(pkts) / elapsed.Seconds() / 1e6,
		AllocsPerPacket: float64(mallocs) / float64(pkts),
	}
	run.Elements = result.ElementDeltas(before, after)
	r.Runs = []result.Run{run}
	return r.Write(w)
}

// genTraffic describes the traffic of the graph's gen devices: their
// non-zero keys, as "device.key".
func genTraffic(g *pipeline.Graph) map[string]string {
	t := map[string]string{}
	for _, d := range g.Devices {
		if d.Driver == nil || d.Driver.Name != "gen" || d.Config == nil {
			continue
		}
		var buf strings.Builder
		if err := toml.NewEncoder(&buf).Encode(d.Config); err != nil {
			continue
		}
		var m map[string]any
		if _, err := toml.Decode(buf.String(), &m); err != nil {
			continue
		}
		for k, v := range m {
			s := fmt.Sprint(v)
			if s == "" || s == "0" || s == "false" || s == "[]" || s == "map[]" {
				continue
			}
			t[d.Name+"."+k] = s
		}
	}
	return t
}
