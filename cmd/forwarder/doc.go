// Command forwarder runs, checks, draws and documents Junction graphs: `run`
// starts the pipelines (the embedded default graph when no file is given),
// `check` validates a graph file, `graph` prints it as Graphviz DOT (with
// -stats ADDR, or -control PATH or -live over the control socket, a
// running forwarder's rates, ns/packet and drops drawn on it),
// `elements` prints the element manual, and `stats` reads a running
// forwarder's counters.
//
// A running forwarder serves a control socket (internal/control; default
// /run/junction/<config base name>.sock, `run -control PATH|off`; mode
// 0600, and only root or the forwarder's uid are answered, checked with
// SO_PEERCRED). The client commands talk to it, each with -control PATH
// (or -config FILE to name the default socket) and -format table|json:
//
//	forwarder show flows [-n N] [-count] [FILTER]   Conntrack entries, IPv4 then IPv6; FILTER in Classifier's syntax, on the original tuple
//	forwarder show routes [-element NAME] [ADDR|PREFIX]  an IPLookup's running table, or the longest match
//	forwarder show neighbors [-element NAME]        ARPQuerier tables and NDPQuerier caches (RFC 4861 states)
//	forwarder show interfaces [DEV...]              per device, per RX queue (drivers.QueueStater: afxdp, afpacket) and per worker:
//	                                                packets, bytes, drops by reason (kernel's too), 1 s and 10 s rates
//	forwarder show runtime [-workers]               the exit table live (pipeline/statstable), graph generation
//	forwarder show errors [-workers] [-all]         drop reasons in graph order (every counter with -all)
//	forwarder clear counters                        show counts from now (a baseline; the workers' counters are untouched)
//	forwarder route add|replace PREFIX [via NH]... out PORT|DEVICE... [-element NAME]
//	forwarder route del PREFIX [-element NAME]
//	forwarder route reload [-element NAME]          re-read routes_file
//	forwarder reload [-config FILE] [-dry-run]      reload the whole graph (SIGHUP reloads the file run was given)
//	forwarder trace [-n N] [-timeout D] [FILTER]    the next N matching packets: headers, element path, ports, drop reason
//	forwarder capture -element NAME [-port P] [-n N] [-timeout D] -w FILE.pcap [FILTER]
//
// The socket also answers "snapshot" (ctlsnapshot.go): every counter as
// the pipeline.Snapshot JSON the stats endpoint serves at /stats; `forwarder
// graph -control PATH` (or -live, the default socket of -config) draws a
// running graph with it, where no stats endpoint is open.
//
// The server parses the arguments (control.go, show.go, show_queues.go,
// route.go, trace.go, reload.go): malformed input is a *control.UsageError, one line, exit
// status 2; other failures exit 1. Further commands register on the same
// server with control.Server.Handle.
package main
