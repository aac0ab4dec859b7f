// Package nat provides DNAT and SNAT: destination and source address/port translation of tracked flows, with incremental L3 and L4 checksum updates, translation of ICMP errors about translated flows, and per-worker SNAT port allocation that keeps both directions of a flow on one worker.
package nat
