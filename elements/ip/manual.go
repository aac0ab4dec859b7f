package ip

import "github.com/junction-dataplane/junction/elements"

// The manual pages of this package's elements, beside the code as the
// drivers keep theirs (forwarder elements TYPE prints them).

// checkIPHeaderManual is CheckIPHeader's manual page (forwarder elements CheckIPHeader).
var checkIPHeaderManual = elements.Doc{
	Synopsis: "CheckIPHeader([badsrc], [checksum], [forward_only], [devices], [source_route])",
	Summary:  "checks IPv4 headers; bad packets go to output 1 or are dropped",
	Ports: "input 0: frames with an IPv4 header at the L3 offset.\n" +
		"output 0: packets that pass every check, trimmed to the IP total length.\n" +
		"output 1 (optional): packets that fail a check. Unconnected, they are dropped and counted as \"unconnected output 1\".",
	Keys: []elements.Key{
		{Name: "badsrc", Type: "[]string", Doc: "extra source prefixes (CIDR) to treat as martian, besides RFC 1812's"},
		{Name: "checksum", Type: "bool", Default: "true", Doc: "verify the header checksum; false trusts it (e.g. a NIC checked it)"},
		{Name: "forward_only", Type: "bool", Default: "true", Doc: "the packets are to be forwarded: destinations a router never forwards " +
			"fail (limited broadcast, multicast, 0.0.0.0/8, 127.0.0.0/8, 240.0.0.0/4, and the directed broadcasts of devices). " +
			"false checks only the header and the source, for a CheckIPHeader in front of a path that delivers broadcast or " +
			"multicast to the router itself (DHCP, a routing protocol)"},
		{Name: "devices", Type: "device", Doc: "the router's devices: with forward_only, a packet to the directed broadcast " +
			"address of one of their IPv4 subnets (their addresses key; not /31 or /32) fails. Default: every device of " +
			"the graph (directed broadcast forwarding is off, RFC 2644); name some to check only theirs"},
		{Name: "source_route", Type: "bool", Default: "false", Doc: "let packets with a loose or strict source route " +
			"option (LSRR 131, SSRR 137) pass; by default they fail, as RFC 7126 advises (a sender choosing the path " +
			"around filters; Linux's accept_source_route = 0)"},
	},
	Stats: "One counter per failed check, counted whether the packet goes to output 1 or is dropped: " +
		"\"too short\" (no 20 bytes at L3), \"bad version\" (not 4), \"bad ihl\" (IHL < 5), " +
		"\"ihl beyond frame\", \"bad total length\" (total length < header length), " +
		"\"total length beyond frame\", \"bad checksum\", \"bad options\" (an option whose length byte is missing, " +
		"below 2 or runs past the header), \"source route\" (an LSRR or SSRR option, unless source_route), " +
		"\"oversized fragment\" (fragment offset*8 + the bytes after the header > 65,535: it could only reassemble " +
		"into a packet larger than IPv4 allows, the \"ping of death\"), \"martian source\"; with forward_only, by destination: " +
		"\"limited broadcast\" (255.255.255.255), \"multicast destination\" (224.0.0.0/4), " +
		"\"martian destination\" (0.0.0.0/8, 127.0.0.0/8, 240.0.0.0/4 but the limited broadcast), " +
		"\"directed broadcast\" (the broadcast address of a subnet of devices). " +
		"Drops are counted under \"unconnected output 1\" when output 1 is unconnected. " +
		"Counters, not verdicts: \"record route option\", \"timestamp option\" (packets carrying one, which " +
		"pass with it unchanged; see below).",
	Example: "[elements.chk]\ntype = \"CheckIPHeader\"\nbadsrc = [\"192.0.2.0/24\"]\n\n" +
		"[graph]\nlinks = [\"cls[1] -> chk -> DecTTL -> rt\", \"chk[1] -> Print(bad) -> Discard\"]",
	SeeAlso: "DecTTL, IPLookup",
	Text: "Checks, in order: the frame holds 20 bytes at the L3 offset; version is 4; IHL >= 5; " +
		"the header (IHL*4 bytes) fits in the frame; total length >= header length; total length " +
		"fits in the frame (Ethernet padding after it is fine, and is trimmed away); the header " +
		"checksum verifies (unless checksum = false); the options, if any (IHL > 5), are well formed " +
		"(EOL ends them, NOP is one byte, every other option has a length of at least 2 that stays in " +
		"the header) and hold no source route (LSRR, SSRR; unless source_route = true); a fragment " +
		"(offset > 0) ends at most at byte 65,535; the source is not martian (RFC 1812 5.3.7: " +
		"0.0.0.0/8, 127.0.0.0/8, 224.0.0.0/4 multicast, 240.0.0.0/4 reserved including " +
		"255.255.255.255, plus the badsrc prefixes); with forward_only (the default), the destination " +
		"is one a router may forward (RFC 1812 5.3.7, 4.2.2.11 and 5.3.5: not the limited broadcast " +
		"255.255.255.255, which is for the router itself and never forwarded; not multicast, which a " +
		"unicast router does not route; not 0.0.0.0/8, 127.0.0.0/8 or 240.0.0.0/4; and not the directed " +
		"broadcast of a subnet of the graph's devices (or of those named), whose forwarding RFC 2644 turns off by default). " +
		"Put packets the router itself receives by broadcast or multicast (DHCP, RIP, OSPF) on their own " +
		"path before the CheckIPHeader of the forwarding path, or give that path's CheckIPHeader " +
		"forward_only = false. Elements after CheckIPHeader may trust the " +
		"header's length fields. Other options (router alert...) pass and are not interpreted. " +
		"Record route (7) and timestamp (68) pass unchanged, counted: RFC 791 and RFC 1812 5.3.13 " +
		"describe a router entering its address or a timestamp into them; Junction does not, " +
		"deliberately: it would cost a header rewrite, a checksum update and a per-packet choice of " +
		"address on the forwarding path for options that networks filter (RFC 7126 4.3 and 4.8 " +
		"describe routers that drop them, ignore them or process them, the choice documented). " +
		"A packet carrying one is forwarded as if the router were not on the recorded path; the " +
		"counters show how many were.",
}

