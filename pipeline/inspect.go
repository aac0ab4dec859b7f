package pipeline

import (
	"github.com/junction-dataplane/junction/elements"
)

// What a control plane (the forwarder's control socket) reads from a
// running router: the element instances, to ask them for their state
// through the optional interfaces they implement (elements/inspect.go),
// the queues each worker serves, and the tracer.

// Instances returns element i's instance on every worker, by worker.
// Callers only use the read-only, concurrency-safe methods the instances
// document (a FlowLister, a RouteTabler, a NeighborLister).
func (r *Router) Instances(i int) []elements.Element {
	out := make([]elements.Element, 0, len(r.workers))
	for _, w := range r.workers {
		if i >= 0 && i < len(w.inst) {
			out = append(out, w.inst[i])
		}
	}
	return out
}

// ElementIndex returns the index of the element called name, or -1.
func (r *Router) ElementIndex(name string) int {
	for i, e := range r.g.Elements {
		if e.Name == name {
			return i
		}
	}
	return -1
}

// Tracer is the router's trace switch (forwarder trace and capture).
func (r *Router) Tracer() *elements.Tracer { return &r.tracer }

// WorkerQueues lists, per worker, the RX queues it polls of device dev
// (graph device index).
func (r *Router) WorkerQueues(dev int) [][]int {
	if dev < 0 || dev >= len(r.g.Devices) {
		return nil
	}
	ds := &deviceSet{g: r.g, devs: r.devices, workers: len(r.workers)}
	out := make([][]int, len(r.workers))
	for w := range r.workers {
		out[w] = ds.Queues(r.g.Devices[dev].Name, w)
	}
	return out
}
