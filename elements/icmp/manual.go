package icmp

import "github.com/junction-dataplane/junction/elements"

// The manual pages of this package's elements, beside the code as the
// drivers keep theirs (forwarder elements TYPE prints them).

// icmpPingResponderManual is ICMPPingResponder's manual page (forwarder elements ICMPPingResponder).
var icmpPingResponderManual = elements.Doc{
	Synopsis: "ICMPPingResponder(ADDRESS or DEVICE, ...)",
	Summary:  "answers ICMP echo requests addressed to the router's own addresses, in place",
	Ports: "input 0: IPv4 packets addressed to the router (L3 annotation at the IPv4 header), " +
		"normally those a Classifier picked by destination. output 0: the echo replies, " +
		"built in the request's buffer (addresses swapped, type 0, TTL reset, checksums " +
		"updated incrementally), with the next-hop annotation cleared: route them (IPLookup) " +
		"and resolve them (ARPQuerier) like any packet. output 1 (optional): packets for one " +
		"of our addresses that are not echo requests (other ICMP, UDP, TCP), e.g. for an " +
		"ICMPError(unreachable, port); unconnected, they are dropped and counted.",
	Keys: []elements.Key{
		{Name: "addresses", Type: "[]string", Variadic: true,
			Doc: `the router's IPv4 addresses ("10.1.0.1" or "10.1.0.1/24"); an inline word that ` +
				`is not an address is a device name, whose addresses key is used`},
		{Name: "devices", Type: "device",
			Doc: "devices whose addresses (their addresses key) are answered for"},
		{Name: "ttl", Type: "int", Default: "64", Doc: "TTL of the replies"},
		{Name: "device", Type: "device", Doc: "one more device whose addresses are answered for"},
	},
	Stats: `counter "replies"; drop reasons: "truncated" (no full IPv4+ICMP header, or total ` +
		`length beyond the frame), "not for us" (destination not one of the addresses), ` +
		`"fragment" (fragmented requests are not reassembled), "bad source" (a source no ` +
		`host can have: 0/8, loopback, multicast, broadcast, or our own), "bad checksum" ` +
		`(ICMP checksum), and on output 1 when it is unconnected "unconnected output 1".`,
	Example: `"loc[0] -> ICMPPingResponder(lan, wan) -> rt"`,
	SeeAlso: "ICMPError, ARPResponder, IPLookup",
	Text: "The request's payload, identifier and sequence are returned unchanged, as RFC 792 " +
		"asks; IP options are kept. The ICMP checksum is verified once (echo requests are " +
		"rare and small) and then updated for the type change (RFC 1624), the IP checksum " +
		"for the TTL change.",
}

// icmP6PingResponderManual is ICMP6PingResponder's manual page (forwarder elements ICMP6PingResponder).
var icmP6PingResponderManual = elements.Doc{
	Synopsis: "ICMP6PingResponder(ADDRESS or DEVICE, ...)",
	Summary:  "answers ICMPv6 echo requests addressed to the router's own IPv6 addresses, in place",
	Ports: "input 0: IPv6 packets addressed to the router (L3 annotation at the IPv6 header). " +
		"output 0: the echo replies (RFC 4443 4.2), built in the request's buffer (addresses " +
		"swapped, type 129, hop limit reset, checksum updated incrementally), next-hop annotation " +
		"cleared: route them. output 1 (optional): packets for one of our addresses that are not " +
		"echo requests (UDP, TCP, other ICMPv6), e.g. for an ICMP6Error(unreachable, port); " +
		"unconnected, they are dropped and counted. output 2 (optional): packets for one of our " +
		"addresses that carry a type-0 routing header with segments left, which RFC 5095 " +
		"deprecates: never processed, answered with a parameter problem pointing at the routing " +
		"type (connect an ICMP6Error(auto, parameterproblem, header, 64, 0, routing)); " +
		"unconnected, they are dropped and counted.",
	Keys: []elements.Key{
		{Name: "addresses", Type: "[]string", Variadic: true,
			Doc: `the router's IPv6 addresses; an inline word that is not an address is a device name`},
		{Name: "devices", Type: "device", Doc: "devices whose IPv6 addresses (their addresses key) are answered for"},
		{Name: "hoplimit", Type: "int", Default: "64", Doc: "hop limit of the replies"},
	},
	Stats: `counter "replies"; consumption reason "multicast" (packets to a multicast group, ` +
		`such as the MLD reports and router solicitations NDPResponder passes on, and echo ` +
		`requests to a group: not answered, by design; not drops); drop reasons: "truncated" ` +
		`(no full IPv6+ICMPv6 header, or payload length beyond the frame), "not for us" (a ` +
		`unicast destination not one of the addresses), "bad source" (unspecified, multicast, loopback or ` +
		`our own), "bad checksum", "extension headers" (echo requests behind extension headers ` +
		`are not answered), "unconnected output 1" and "unconnected output 2"; counter "routing header type 0" ` +
		`(packets sent to output 2).`,
	Example: `"loc6[0] -> ICMP6PingResponder(lan, wan) -> rt"`,
	SeeAlso: "ICMPPingResponder, ICMP6Error, NDPResponder",
	Text: "Identifier, sequence and data are returned unchanged. Swapping the addresses leaves the " +
		"pseudo-header sum unchanged, so the checksum is verified once and updated for the type " +
		"change only (RFC 1624). RFC 5095: a packet for the router with a type-0 routing header " +
		"whose segments left is not zero is neither answered nor passed on as another packet for " +
		"us: it goes to output 2, for the parameter problem (code 0) the RFC asks for; with " +
		"segments left zero the routing header is ignored, as the RFC says.",
}