// checkMTUManual is CheckMTU's manual page (forwarder elements CheckMTU).
var checkMTUManual = elements.Doc{
	Synopsis: "CheckMTU(mtu)",
	Summary:  "sends packets longer than the egress MTU to output 1 (for ICMP6Error toobig, ICMPError needfrag)",
	Ports: "input 0: IP packets about to leave by a link (L3 annotation at the IP header).\n" +
		"output 0: packets whose IP length (frame length from L3) is at most mtu.\n" +
		"output 1 (optional): longer ones, unchanged: IPv6 packets, and IPv4 packets with DF set. " +
		"Connect it to ICMP6Error(src, toobig, 0, 64, MTU) for IPv6 (a router never fragments IPv6, " +
		"RFC 8200 section 5) or ICMPError(src, unreachable, needfrag, 64, MTU) for IPv4 (RFC 1191); " +
		"unconnected, they are dropped and counted as \"unconnected output 1\". Longer IPv4 packets " +
		"without DF are dropped and counted as \"too big, not DF\": Junction does not fragment.",
	Keys: []elements.Key{
		{Name: "mtu", Type: "int", Required: true, Doc: "the egress link's MTU in bytes (the IP packet, without Ethernet)"},
	},
	Stats:   "counter \"too big\": packets sent to output 1; drop \"too big, not DF\": longer IPv4 packets without DF.",
	Example: `"rt[3] -> mtu :: CheckMTU(1400) -> NDPQuerier(wan) -> ToDevice(wan)", "mtu[1] -> ICMP6Error(2001:db8:2::1, toobig, 0, 64, 1400) -> rt"`,
	SeeAlso: "ICMP6Error, ICMPError",
	Text: "A packet bigger than the link takes is never a silent loss: the sender learns the MTU " +
		"from the packet-too-big or fragmentation-needed message (path MTU discovery, RFC 8201 and " +
		"RFC 1191) and resends smaller. The mtu must be the egress interface's: a frame longer than " +
		"the interface takes that gets past CheckMTU is dropped by the afxdp and afpacket drivers " +
		"and counted as their tx_dropped_too_long.",
}

