// Package elements defines what an element is — the one-method Element
// contract over batches, its optional abilities, its documentation — and the
// registry of element types. The standard elements live in sub-packages, one
// per family (elements/ip, elements/classifier, ...); elements/all imports
// them all, and a custom build imports the families it wants plus its own.
//
// Writing an element: declare a config struct with toml tags (its fields are
// the element's keys), a constructor that builds one instance for one worker,
// and a Doc; register them in init(). The instance's Push processes a whole
// batch: for each packet it decides an output (Output.Push), a drop
// (Stats.Drop with a registered reason: a loss), a consumption (Stats.Consume
// with a Consumption reason: freed by design, as Discard does) or holds it. No allocation, lock, fmt
// or interface call per packet: one call per batch is the budget.
//
// State beyond one instance goes through the Context, never a package
// variable: Context.Shared for what every worker's instance of one element
// shares (IPLookup's route table), GraphValue/GraphShared for what the
// elements of one graph share (the DNAT steering table, the fast-path
// generation), WorkerValue/WorkerShared for what one worker's elements
// share (its Conntrack flow table, read by FastTrack). The pipeline gives
// each graph its own GraphState, so two graphs in one process, or a
// reloaded graph beside the old one, never see each other's state.
//
// A config may also say what it needs from the graph around it, for
// forwarder check: EnvChecker (what it needs of its devices, checked before
// any is opened: ARPQuerier's MAC) and Upstream (a type that must come
// before it on every path: Conntrack before SNAT). SuggestType turns
// another tool's element name into Junction's ("Drop" → "Discard").
//
// Reloads: an element whose state should survive a reload of the graph
// (same name and type in the new graph) implements StateTaker and sets
// Type.TakesState; carry.go states the contract (what a constructor may
// touch while the old graph runs, when TakeState is called, what it must
// leave to the old instance's Close).
package elements
