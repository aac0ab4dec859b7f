package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/junction-dataplane/junction/internal/control"
	"github.com/junction-dataplane/junction/pipeline"
)

// The control socket's "snapshot" command: every counter of the running
// graph as a pipeline.Snapshot, the JSON the stats endpoint serves at
// /stats, so that `forwarder graph -control` draws the counters of a
// forwarder run without a stats endpoint. The counters are the workers'
// own, not less a `clear counters` baseline: rates are taken from the
// difference of two snapshots.

func (cs *ctlServer) snapshot(_ context.Context, args []string) (any, error) {
	if len(args) > 0 {
		return nil, control.Usagef("snapshot takes no arguments, got %q", args)
	}
	return cs.r.Snapshot(), nil
}

// controlSnapshot reads a running forwarder's snapshot over its control
// socket at path.
func controlSnapshot(path string) (*pipeline.Snapshot, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	data, err := control.Call(ctx, path, "snapshot", nil)
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("control socket %s: no answer within 5 s", path)
		}
		if strings.HasPrefix(err.Error(), "no forwarder at") {
			err = fmt.Errorf("%w%s", err, socketsHint())
		}
		return nil, err
	}
	s := &pipeline.Snapshot{}
	if err := json.Unmarshal(data, s); err != nil {
		return nil, fmt.Errorf("control socket %s: snapshot: %w", path, err)
	}
	return s, nil
}