// decTTLManual is DecTTL's manual page (forwarder elements DecTTL).
var decTTLManual = elements.Doc{
	Synopsis: "DecTTL",
	Summary:  "decrements the IPv4 TTL with an incremental checksum update; expired packets go to output 1",
	Ports: "input 0: IPv4 packets (header at the L3 offset; normally after CheckIPHeader).\n" +
		"output 0: packets whose TTL was > 1, with TTL decremented and the header checksum patched.\n" +
		"output 1 (optional): packets with TTL <= 1, unchanged (connect ICMPError(src, timeexceeded) here). " +
		"Unconnected, they are dropped and counted as \"unconnected output 1\".",
	Stats: "\"ttl expired\": packets with TTL <= 1 (a counter, whether sent to output 1 or dropped); " +
		"drops: \"too short\" (no 20-byte header at L3), \"not ipv4\" (version is not 4), " +
		"\"unconnected output 1\".",
	Example: `"CheckIPHeader -> ttl :: DecTTL -> rt", "ttl[1] -> ICMPError(192.0.2.1, timeexceeded) -> rt"`,
	SeeAlso: "CheckIPHeader, ICMPError",
	Text: "The checksum is updated per RFC 1624 eqn. 3 (HC' = ~(~HC + ~m + m'), where m is the " +
		"16-bit word TTL|protocol): it equals a full recomputation, including the 0x0000/0xffff " +
		"cases where RFC 1141's form goes wrong. DecTTL checks only what it touches (20 bytes, " +
		"version 4); put CheckIPHeader in front of it for the rest.",
}

// icmP6ErrorManual is ICMP6Error's manual page (forwarder elements ICMP6Error).
var icmP6ErrorManual = elements.Doc{
	Synopsis: "ICMP6Error(src, icmp_type, [icmp_code], [hoplimit], [mtu], [pointer], [rate], [burst])",
	Summary:  "turns each IPv6 packet into the ICMPv6 error about it (RFC 4443), rate limited",
	Ports: "input 0: IPv6 packets that caused an error (DecHopLimit's output 1, CheckMTU's output 1, " +
		"packets for the router nobody listens to).\n" +
		"output 0: the ICMPv6 error messages to each packet's source, in an Ethernet frame (MACs " +
		"swapped; L3 = 14; next-hop annotation cleared): route them.",
	Keys: []elements.Key{
		{Name: "src", Type: "address or auto", Required: true, Doc: autoDoc("IPv6", " (global ones: an error to a routed source cannot come from a link-local one)")},
		{Name: "icmp_type", Type: "int or name", Required: true,
			Doc: "1 or unreachable, 2 or toobig, 3 or timeexceeded, 4 or parameterproblem"},
		{Name: "icmp_code", Type: "int or name", Default: "0",
			Doc: "a number, or a name: unreachable: noroute, adminprohibited, beyondscope, address, port, " +
				"policy, reject; timeexceeded: hoplimit (transit), reassembly; parameterproblem: header, " +
				"nextheader, option"},
		{Name: "hoplimit", Type: "int", Default: "64", Doc: "hop limit of the error messages"},
		{Name: "mtu", Type: "int", Default: "0", Doc: "the next-hop MTU of toobig (1280..65535), required there and only there"},
		{Name: "pointer", Type: "int or routing", Default: "0", Doc: "parameterproblem's pointer: the offset of the faulty field, " +
			"or \"routing\": per packet, the offset of its first routing header's Routing Type field (RFC 5095: " +
			"the answer to a type-0 routing header; packets without a routing header are dropped, \"no routing header\")"},
		{Name: "rate", Type: "int", Default: "100", Doc: "errors per second per worker (token bucket); 0 = unlimited"},
		{Name: "burst", Type: "int", Default: "10", Doc: "token bucket depth"},
	},
	Stats: "drops: \"bad ip6 header\" (no IPv6 header to quote), \"about icmp6 error\" (the packet is an " +
		"ICMPv6 error or a redirect), \"truncated icmp6\" (ICMPv6 without its 4-byte header), " +
		"\"multicast destination\" (IPv6 or link-layer multicast, except for toobig and parameterproblem " +
		"code 2), \"bad source\" (unspecified, multicast, loopback, link-local or IPv4-mapped), " +
		"\"rate limited\", \"no routing header\" (pointer = routing).",
	Example: `"hl[1] -> ICMP6Error(2001:db8:1::1, timeexceeded) -> rt"` + "\n" +
		`"mtu[1] -> ICMP6Error(2001:db8:2::1, toobig, 0, 64, 1400) -> rt"` + "\n" +
		`"hl[1] -> ICMP6Error(auto, timeexceeded) -> rt"`,
	SeeAlso: "ICMPError, DecHopLimit, CheckMTU, IPLookup",
	Text: "The message is a new IPv6 header (src from the key — with \"auto\", per packet, see the key —, dst = the original source, hop limit " +
		"from the key, next header 58), the ICMPv6 header (type, code, checksum over the " +
		"pseudo-header and the whole message; toobig's MTU or parameterproblem's pointer), and as " +
		"much of the original packet as keeps the message within the minimum MTU of 1280 bytes " +
		"(RFC 4443 2.4 (c)). It is built in the packet's own buffer, without allocation. Per RFC " +
		"4443 2.4 (e) no error is sent about an ICMPv6 error or a redirect (found after walking up " +
		"to 8 extension headers), about a packet sent to a multicast address (IPv6 or link-layer) " +
		"unless it is a toobig or a parameterproblem code 2, or about a packet whose source does " +
		"not identify one host. Each worker has its own token bucket (2.4 (f)).",
}

