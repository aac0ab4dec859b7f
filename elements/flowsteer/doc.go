// Package flowsteer chooses the worker a packet belongs to: its symmetric
// flow hash, with replies from DNAT backends hashed as their original
// direction. The DNAT elements of a graph fill its Table; FromDevice reads
// it. Both find the graph's one Table through their Context (Of), so two
// graphs in one process never steer by each other's rules, and FromDevice
// needs nothing from the NAT elements.
package flowsteer
