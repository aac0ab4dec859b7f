// Package cttest builds test frames for the stateful elements (Conntrack, DNAT, SNAT, FastTrack) with gopacket, so that their checksums come from an independent implementation.
package cttest