// icmpErrorManual is ICMPError's manual page (forwarder elements ICMPError).
var icmpErrorManual = elements.Doc{
	Synopsis: "ICMPError(src, icmp_type, [icmp_code], [ttl], [mtu], [rate], [burst])",
	Summary:  "turns each packet into the ICMP error about it (RFC 792, RFC 1812 rules), rate limited",
	Ports: "input 0: IPv4 packets that caused an error (e.g. DecTTL's output 1).\n" +
		"output 0: the ICMP error messages, addressed to each packet's source, in an Ethernet " +
		"frame (MACs swapped from the original; L3 = 14; next-hop annotation cleared) — route them.",
	Keys: []elements.Key{
		{Name: "src", Type: "address or auto", Required: true, Doc: autoDoc("IPv4", "")},
		{Name: "icmp_type", Type: "int or name", Required: true,
			Doc: "3 or unreachable, 11 or timeexceeded, 12 or parameterproblem (case, '-' and '_' ignored: time-exceeded works)"},
		{Name: "icmp_code", Type: "int or name", Default: "0",
			Doc: "a number, or a name: unreachable: net, host, protocol, port, needfrag, sourceroute, netunknown, hostunknown, netprohibited, hostprohibited, adminprohibited; timeexceeded: ttl (transit), reassembly; parameterproblem: pointer, missingoption, length"},
		{Name: "ttl", Type: "int", Default: "64", Doc: "TTL of the error messages"},
		{Name: "mtu", Type: "int", Default: "0", Doc: "next-hop MTU for unreachable code 4 (needfrag), required there and only there"},
		{Name: "rate", Type: "int", Default: "100", Doc: "errors per second per worker (token bucket); 0 = unlimited"},
		{Name: "burst", Type: "int", Default: "10", Doc: "token bucket depth: errors sent back to back"},
	},
	Stats: "drops: \"bad ip header\" (no valid IPv4 header to quote), \"about icmp error\" (the packet is an ICMP error), " +
		"\"truncated icmp\" (an ICMP packet without its full 8-byte header), \"fragment\" (not the first fragment), " +
		"\"broadcast destination\" (IP destination multicast or 255.255.255.255), \"link broadcast\" " +
		"(destination MAC broadcast or multicast), \"bad source\" (source not a unicast address), " +
		"\"rate limited\" (token bucket empty).",
	Example: `"ttl[1] -> ICMPError(192.0.2.1, timeexceeded) -> rt"` + "\n" +
		`"mtu4[1] -> ICMPError(auto, unreachable, needfrag, 64, 1400) -> rt"` + "\n" +
		`[elements.toobig]` + "\n" + `type = "ICMPError"` + "\n" + `src = "192.0.2.1"` + "\n" +
		`icmp_type = "unreachable"` + "\n" + `icmp_code = "needfrag"` + "\n" + `mtu = 1400`,
	SeeAlso: "DecTTL, IPLookup",
	Text: "The message is a new IPv4 header (src from the key — with \"auto\", per packet, see the key —, dst = the original source, TTL from " +
		"the key, protocol 1, DF clear, TOS 0xc0 = precedence 6 as RFC 1812 4.3.2.5 suggests, " +
		"a fresh ID), an 8-byte ICMP header (type, code, checksum over the whole ICMP message; " +
		"for needfrag the next-hop MTU), and the quoted original: its IP header with options and " +
		"the first 8 bytes of its payload, as RFC 792 asks (RFC 1812 4.3.2.3 allows more; quoting 8 keeps " +
		"messages small and fixed). It is built in the same buffer, without allocation. Per RFC " +
		"1812 4.3.2.7 no error is sent about an ICMP error, a non-first fragment, a packet to an " +
		"IP or link-layer broadcast or multicast, or a packet whose source is not unicast. Each " +
		"worker has its own token bucket, so the total rate is up to workers * rate.",
}

