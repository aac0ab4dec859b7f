package main

import (
	"fmt"
	"io"

	"github.com/junction-dataplane/junction/pipeline"
	"github.com/junction-dataplane/junction/pipeline/statshttp"
	"github.com/junction-dataplane/junction/pipeline/statstable"
)

// statsCmd reads a running forwarder's stats endpoint.
func statsCmd(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("stats", stderr)
	addr := fs.String("addr", pipeline.DefaultStatsAddr, "the forwarder's stats endpoint")
	format := fs.String("format", "table", "table, json or prom")
	perWorker := fs.Bool("per-worker", false, "with -format table: each worker's rows under each element's totals")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageErrorf("unexpected arguments: %v", fs.Args())
	}
	switch *format {
	case "table":
		s, err := statshttp.Fetch(*addr)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "uptime %s\n", s.Uptime.Round(1e6))
		return statstable.Render(stdout, s, statstable.Options{PerWorker: *perWorker})
	case "json", "prom":
		path := "/stats"
		if *format == "prom" {
			path = "/metrics"
		}
		body, err := statshttp.FetchRaw(*addr, path)
		if err != nil {
			return err
		}
		_, err = stdout.Write(body)
		return err
	default:
		return usageErrorf("-format must be table, json or prom, got %q", *format)
	}
}
