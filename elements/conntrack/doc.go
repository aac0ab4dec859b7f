// Package conntrack provides Conntrack, a per-worker connection tracker (TCP state machine, UDP and ICMP echo timeouts, bounded capacity with eviction of unassured flows first), and the flow table that DNAT, SNAT and FastTrack build on, with FastTrack's flow cache (flowcache.go) kept coherent by it.
package conntrack