// checkIP6HeaderManual is CheckIP6Header's manual page (forwarder elements CheckIP6Header).
var checkIP6HeaderManual = elements.Doc{
	Synopsis: "CheckIP6Header([badsrc])",
	Summary:  "checks IPv6 headers before forwarding; bad packets go to output 1 or are dropped",
	Ports: "input 0: frames with an IPv6 header at the L3 offset.\n" +
		"output 0: packets that pass every check, trimmed to 40 + payload length.\n" +
		"output 1 (optional): packets that fail a check. Unconnected, they are dropped and counted as \"unconnected output 1\".",
	Keys: []elements.Key{
		{Name: "badsrc", Type: "[]string", Doc: "extra IPv6 source prefixes to treat as martian"},
	},
	Stats: "One counter per failed check: \"too short\" (no 40 bytes at L3), \"bad version\" (not 6), " +
		"\"payload length beyond frame\", \"martian source\" (multicast, unspecified, loopback, link-local, " +
		"IPv4-mapped, or a badsrc prefix), \"bad destination\" (unspecified, loopback or link-local: never forwarded).",
	Example: "\"cls[2] -> CheckIP6Header -> DecHopLimit -> rt\"  # with cls :: Classifier(arp, ip, ip6, -)",
	SeeAlso: "CheckIPHeader, DecHopLimit, IPLookup",
	Text: "The IPv6 counterpart of CheckIPHeader: there is no header checksum to verify. RFC 4291 and " +
		"RFC 8200: a router does not forward packets from or to link-local, loopback or unspecified " +
		"addresses, nor from multicast sources. Extension headers are not interpreted.",
}

// decHopLimitManual is DecHopLimit's manual page (forwarder elements DecHopLimit).
var decHopLimitManual = elements.Doc{
	Synopsis: "DecHopLimit",
	Summary:  "decrements the IPv6 hop limit; expired packets go to output 1",
	Ports: "input 0: IPv6 packets (header at the L3 offset; normally after CheckIP6Header).\n" +
		"output 0: packets whose hop limit was > 1, decremented.\n" +
		"output 1 (optional): packets with hop limit <= 1, unchanged. Unconnected, they are dropped and " +
		"counted as \"unconnected output 1\".",
	Stats: "\"hop limit expired\": packets with hop limit <= 1 (a counter); drops: \"too short\" (no 40-byte " +
		"header at L3), \"not ipv6\" (version is not 6), \"unconnected output 1\".",
	Example: `"CheckIP6Header -> hl :: DecHopLimit -> rt", "hl[1] -> Discard"`,
	SeeAlso: "DecTTL, CheckIP6Header",
	Text: "The IPv6 counterpart of DecTTL. IPv6 has no header checksum, so nothing else changes; " +
		"an L4 checksum does not cover the hop limit.",
}

