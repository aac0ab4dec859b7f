package ip

import "github.com/junction-dataplane/junction/elements"

// A reload that keeps IPLookup (same name) with the same configuration
// keeps its route table as it is: shared by the old and the new graph's
// instances, not rebuilt (a million routes stay where they are), with the
// routes the kernel mirror (source = "kernel") and the control plane added
// since start, and the kernel and fast-path mirrors still running. The
// table lives until the last instance of either generation closes. With
// another configuration the table is built anew from it (and a kernel
// mirror started afresh), as at start, and the routes added live are
// applied again on top (livecarry.go). Validating the new configuration
// does not parse an unchanged routes_file again (route.LoadSet).

// keepTable returns mk, or, in a reload of an unchanged IPLookup, a
// constructor that returns the running table.
func keepTable(ctx *elements.Context, mk func() (any, error)) func() (any, error) {
	pv := ctx.Previous()
	if sh, ok := pv.Shared.(*sharedTable); ok && pv.SameConfig {
		return func() (any, error) { return sh, nil }
	}
	return mk
}
