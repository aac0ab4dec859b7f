package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/junction-dataplane/junction/benchmarks/result"
)

type multi []string

func (m *multi) String() string     { return strings.Join(*m, " ") }
func (m *multi) Set(s string) error { *m = append(*m, s); return nil }

func main() {
	if err := run(os.Args[1:], os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "benchjson:", err)
		os.Exit(1)
	}
}

func run(args []string, stdin io.Reader, stdout io.Writer) error {
	fs := flag.NewFlagSet("benchjson", flag.ContinueOnError)
	name := fs.String("name", "", "what was measured (required)")
	desc := fs.String("description", "", "one sentence on what and how")
	command := fs.String("command", "", "the command that reproduces it")
	traffic := fs.String("traffic", "", "comma-separated key=value pairs describing the traffic")
	gotest := fs.Bool("gotest", false, "convert go test -bench output from stdin")
	var windows, iperfs, runFiles multi
	fs.Var(&windows, "window", "LABEL=FILE: an e2e window file, one rx_pps line per second (repeatable)")
	fs.Var(&runFiles, "runs", "FILE: runs in the schema, one JSON object a line (repeatable)")
	fs.Var(&iperfs, "iperf", "CONFIG=FILE: e2e-tcp.sh's rows, one iperf3 run each (repeatable)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *name == "" {
		return errors.New("-name is required")
	}
	r := result.New(*name)
	r.Description, r.Command = *desc, *command
	if *traffic != "" {
		r.Traffic = map[string]string{}
		for _, kv := range strings.Split(*traffic, ",") {
			k, v, ok := strings.Cut(kv, "=")
			if !ok {
				return fmt.Errorf("-traffic %q: want key=value", kv)
			}
			r.Traffic[strings.TrimSpace(k)] = strings.TrimSpace(v)
		}
	}
	if *gotest {
		runs, _, err := result.ParseGoTest(stdin)
		if err != nil {
			return err
		}
		r.Runs = append(r.Runs, runs...)
	}
	for _, w := range windows {
		label, file, ok := strings.Cut(w, "=")
		if !ok {
			return fmt.Errorf("-window %q: want LABEL=FILE", w)
		}
		runs, err := readWindow(label, file)
		if err != nil {
			return err
		}
		r.Runs = append(r.Runs, runs...)
	}
	for _, w := range iperfs {
		cfg, file, ok := strings.Cut(w, "=")
		if !ok {
			return fmt.Errorf("-iperf %q: want CONFIG=FILE", w)
		}
		runs, err := readIperf(cfg, file)
		if err != nil {
			return err
		}
		r.Runs = append(r.Runs, runs...)
	}
	for _, file := range runFiles {
		runs, err := readRuns(file)
		if err != nil {
			return err
		}
		r.Runs = append(r.Runs, runs...)
	}
	if len(r.Runs) == 0 {
		return errors.New("nothing measured: give -gotest, -window, -iperf or -runs")
	}
	return r.Write(stdout)
}

func readWindow(label, file string) ([]result.Run, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var runs []result.Run
	sc := bufio.NewScanner(f)
	for line := 1; sc.Scan(); line++ {
		_, after, ok := strings.Cut(sc.Text(), "rx_pps=")
		if !ok {
			continue
		}
		v, err := strconv.ParseFloat(strings.Fields(after + " ")[0], 64)
		if err != nil {
			return nil, fmt.Errorf("%s:%d: rx_pps: %v", file, line, err)
		}
		runs = append(runs, result.Run{Name: label, Params: map[string]string{"phase": label}, Packets: uint64(v), Seconds: 1,
			Mpps: v / 1e6, Metrics: map[string]float64{"pps": v}})
	}
	return runs, sc.Err()
}

// readIperf reads "FORWARDER CASE BITS/S RETRANSMITS ERROR" rows; ERROR
// is "-" for a run that succeeded. UDP cases ("udp64") measure packets/s
// and the loss share instead.
func readIperf(cfg, file string) ([]result.Run, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	var runs []result.Run
	for i, l := range strings.Split(string(b), "\n") {
		f := strings.Fields(l)
		if len(f) == 0 {
			continue
		}
		if len(f) < 5 {
			return nil, fmt.Errorf("%s:%d: want FORWARDER CASE VALUE RETRANSMITS ERROR, got %q", file, i+1, l)
		}
		v, err1 := strconv.ParseFloat(f[2], 64)
		x, err2 := strconv.ParseFloat(f[3], 64)
		if err1 != nil || err2 != nil {
			return nil, fmt.Errorf("%s:%d: not numbers: %q", file, i+1, l)
		}
		run := result.Run{Name: cfg + "/" + f[0] + "/" + f[1], Params: map[string]string{"config": cfg, "forwarder": f[0], "case": f[1]},
			Metrics: map[string]float64{}}
		if strings.HasPrefix(f[1], "udp") {
			run.Metrics["pps"], run.Metrics["loss"] = v, x
			run.Mpps = v / 1e6
		} else {
			run.Metrics["Mbit/s"], run.Metrics["retransmits"] = v/1e6, x
		}
		if f[4] != "-" || v == 0 {
			run.Metrics["failed"] = 1
		}
		runs = append(runs, run)
	}
	return runs, nil
}

// readRuns reads one result.Run a line (blank lines skipped); a line that
// is not one, or a run without a name, is an error at its line.
func readRuns(file string) ([]result.Run, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	var runs []result.Run
	for i, l := range bytes.Split(b, []byte("\n")) {
		if len(bytes.TrimSpace(l)) == 0 {
			continue
		}
		dec := json.NewDecoder(bytes.NewReader(l))
		dec.DisallowUnknownFields()
		var run result.Run
		if err := dec.Decode(&run); err != nil {
			return nil, fmt.Errorf("%s:%d: %v", file, i+1, err)
		}
		if run.Name == "" {
			return nil, fmt.Errorf("%s:%d: a run without a name", file, i+1)
		}
		runs = append(runs, run)
	}
	return runs, nil
}
