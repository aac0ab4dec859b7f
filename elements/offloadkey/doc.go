// Package offloadkey resolves the offload key of the elements that program
// a driver's in-kernel fast path (IPLookup's routes, FastTrack's flows):
// one device name per output port, each a device with a fast path
// (drivers.FastPath), all sharing one table.
//
// It is apart from elements.Context on purpose: the Context gives elements
// the graph's devices generically (Context.Devices); what an XDP offload
// needs of them is this package's business, used only by the elements
// that offload and by the graph-file check that runs before any device is
// opened (Namer).
package offloadkey
