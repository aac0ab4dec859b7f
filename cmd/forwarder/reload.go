package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/junction-dataplane/junction/internal/control"
	"github.com/junction-dataplane/junction/pipeline"
)

// reloadCmd: forwarder reload [-control PATH] [-config FILE] [-dry-run]
// asks the running forwarder, over its control socket, to load FILE (by
// default the file it runs) and switch to it, or with -dry-run to say what
// would change; -dry-run -running FILE answers offline, comparing FILE
// with the -running one, without a forwarder.
func reloadCmd(args []string, stdout, stderr io.Writer) error {
	var dry bool
	var running, config string
	var rest []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		name, val, hasVal := strings.Cut(strings.TrimLeft(a, "-"), "=")
		switch {
		case a == "-dry-run" || a == "--dry-run":
			dry = true
			continue
		case strings.HasPrefix(a, "-") && (name == "running" || name == "config"):
			if !hasVal {
				if i+1 >= len(args) {
					fmt.Fprintf(stderr, "forwarder reload: flag needs an argument: -%s\nusage: forwarder %s\n", name, subUsage["reload"])
					return errUsage
				}
				i++
				val = args[i]
			}
			if name == "running" {
				running = val
			} else {
				config = val
			}
			continue
		}
		rest = append(rest, a)
	}
	if running != "" {
		// Offline: two files, no forwarder.
		if !dry {
			return errors.New("-running FILE compares two files offline: it needs -dry-run (a live reload asks the running forwarder)")
		}
		if config == "" {
			return errors.New("-dry-run -running FILE needs -config FILE: the new graph file")
		}
		defer withoutPlugins()() // offline: the files are compared, not run
		g2, err := pipeline.Load(config)
		if err != nil {
			return err
		}
		g1, err := loadGraph(running)
		if err != nil {
			return fmt.Errorf("-running: %w", err)
		}
		return pipeline.DiffGraphs(g1, g2).WriteText(stdout)
	}
	// Live: the socket of the forwarder running -config (or -control).
	if config != "" {
		rest = append(rest, "-config", config)
	}
	cl, extra, err := clientArgs("reload", rest, stderr)
	if err != nil {
		return err
	}
	if len(extra) > 0 {
		return cl.usage(fmt.Sprintf("unexpected arguments: %s", strings.Join(extra, " ")))
	}
	var sargs []string
	if config != "" {
		abs, err := filepath.Abs(config)
		if err != nil {
			return err
		}
		sargs = append(sargs, "-file", abs)
	}
	if dry {
		sargs = append(sargs, "-dry-run")
	}
	data, err := cl.call("reload", sargs)
	if err != nil {
		return err
	}
	if cl.format == "json" {
		return writeJSON(stdout, data)
	}
	var rep pipeline.ReloadReport
	if err := json.Unmarshal(data, &rep); err != nil {
		return fmt.Errorf("reload: the forwarder's answer: %v", err)
	}
	return rep.WriteText(stdout)
}

// reload is the control socket's "reload [-file FILE] [-dry-run]": the
// running router loads FILE (default: the file it was started with, or
// last reloaded from) and switches to it, or says what would change. A
// reload in progress (another client, SIGHUP) is waited for.
func (cs *ctlServer) reload(ctx context.Context, args []string) (any, error) {
	fs := argFlags("reload")
	file := fs.String("file", "", "the graph file (default: the one running)")
	dry := fs.Bool("dry-run", false, "validate and say what would change")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return nil, err
	}
	if len(pos) > 0 {
		return nil, control.Usagef("reload: unexpected arguments %q", strings.Join(pos, " "))
	}
	path := *file
	if path == "" {
		_, path, _ = cs.r.Generation()
		if path == defaultGraphName {
			return nil, errors.New("the forwarder runs the embedded default graph: give -config FILE")
		}
	}
	return cs.r.Reload(path, *dry)
}

// reloadOnHUP reloads the graph file whenever the process gets SIGHUP,
// until ctx ends, and logs the report or the located error. The file is
// the one running now (the last loaded: `forwarder reload -config F`
// switched the router to F, and re-reading the file it started with
// would silently switch it back); the embedded default graph has no file
// to re-read. path is the file run started with, "" for the embedded one.
func reloadOnHUP(ctx context.Context, r *pipeline.Router, path string, hup chan os.Signal, sd *sdNotifier, stdout, stderr io.Writer) {
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
				file := path
				if _, f, _ := r.Generation(); f != "" {
					file = f
				}
				if file == "" || file == defaultGraphName {
					fmt.Fprintln(stderr, "SIGHUP: the embedded default graph has no file to re-read; nothing changed")
					continue
				}
				// The service manager sees the reload begin and end
				// (systemctl reload, then status), failed or not.
				sd.startReload()
				rep, err := r.Reload(file, false)
				sd.reloaded(r, err)
				if err != nil {
					fmt.Fprintf(stderr, "SIGHUP: reload failed, the running graph is unchanged:\n  %s\n", indentLines(err.Error()))
					continue
				}
				rep.WriteText(stdout)
			}
		}
	}()
}
