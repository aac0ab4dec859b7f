// Package statstable prints a router's accounting as operators read it
// (VPP's `show runtime`): Render lays out a pipeline.Snapshot as a table
// of elements, their counters, the workers' time, the devices' counters
// and the totals; Write lays out any rows the same way, for the tables
// printed beside it; RateLine is the line `forwarder run` prints every
// interval, FormatRate a rate as all of them write it. It is an observer
// of the runtime, not part of it: the pipeline package takes snapshots,
// this one prints them for `forwarder run` (its exit table), `forwarder
// stats`, `show` and `bench`.
package statstable
