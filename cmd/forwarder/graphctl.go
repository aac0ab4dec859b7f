package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/junction-dataplane/junction/internal/control"
	"github.com/junction-dataplane/junction/pipeline"
	"github.com/junction-dataplane/junction/pipeline/livedot"
)

// The control socket's "graph [-interval D] [-source NAME]": the running
// graph drawn by the forwarder itself (livedot.DOT) with its
// counters over the interval, for `forwarder graph -control` without
// -config. The graph is the one the router runs, not a file read again:
// the file may have changed since it was loaded, be relative to the
// forwarder's directory, or be the embedded default; a Plugin's outputs
// are the ones its program declared.

// graphResult is the answer: which graph, and its DOT.
type graphResult struct {
	File       string `json:"file"`
	Generation uint64 `json:"generation"`
	DOT        string `json:"dot"`
}

// maxGraphInterval bounds the interval a client may ask the server to
// sample over (the call holds one of the socket's slots meanwhile).
const maxGraphInterval = time.Minute

func (cs *ctlServer) graphDOT(ctx context.Context, args []string) (any, error) {
	fs := argFlags("graph")
	interval := fs.Duration("interval", time.Second, "the interval the rates are measured over (0: averages since start)")
	source := fs.String("source", "", "where the client reached the forwarder, for the caption")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return nil, err
	}
	if len(pos) > 0 {
		return nil, control.Usagef("graph: unexpected arguments %q", strings.Join(pos, " "))
	}
	if *interval < 0 || *interval > maxGraphInterval {
		return nil, control.Usagef("graph: -interval %v: want 0..%v", *interval, maxGraphInterval)
	}
	var before *pipeline.Snapshot
	if *interval > 0 {
		before = cs.r.Snapshot()
		t := time.NewTimer(*interval)
		defer t.Stop()
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-t.C:
		}
	}
	after := cs.r.Snapshot()
	gen, file, _ := cs.r.Generation()
	g := cs.r.Graph()
	gen2, _, _ := cs.r.Generation()
	if before != nil && before.Graph.Generation != gen || after.Graph.Generation != gen || gen2 != gen {
		return nil, errors.New("the graph was reloaded while it was sampled: ask again")
	}
	st := &livedot.Stats{Before: before, After: after, Source: *source}
	return graphResult{File: file, Generation: gen, DOT: livedot.DOT(g, st)}, nil
}

// controlGraph asks the forwarder at sock to draw the graph it runs with
// its counters over interval.
func controlGraph(sock string, interval time.Duration) (*graphResult, error) {
	ctx, cancel := context.WithTimeout(context.Background(), interval+10*time.Second)
	defer cancel()
	data, err := control.Call(ctx, sock, "graph", []string{"-interval", interval.String(), "-source", sock})
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("control socket %s: no answer within %s", sock, interval+10*time.Second)
		}
		if strings.HasPrefix(err.Error(), "no forwarder at") {
			err = fmt.Errorf("%w%s", err, socketsHint())
		}
		if strings.HasPrefix(err.Error(), `unknown command "graph"`) {
			err = errors.New("the forwarder at " + sock + " cannot draw its graph (an older version): give -config FILE, the file it runs")
		}
		return nil, err
	}
	var res graphResult
	if err := json.Unmarshal(data, &res); err != nil {
		return nil, fmt.Errorf("control socket %s: graph: %w", sock, err)
	}
	return &res, nil
}
