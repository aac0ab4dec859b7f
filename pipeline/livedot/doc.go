// Package livedot draws a graph for reading, with a running router's
// counters on it: DOT is the Graphviz text of `forwarder graph -stats`
// and of the control socket's live graph, each element with its rate,
// self time and drops, each link with the rate derived from them. It is
// an observer of the runtime, not part of it: the pipeline package takes
// the snapshots, this one draws two of them.
package livedot
