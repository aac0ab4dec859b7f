// Package ip provides the IP router elements: CheckIPHeader, CheckIP6Header, DecTTL, DecHopLimit, ICMPError and IPLookup (IPv4 and IPv6 longest-prefix match with ECMP, live updates and a kernel route mirror).
//
// IPLookup reads a route table that any number of lookups share: a graph
// file's [tables.NAME] section (configured by package tables) or the
// element's own routes. shared.go keeps a router's running tables, one
// route.Table per table whatever the number of readers, across reloads;
// live.go is the control plane's view (forwarder route, show routes);
// livecarry.go carries routes added live over a reload that rebuilds a
// table.
package ip
