// Package packet holds Junction's packet buffers, batches, per-worker buffer
// pools, zero-allocation header views (Ethernet, ARP, IPv4, IPv6, UDP, TCP,
// ICMPv4), Internet checksums (full, and incremental per RFC 1624) and a
// symmetric flow hash that steers both directions of a flow to one worker.
//
// It is the leaf of the module: every other package imports it and it imports
// nothing of Junction's.
//
// Ownership: a *Packet belongs to exactly one place at a time. It leaves the
// graph through a transmit (the driver frees it), a drop (Free, counted by the
// element with a reason) or by being held (e.g. an ARP queue). Pool.Outstanding
// lets tests check that every buffer came back.
package packet
