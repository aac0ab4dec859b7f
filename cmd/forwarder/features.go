package main

import (
	"encoding/json"
	"io"

	"github.com/junction-dataplane/junction/drivers/kfeature"
	"github.com/junction-dataplane/junction/pipeline/statstable"
)

// featuresCmd: forwarder features [-format table|json]. It probes every
// kernel feature the drivers use (kfeature) and prints whether this
// kernel has it, what Junction uses it for and what Junction does
// without it, in the spirit of bpftool feature probe. Probing loads
// small BPF programs and maps: as another user than root most features
// read "unknown".
func featuresCmd(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("features", stderr)
	format := fs.String("format", "table", "table or json")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageErrorf("features takes no arguments")
	}
	if *format != "table" && *format != "json" {
		return usageErrorf("-format %q: want table or json", *format)
	}
	if err := kfeature.CheckEmulation(); err != nil {
		return err
	}
	rows := kfeature.Report()
	if *format == "json" {
		e := json.NewEncoder(stdout)
		e.SetIndent("", "  ")
		return e.Encode(rows)
	}
	t := [][]string{{"FEATURE", "HAVE", "SINCE", "USED FOR", "WITHOUT IT"}}
	for _, r := range rows {
		have := string(r.Status)
		if r.Status == kfeature.Unknown && r.Detail != "" {
			have += " (" + r.Detail + ")"
		}
		t = append(t, []string{string(r.Name), have, r.Since, r.Uses, r.Without})
	}
	return statstable.Write(stdout, []bool{false, false, false, false, false}, t)
}
