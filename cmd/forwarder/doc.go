// Command forwarder runs, checks, draws and documents Junction graphs: `run`
// starts the pipelines (the embedded default graph when no file is given),
// `check` validates a graph file, `graph` prints it as Graphviz DOT,
// `elements` prints the element manual, and `stats` reads a running
// forwarder's counters.
package main
