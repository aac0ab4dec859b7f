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
// (Stats.Drop with a registered reason) or holds it. No allocation, lock, fmt
// or interface call per packet: one call per batch is the budget.
//
// A config may also say what it needs from the graph around it, for
// forwarder check: EnvChecker (what it needs of its devices, checked before
// any is opened: ARPQuerier's MAC) and Upstream (a type that must come
// before it on every path: Conntrack before SNAT). SuggestType turns
// another tool's element name into Junction's ("Drop" → "Discard").
package elements
