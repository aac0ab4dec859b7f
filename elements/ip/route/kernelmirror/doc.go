// Package kernelmirror mirrors a kernel routing table into a route table
// (elements/ip/route): IPLookup's `source = "kernel"`. Start subscribes to
// the kernel's route events (read and decoded in batches by the
// package's own reader, events.go), dumps the table and applies the
// events, publishing a burst's changes as one version; a lost
// subscription is followed by a dump that applies only what differs
// (kernel.go; its state: one small entry per prefix, state.go). It is
// apart from the table so that the table imports no netlink: IPLookup
// (elements/ip) starts one per table whose source is the kernel.
package kernelmirror
