// Command forwarder runs, checks, draws and documents Junction graphs: `run`
// starts the pipelines (the embedded default graph when no file is given),
// `check` validates a graph file, `graph` prints it as Graphviz DOT (with
// -stats, a running forwarder's rates, ns/packet and drops drawn on it),
// `elements` prints the element manual, and `stats` reads a running
// forwarder's counters.
package main
