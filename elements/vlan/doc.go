// Package vlan provides VLANDecap and VLANEncap, which take an 802.1Q
// (or 802.1ad) tag off a frame and put one on, as Click's elements of the
// same names do.
//
// A VLAN sub-interface is a pattern of the graph, not a device: the
// trunk's FromDevice feeds a Classifier that sorts frames by VLAN id
// ("vlan 10"), each VLAN's branch starts with a VLANDecap, and each
// VLAN's way out ends with VLANEncap(ID) before the trunk's ToDevice.
// Between the two, the frame is an ordinary untagged one, so every other
// element (ARP, Conntrack, NAT, the policers; FastTrack with its hits for
// a VLAN sent through that VLAN's VLANEncap) works on it unchanged, one
// instance per VLAN where it holds per-link state (an ARPQuerier per
// VLAN: its table is that VLAN's neighbours). A device of
// its own per VLAN would have needed the drivers to share one port's
// queues between several devices and demultiplex in the driver, which
// only moves the Classifier into a place the graph cannot see or count;
// as elements, a tagged frame that belongs to no VLAN of the graph is a
// counted drop like any other unclassified frame, and docs/vlan.md shows
// the whole pattern (configs/site-router.toml runs it).
//
// Both elements move the 12 address bytes by 4 in place (the frame's
// headroom takes the tag on encapsulation): no copy of the payload, no
// allocation, one pass over the batch.
package vlan
