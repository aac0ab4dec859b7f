package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/junction-dataplane/junction/pipeline"
)

// reloadCmd: forwarder reload -config FILE -dry-run -running FILE.
//
// The live reload of a running forwarder (and a dry run against what it
// runs) goes through the control socket, which calls
// pipeline.Router.Reload; until then a running forwarder reloads on SIGHUP,
// and this command answers the dry run offline, comparing the new file
// with the file the forwarder runs.
func reloadCmd(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("reload", stderr)
	config := fs.String("config", "", "the new graph file")
	dry := fs.Bool("dry-run", false, "validate the file and print what would change; change nothing")
	runningFile := fs.String("running", "", "the graph file the forwarder runs (offline dry run: what the new file is compared with)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	path, err := configArg(fs, *config)
	if err != nil {
		return err
	}
	if path == "" {
		return errors.New("-config FILE: the new graph file is required")
	}
	if !*dry {
		return errors.New("a live reload goes through the forwarder's control socket, which this build does not have: " +
			"send SIGHUP to the forwarder (kill -HUP PID) to reload the file it was started with, " +
			"or give -dry-run -running FILE to see what would change")
	}
	if *runningFile == "" {
		return errors.New("-dry-run without a control socket needs -running FILE: the graph file the forwarder runs")
	}
	g2, err := pipeline.Load(path)
	if err != nil {
		return err
	}
	g1, err := loadGraph(*runningFile)
	if err != nil {
		return fmt.Errorf("-running: %w", err)
	}
	return pipeline.DiffGraphs(g1, g2).WriteText(stdout)
}

// reloadOnHUP reloads the file r was started from whenever the process
// gets SIGHUP, until ctx ends, and logs the report or the located error.
// The embedded default graph has no file to re-read.
func reloadOnHUP(ctx context.Context, r *pipeline.Router, path string, hup chan os.Signal, stdout, stderr io.Writer) {
	own := hup == nil
	if own {
		hup = make(chan os.Signal, 1)
		signal.Notify(hup, syscall.SIGHUP)
	}
	go func() {
		if own {
			defer signal.Stop(hup)
		}
		for {
			select {
			case <-ctx.Done():
				return
			case <-r.Done():
				return
			case <-hup:
				if path == "" {
					fmt.Fprintln(stderr, "SIGHUP: the embedded default graph has no file to re-read; nothing changed")
					continue
				}
				rep, err := r.Reload(path, false)
				if err != nil {
					fmt.Fprintf(stderr, "SIGHUP: reload failed, the running graph is unchanged:\n  %s\n", indentLines(err.Error()))
					continue
				}
				rep.WriteText(stdout)
			}
		}
	}()
}
