package pipeline

import (
	"github.com/junction-dataplane/junction/elements"
	"github.com/junction-dataplane/junction/pipeline/graphfile"
)

// The graph file's loader lives in pipeline/graphfile; these names let
// callers that load and start a graph use one package.
type (
	Graph       = graphfile.Graph
	Device      = graphfile.Device
	Element     = graphfile.Element
	Link        = graphfile.Link
	Pos         = graphfile.Pos
	ConfigError = graphfile.ConfigError
	ErrorList   = graphfile.ErrorList
)

// Load reads and validates a graph file (graphfile.Load).
func Load(path string) (*Graph, error) { return graphfile.Load(path) }

// LoadFor loads a graph file for the router whose graph state s is
// (graphfile.LoadFor).
func LoadFor(path string, s *elements.GraphState) (*Graph, error) { return graphfile.LoadFor(path, s) }

// Parse validates a graph file's contents (graphfile.Parse).
func Parse(file string, data []byte) (*Graph, error) { return graphfile.Parse(file, data) }

// Warning is graphfile.Warning: something forwarder check points out in a
// valid graph.
type Warning = graphfile.Warning

// CheckEnv is graphfile.CheckEnv.
func CheckEnv(g *Graph, workers int) error { return graphfile.CheckEnv(g, workers) }

// CheckEnvWarn is graphfile.CheckEnvWarn.
func CheckEnvWarn(g *Graph, workers int) ([]Warning, error) {
	return graphfile.CheckEnvWarn(g, workers)
}

// Warnings is graphfile.Warnings.
func Warnings(g *Graph) []Warning { return graphfile.Warnings(g) }

// DecodeConfig is graphfile.DecodeConfig.
func DecodeConfig(t *elements.Type, values map[string]any) (any, error) {
	return graphfile.DecodeConfig(t, values)
}
