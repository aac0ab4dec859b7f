// Package drvtest holds what the afxdp and afpacket driver tests share: a
// veth pair in fresh namespaces, test frames that carry a marker and a
// sequence number, a receive loop over a drivers.Device, and the checks
// both drivers run (per-queue counters, frames too long to send, policing
// of traffic for the router).
package drvtest
