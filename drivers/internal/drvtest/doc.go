// Package drvtest holds what the afxdp and afpacket driver tests share: a
// veth pair in fresh namespaces, test frames that carry a marker and a
// sequence number, and a receive loop over a drivers.Device.
package drvtest
