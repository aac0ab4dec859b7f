package elements

// ReloadPlanner is an element whose running state holds what its
// configuration does not say, and which a reload that builds the element
// anew from its new configuration would otherwise lose without a word
// (IPLookup: the routes added through the control socket). The pipeline
// asks the running instance (worker 0's), before anything of the new
// graph is built, dry runs included, and lists its lines in the reload
// report: what the new graph keeps of that state and what it drops, and
// why. The element's constructor must then do what the plan said
// (Context.Previous gives it the running state).
type ReloadPlanner interface {
	// ReloadPlan says what a reload to next (the element's new
	// configuration, validated) does with the state, one line each.
	// rebuilt: the element's shared state is built anew from next (its
	// configuration changed, or a device it names is reopened) instead
	// of kept as it is (Previous.SameConfig false).
	ReloadPlan(next any, rebuilt bool) []string
}
