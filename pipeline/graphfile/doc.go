// Package graphfile loads a graph file: it parses the TOML (config.go), the
// link syntax (links.go), decodes each element's and device's keys into its
// config struct (decode.go), resolves names and validates the graph
// (validate.go) within the limits of limits.go, and returns a Graph, the
// value the runtime (package pipeline) builds pipelines from. Every error
// names the file, the line, the element and the key.
//
// graphfile imports the element and driver registries, never a concrete
// element or driver, and nothing of the runtime.
package graphfile
