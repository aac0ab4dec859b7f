// Package pipeline runs graphs: it compiles a validated graph (loaded by
// pipeline/graphfile; Load and Parse here are shorthands for it) into one
// pipeline per worker (build.go), runs each worker's poll loop pinned to a
// core (worker.go; an idle worker sleeps until a packet arrives, sleep.go)
// and keeps the accounting of where time goes (stats.go), in graph order
// (order.go). CheckEnv (graphfile/check.go) is the validation pass forwarder check and Start share — the drivers'
// and elements' checks against the environment — and Warnings points out
// what a valid graph cannot do as written.
//
// pipeline is the runtime only: what observes it lives beside it —
// pipeline/statstable prints a Snapshot as a table, pipeline/livedot draws
// the graph with its counters, pipeline/statshttp serves snapshots over
// HTTP (JSON and Prometheus) — and imports it, never the other way round.
// pipeline imports the element and driver registries, never a concrete
// element or driver.
package pipeline
