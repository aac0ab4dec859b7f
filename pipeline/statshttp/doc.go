// Package statshttp serves a running router's accounting over HTTP: GET
// /stats is pipeline.Snapshot as JSON, GET /metrics the same in the
// Prometheus text format (WritePrometheus). It is an
// observer of the runtime, not part of it: the pipeline package runs
// graphs and takes snapshots; this one publishes them, bounded so that no
// number of clients can take the workers' CPU time (see the constants),
// and fetches them for `forwarder stats`.
package statshttp
