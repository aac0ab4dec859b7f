// Package fpmirror mirrors a route table (elements/ip/route) into a
// driver's in-kernel fast path (drivers.FastPathTable, an IPLookup's
// `offload` devices): a walk of the table at start, then, every
// offloadInterval, the prefixes the table's journal says changed, so a
// route change costs what it changes. A blackhole, unreachable or
// prohibit route, an ECMP route or one by a port without a fast-path
// device is held there as "never forward here", so that its packets take
// the graph. It is apart from the table so that the table imports no
// driver: IPLookup (elements/ip) starts one per offloaded table.
package fpmirror
