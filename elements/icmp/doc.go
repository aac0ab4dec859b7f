// Package icmp provides ICMPPingResponder, which answers ICMP echo requests
// addressed to the router itself.
package icmp
