// Package ip provides the IP router elements: CheckIPHeader, CheckIP6Header, DecTTL, DecHopLimit, ICMPError and IPLookup (IPv4 and IPv6 longest-prefix match with ECMP, live updates and a kernel route mirror).
package ip
