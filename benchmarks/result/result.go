package result

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
	"time"
)

// Schema names this version of the format; a decoder rejects others.
const Schema = "junction-bench/1"

// Result is one benchmark's data.
type Result struct {
	Schema string `json:"schema"`
	// Name says what was measured: "element DecTTL", "l3-workers".
	Name string `json:"name"`
	// Description is a sentence a reader understands without the code.
	Description string `json:"description,omitempty"`
	// Command reproduces the result.
	Command string    `json:"command,omitempty"`
	Time    time.Time `json:"time"`
	Machine Machine   `json:"machine"`
	// Traffic is the offered traffic: gen driver keys (size, flows, dst,
	// proto) or what an end-to-end script sent.
	Traffic map[string]string `json:"traffic,omitempty"`
	Runs    []Run             `json:"runs"`
}

// Run is one repetition of one variant.
type Run struct {
	// Name is the variant: a go test sub-benchmark name ("workers=2") or
	// one built from Params.
	Name   string            `json:"name"`
	Params map[string]string `json:"params,omitempty"`
	// Packets forwarded (or offered) in Seconds of wall time.
	Packets uint64  `json:"packets,omitempty"`
	Seconds float64 `json:"seconds,omitempty"`
	// NsPerPacket is wall time per packet for the whole graph (generator
	// and sinks included) on one worker; Mpps the aggregate rate.
	NsPerPacket     float64 `json:"ns_per_packet,omitempty"`
	Mpps            float64 `json:"mpps,omitempty"`
	AllocsPerPacket float64 `json:"allocs_per_packet"`
	// Elements are the per-element figures of the run, when known.
	Elements []Element `json:"elements,omitempty"`
	// Metrics holds any other measured value by unit or name: from go
	// test, its units ("ns/op", "B/op", "allocs/op", "fast-share",
	// "iterations"); from the report, "mpps_per_cpu_second" (packets per
	// second of the worker threads' CPU time, in millions) and
	// "cpu_seconds"; from the e2e scripts, "pps", or "Mbit/s",
	// "retransmits" and "failed" (1) per iperf3 run.
	Metrics map[string]float64 `json:"metrics,omitempty"`
}

// Element is one element's share of a run.
type Element struct {
	Name string `json:"name"`
	Type string `json:"type"`
	// Packets the element received; NsPerPacket its sampled self time.
	Packets     uint64  `json:"packets"`
	NsPerPacket float64 `json:"ns_per_packet"`
	// Drops by reason (losses); Consumed by reason: what the element
	// freed by design (Discard), not losses.
	Drops    map[string]uint64 `json:"drops,omitempty"`
	Consumed map[string]uint64 `json:"consumed,omitempty"`
}

// New returns a Result with the schema, the time and this machine.
func New(name string) *Result {
	return &Result{Schema: Schema, Name: name, Time: time.Now().UTC(), Machine: ThisMachine()}
}

// Write encodes r, indented, to w.
func (r *Result) Write(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// WriteFile writes r to path.
func (r *Result) WriteFile(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := r.Write(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// Decode reads one Result and checks its schema.
func Decode(rd io.Reader) (*Result, error) {
	dec := json.NewDecoder(rd)
	dec.DisallowUnknownFields()
	var r Result
	if err := dec.Decode(&r); err != nil {
		return nil, err
	}
	if r.Schema != Schema {
		return nil, fmt.Errorf("schema %q, want %q", r.Schema, Schema)
	}
	return &r, nil
}

// ReadFile decodes the Result in path.
func ReadFile(path string) (*Result, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	r, err := Decode(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return r, nil
}

// Series groups runs by variant name, in first-seen order.
func (r *Result) Series() (names []string, runs map[string][]Run) {
	runs = map[string][]Run{}
	for _, x := range r.Runs {
		if _, ok := runs[x.Name]; !ok {
			names = append(names, x.Name)
		}
		runs[x.Name] = append(runs[x.Name], x)
	}
	return names, runs
}

// Stat is the median and range of repeated values.
type Stat struct {
	Median, Min, Max float64
	N                int
}

// Summarize returns the median, minimum and maximum of vs.
func Summarize(vs []float64) Stat {
	if len(vs) == 0 {
		return Stat{}
	}
	s := append([]float64(nil), vs...)
	sort.Float64s(s)
	m := s[len(s)/2]
	if len(s)%2 == 0 {
		m = (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	return Stat{Median: m, Min: s[0], Max: s[len(s)-1], N: len(s)}
}
