package pipeline

import (
	"reflect"

	"github.com/junction-dataplane/junction/elements"
)

// reloadPlans asks every element the reload keeps (same name and type in
// g2 as in g1) whose running instance holds state its configuration does
// not say (elements.ReloadPlanner: IPLookup's routes added live) what the
// reload does with it, and returns the lines for the report, each naming
// its element. Dry runs ask too: a dry run says what the reload would
// drop.
func (r *Router) reloadPlans(g1, g2 *Graph) []string {
	if len(r.workers) == 0 {
		return nil
	}
	reopened := reopenedDevices(g1, g2)
	oldIdx := make(map[string]int, len(g1.Elements))
	for i, e := range g1.Elements {
		oldIdx[e.Name] = i
	}
	var out []string
	for _, e := range g2.Elements {
		j, ok := oldIdx[e.Name]
		if !ok || !sameType(g1.Elements[j], e) || j >= len(r.workers[0].inst) {
			continue
		}
		p, ok := r.workers[0].inst[j].(elements.ReloadPlanner)
		if !ok {
			continue
		}
		for _, l := range p.ReloadPlan(e.Config, !sameConfig(g1.Elements[j], e, reopened)) {
			out = append(out, e.Name+" ("+typeName(e)+"): "+l)
		}
	}
	return out
}

// reopenedDevices are the devices of both graphs that the reload closes
// and opens again (same name, another configuration).
func reopenedDevices(g1, g2 *Graph) map[string]bool {
	reopened := map[string]bool{}
	for _, d := range g2.Devices {
		if od := g1.Device(d.Name); od != nil && !sameDevice(od, d) {
			reopened[d.Name] = true
		}
	}
	return reopened
}

// sameConfig reports whether element e of the new graph may keep what
// the running o shares (elements.Previous.SameConfig): the same decoded
// configuration, naming no device the reload reopens (what it shares
// may hold the old device: a fast-path mirror).
func sameConfig(o, e *Element, reopened map[string]bool) bool {
	return reflect.DeepEqual(o.Config, e.Config) && !mentions(reflect.ValueOf(e.Config), reopened, 0)
}

// ExclusiveOfReload runs f while no reload runs (a reload waits for it,
// and it for a reload), for control-plane changes of state a reload
// carries over: a route added live while a reload is building the new
// table from the running one would otherwise be in neither plan nor new
// table.
func (r *Router) ExclusiveOfReload(f func() error) error {
	r.reloadMu.Lock()
	defer r.reloadMu.Unlock()
	return f()
}