// ipLookupManual is IPLookup's manual page (forwarder elements IPLookup).
var ipLookupManual = elements.Doc{
	Synopsis: "IPLookup([routes], [routes_file], [miss], [source], [table], [interfaces], [netns], [max_routes], [offload], [interfaces6], [unreachable], [prohibit])",
	Summary:  "longest-prefix-match IPv4 and IPv6 routing with ECMP, from a route table several lookups share: sets the next-hop annotation and picks the output",
	Ports: "input 0: IPv4 or IPv6 packets (header at the L3 offset; the version nibble decides).\n" +
		"outputs 0..N-1: N is one more than the highest port the table's routes (with source = \"kernel\": " +
		"one per interface), miss, unreachable or prohibit name; a packet leaves on its route's out port.",
	Keys: []elements.Key{
		{Name: "routes", Type: "[]string",
			Doc: "routes of the element's own table, each \"PREFIX [via NEXTHOP]... out PORT...\" (IPv4 or IPv6); a bare address is a host route; " +
				"without via the network is directly connected; several via make an ECMP route " +
				"(\"0.0.0.0/0 via 10.1.0.2 via 10.2.0.2 out 0 out 1\": the i-th via leaves on the i-th out, or all on a single out); " +
				"\"PREFIX blackhole\", \"PREFIX unreachable\" and \"PREFIX prohibit\" stop what they match (see below). " +
				"With routes, routes_file or source the element has a table of its own (the keys of a [tables] section, inline); " +
				"without them it reads the graph's table named by table"},
		{Name: "routes_file", Type: "string",
			Doc: "a file of routes in the same syntax, one per line; # starts a comment; blank lines are skipped; " +
				"a full Internet table (1M prefixes) loads in about a second"},
		{Name: "miss", Type: "int", Default: "-1", Doc: "output port for packets without a route; -1 drops them"},
		{Name: "source", Type: "string", Default: "config",
			Doc: "\"config\": the routes and routes_file keys; \"kernel\": mirror the IPv4 and IPv6 unicast, blackhole, unreachable " +
				"and prohibit routes of a kernel routing table through netlink (an initial dump, then every change, applied live), so that any " +
				"routing daemon that programs the kernel (BIRD, FRR, ip route) drives the forwarder"},
		{Name: "table", Type: "string", Default: "main",
			Doc: "the graph's route table ([tables.NAME]) the element reads; several lookups may read one table (one copy in memory, " +
				"every change seen by all). With source = \"kernel\" on the element itself (a table of its own): the kernel table " +
				"(main, local, default or a number), as kernel_table in a [tables] section"},
		{Name: "interfaces", Type: "[]string",
			Doc: "with source = \"kernel\": the kernel interface behind each output port, in port order; " +
				"routes through other interfaces are not mirrored (counted as \"kernel routes skipped\")"},
		{Name: "netns", Type: "string", Doc: "with source = \"kernel\": a named network namespace (ip netns) to read; default: the forwarder's own"},
		{Name: "offload", Type: "[]string",
			Doc: "devices with a fast path (driver = \"afxdp\" with fastpath = true, or driver = \"afpacket\" with fastpath = \"auto\" or \"tc\"), one per output port in port order " +
				"(\"\" for a port that is not offloaded): the IPv4 and IPv6 routes leaving on those ports are mirrored into the " +
				"devices' in-kernel fast path, which forwards plain IPv4 packets, and IPv6 TCP and UDP, to a next hop " +
				"ARPQuerier or NDPQuerier resolved, before the graph sees them (see the afxdp and afpacket drivers); ECMP routes and " +
				"routes to other ports stay in the graph, and blackhole, unreachable and prohibit routes are held there as " +
				"\"never forward\" so that their packets reach the graph. A dual-stack graph whose IPv6 routes leave on their own ports " +
				"names the devices again for those (offload = [\"lan\", \"wan\", \"lan\", \"wan\"]). " +
				"A change reaches the fast path within about 10 ms: every 10 ms the mirror sets what the versions since its last " +
				"round changed (the table journals changed prefixes while a mirror follows it); it walks the whole table only at " +
				"start, after a rebuild (routes_file reload, Replace) or after the fast path refused a change"},
		{Name: "max_routes", Type: "int", Default: "4000000",
			Doc: "the most routes the table may hold; a routes file or a change that would exceed it (or the " +
				"structure's fixed capacity: 32767 /24s holding a longer prefix, 32767 distinct next-hop sets) " +
				"is refused before anything is replaced"},
		{Name: "interfaces6", Type: "[]string",
			Doc: "with source = \"kernel\": the kernel interface behind each IPv6 output port, numbered after " +
				"interfaces' ports (interfaces = [\"lan0\", \"wan0\"], interfaces6 = [\"lan0\", \"wan0\"]: IPv6 routes leave " +
				"on ports 2 and 3), for dual-stack graphs that resolve IPv4 and IPv6 next hops with different " +
				"elements (ARPQuerier, NDPQuerier); without it IPv6 routes leave on interfaces' ports"},
		{Name: "unreachable", Type: "int", Default: "-1",
			Doc: "output port for packets an unreachable route matches, to answer them (ICMPError(auto, unreachable, host), " +
				"ICMP6Error(auto, unreachable, noroute): what the kernel sends); -1 drops them"},
		{Name: "prohibit", Type: "int", Default: "-1",
			Doc: "output port for packets a prohibit route matches, to answer them (ICMPError(auto, unreachable, adminprohibited), " +
				"ICMP6Error(auto, unreachable, adminprohibited)); -1 drops them"},
	},
	Stats: "drops: \"no route\" (no prefix matches and miss is -1), \"too short\" (no IPv4 or IPv6 header at L3), " +
		"\"not ip\" (version is neither 4 nor 6), \"no such port\" (a route installed at run time names a port this element " +
		"does not have), \"blackhole route\", \"unreachable route\" and \"prohibit route\" (the latter two when their port is -1); " +
		"counters \"unreachable route answered\" and \"prohibit route answered\" (sent to those ports). " +
		"With source = \"kernel\" (counted by the first lookup that reads the table): counters \"kernel routes applied\", \"kernel routes skipped\" " +
		"(paths through no listed interface), \"kernel resyncs\"; kernel routes of the types not mirrored " +
		"(throw, local, broadcast, anycast, multicast, nat) are counted by type in forwarder show routes. Routes through nexthop " +
		"objects (ip route ... nhid N, as FRR installs them) are mirrored by the paths the kernel reports with them, a group as ECMP; " +
		"with net.ipv4.nexthop_compat_mode = 0 it reports none, and they are counted as \"nexthop object\" there. " +
		"With offload: \"offload routes applied\" (fast-path entries set or deleted), \"offload errors\" " +
		"(rounds in which the fast path refused a change; retried every 10 ms), \"offload left to graph\" " +
		"(what the fast path took but has no room to forward itself, so the graph forwards it: on afxdp and afpacket, " +
		"/24s holding longer prefixes beyond the IPv4 table's 32,760 groups, and routes beyond its 32,767 distinct next hops).",
	Example: "[tables.main]\n" +
		"routes = [\"10.0.0.0/8 via 10.1.0.2 out 0\", \"192.168.1.0/24 out 1\", \"2001:db8::/32 via 2001:db8:1::1 out 1\",\n" +
		"          \"0.0.0.0/0 via 192.0.2.1 via 198.51.100.1 out 1 out 2\", \"10.100.5.1 blackhole\"]\n\n" +
		"[elements.rt]\ntype = \"IPLookup\"          # reads table main\n\n" +
		"[elements.kernel_rt]\ntype = \"IPLookup\"\nsource = \"kernel\"\ninterfaces = [\"lan0\", \"wan0\"]",
	SeeAlso: "ARPQuerier, EtherRewrite, CheckIP6Header, DecHopLimit, ICMPError, forwarder routes, forwarder show routes and forwarder route add|del|replace|reload (the running table; SIGHUP re-reads routes_file)",
	Text: "Route tables are objects of the graph file, [tables.NAME] sections with the keys routes, routes_file, source, " +
		"kernel_table (the kernel table), interfaces, interfaces6, netns, max_routes, offload and family (\"ip4\" or \"ip6\": " +
		"the table holds that family only; unset: both, as a Linux table holds both); docs/graph-file.md describes them. " +
		"Every IPLookup without routes of its own reads one (main by default), so that the ICMP errors a router sends, " +
		"forwarder route add, show routes, the kernel mirror and the fast path all use one table: an error path " +
		"routes through a second IPLookup of the same table (the graph has no cycles). A table's routes name the output ports of " +
		"every lookup that reads it. " +
		"The next-hop annotation becomes the path's via address, or the packet's destination for a directly " +
		"connected route; ARPQuerier resolves it. An ECMP route's path is chosen by the packet's symmetric flow " +
		"hash (packet.FlowHash, computed once and kept in the FlowHash annotation), so a flow keeps one path. " +
		"A blackhole route drops what it matches, counted; an unreachable or a prohibit route drops it, or sends it to the " +
		"unreachable or prohibit port, where the graph answers it as the kernel does (host unreachable, administratively " +
		"prohibited); a covering prefix does not forward it, in the graph or the fast path. " +
		"A prefix may appear once (routes and routes_file together); host bits must be clear. " +
		"IPv4 lookups use DIR-24-8 (as DPDK's rte_lpm, with 16-bit entries: 32 MiB, plus 512 bytes per /24 " +
		"holding a longer prefix): one memory access per packet, two under a /25../32, whatever the number of " +
		"routes or of destinations seen — nothing is cached per destination, so the rate does not depend on " +
		"the traffic's spread. A batch's first-level loads are issued together so that their cache misses " +
		"overlap. IPv6 uses a stride-8 multibit trie. The table is shared by all workers and lookups and read without " +
		"locks: changes build a new version by copy-on-write of the pages they touch and publish it " +
		"atomically (read-copy-update); each batch is looked up in one version. `forwarder routes -config " +
		"FILE [ADDR]` prints the table size, its memory and the route chosen for an address.",
}
