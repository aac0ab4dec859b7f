package pipeline

import "github.com/junction-dataplane/junction/elements"

// State returns what the graph's elements share (elements.GraphState):
// one per Router, never shared with another graph's.
func (r *Router) State() *elements.GraphState { return r.state }
