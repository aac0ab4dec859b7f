package graphfile

import (
	"fmt"

	"github.com/junction-dataplane/junction/drivers"
	"github.com/junction-dataplane/junction/elements/offloadkey"
)

// checkOffload raises, before any device is opened, what building an
// element with an offload key (offloadkey.Namer) would: an entry
// naming no device of the graph, or a device without a fast path. infos
// are the devices their drivers checked; a device whose check failed
// (already reported) or whose driver has no check is not judged.
func checkOffload(g *Graph, infos map[string]drivers.Info) []error {
	var errs []error
	for _, e := range g.Elements {
		o, ok := e.Config.(offloadkey.Namer)
		if !ok || e.Type == nil {
			continue
		}
		for i, name := range o.OffloadDevices() {
			var err error
			if name == "" {
				continue
			}
			if g.Device(name) == nil {
				err = offloadkey.NoDevice("offload", i, name)
			} else if info, known := infos[name]; known && !info.FastPath {
				err = offloadkey.NoFastPath("offload", i, name)
			}
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: element %q (%s): %w", e.Pos, e.Name, e.Type.Name, err))
			}
		}
	}
	return errs
}
