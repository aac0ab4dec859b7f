package ndp

import "github.com/junction-dataplane/junction/elements"

// The manual pages of this package's elements, beside the code as the
// drivers keep theirs (forwarder elements TYPE prints them).

// routerAdvertiserManual is RouterAdvertiser's manual page (forwarder elements RouterAdvertiser).
var routerAdvertiserManual = elements.Doc{
	Synopsis: "RouterAdvertiser(DEVICE, [prefixes], [interval], [lifetime], [mtu])",
	Summary:  "sends IPv6 router advertisements (RFC 4861) so that hosts on a link configure themselves (SLAAC)",
	Ports: "input 0: frames received on DEVICE (normally NDPResponder's output 1): router solicitations " +
		"are answered (and consumed), everything else passes. output 0: the advertisements: connect it " +
		"to ToDevice(DEVICE). output 1 (optional): the other frames, unchanged; unconnected, they are " +
		"dropped and counted.",
	Keys: []elements.Key{
		{Name: "device", Type: "device", Required: true,
			Doc: "the device: the advertisements come from its link-local address (EUI-64 of its MAC) and MAC"},
		{Name: "prefixes", Type: "[]string",
			Doc: "prefixes advertised on-link and for autonomous configuration (at most 8); default: the " +
				"device's global IPv6 addresses' prefixes"},
		{Name: "interval", Type: "duration", Default: `"200s"`,
			Doc: "time between unsolicited advertisements (4s..1800s); the first three after start come 16 s " +
				"apart at most"},
		{Name: "lifetime", Type: "duration", Default: `"1800s"`,
			Doc: "router lifetime: how long hosts keep the router as a default router (0: not a default router)"},
		{Name: "mtu", Type: "int", Default: "0", Doc: "link MTU option (1280..65535); 0: none"},
	},
	Stats: `counters "advertisements" (packets created: periodic and answers), "solicitations" (router ` +
		`solicitations answered), "no buffer". Drop reasons: "bad solicitation" (hop limit not 255, ` +
		`bad code, length or checksum, or a link-layer option from the unspecified address), ` +
		`"unconnected output 1".`,
	Example: `"nr[1] -> ra :: RouterAdvertiser(lan)", "ra[0] -> ToDevice(lan)", "ra[1] -> ICMP6PingResponder(lan) -> rt"`,
	SeeAlso: "NDPResponder, NDPQuerier",
	Text: "An advertisement (RFC 4861 4.2) goes from the device's link-local address to all nodes " +
		"(ff02::1), hop limit 255, current hop limit 64, no managed or other-configuration flag, with the " +
		"device's link-layer address, the MTU if given, and each prefix with the on-link and autonomous " +
		"flags (valid lifetime 30 days, preferred 7). Worker 0 sends the unsolicited ones; a solicitation " +
		"(to any worker) is answered by an advertisement to all nodes at once, unless one went out " +
		"less than 3 s before, in which case the next is brought forward to 3 s after it (6.2.6). A CPE " +
		"(RFC 7084) advertises its LAN prefix so that hosts take addresses and it as their default router.",
}

// ndpQuerierManual is NDPQuerier's manual page (forwarder elements NDPQuerier).
var ndpQuerierManual = elements.Doc{
	Synopsis: `NDPQuerier(DEVICE, ["IPv6 MAC", ...])`,
	Summary:  "resolves the IPv6 next-hop annotation to a MAC with neighbour discovery (RFC 4861) and writes the Ethernet header",
	Ports: "input 0: IPv6 packets to send on DEVICE (normally from IPLookup, which sets the next-hop " +
		"annotation; without one the IPv6 destination is the next hop). " +
		"input 1: neighbour solicitations and advertisements received on DEVICE (NDPResponder's " +
		"output 2): valid ones teach the cache; they are consumed. " +
		"output 0: the packets of input 0 with their Ethernet header written (destination = the " +
		"neighbour, source = DEVICE's MAC, type 0x86dd), and the solicitations it sends: connect " +
		"it to ToDevice(DEVICE).",
	Keys: []elements.Key{
		{Name: "device", Type: "device", Required: true,
			Doc: "the device the packets leave by: its MAC is the source, its IPv6 addresses (and " +
				"its link-local address, derived from the MAC) the source of solicitations"},
		{Name: "neighbors", Type: "[]string", Variadic: true,
			Doc: `static entries "IPv6 MAC", always REACHABLE, never replaced`},
		{Name: "timeout", Type: "duration", Default: `"30s"`,
			Doc: "reachable time: an entry is REACHABLE this long after a confirmation, then STALE"},
		{Name: "hold", Type: "int", Default: "8",
			Doc: "packets kept per unresolved neighbour (1..64) while it is INCOMPLETE"},
		{Name: "rate", Type: "int", Default: "100",
			Doc: "most solicitations per second per worker, all neighbours together"},
		{Name: "learn_rate", Type: "int", Default: "100",
			Doc: "most entries per second per worker made from solicitations for the device's " +
				"addresses (updates of existing entries and the router's own next hops are not limited)"},
	},
	Stats: `counters "solicitations" (NS sent), "learned" (entries made or updated by NS/NA), ` +
		`"held", "released", "no buffer", "rate limited", "nd frames" (frames received on input 1: ` +
		`each consumed as "nd in", or dropped as "nd invalid" when malformed or from an unusable link-layer address), "not learned: table full" (solicitations ` +
		`for us from a sender the full cache had no slot for: a flood from random sources), "off-link" ` +
		`(solicitations for us from a sender neither link-local nor in DEVICE's prefixes: no entry made), ` +
		`"learn limited" (entries not made from solicitations: learn_rate), "evicted" (entries not ` +
		`yet recyclable, evicted least recently active first to make room for a new one; never an active next hop). ` +
		`Drop reasons, input 0: "truncated", ` +
		`"not ipv6" (an IPv4 next hop or no IPv6 header), "no headroom", "queue full" (hold ` +
		`packets already wait for the neighbour), "too many unresolved" (64 neighbours unresolved ` +
		`on this worker), "table full" (no cache slot: 4096 entries), "unresolved" (held packets ` +
		`of a neighbour that did not answer 3 solicitations, and those freed at stop). ` +
		`Input 1: "nd invalid" (not a valid solicitation or advertisement: not ND, malformed, ` +
		`hop limit not 255, bad checksum, or a group or own link-layer address; NDPResponder ` +
		`counts each reason before). With a fast-path device: "fastpath errors" (neighbours the ` +
		`device's fast path refused).`,
	Example: `"cls[3] -> nr :: NDPResponder(lan)", "nr[0] -> ToDevice(lan)", "nr[2] -> [1]nq :: NDPQuerier(lan)",` + "\n" +
		`"rt[2] -> nq -> ToDevice(lan)"`,
	SeeAlso: "NDPResponder, ARPQuerier, IPLookup, ICMP6Error, forwarder show neighbors (the running cache)",
	Text: "The neighbour cache follows RFC 4861 7.3: a packet to an unknown neighbour makes an " +
		"INCOMPLETE entry and multicasts a solicitation to its solicited-node group, once a second, " +
		"three times; the packets wait (hold per neighbour) and are dropped if none is answered. A " +
		"solicited advertisement makes it REACHABLE for timeout; then STALE; the first packet sent " +
		"to a STALE entry moves it to DELAY, and 5 s later, unconfirmed, to PROBE: unicast " +
		"solicitations once a second, three times, the MAC still in use; unanswered, it is resolved " +
		"afresh. Solicitations for the router's addresses make or update the sender's entry " +
		"(STALE), advertisements only update existing ones (with the override rules of 7.2.5). " +
		"Multicast next hops map to 33:33:xx:xx:xx:xx (RFC 2464) without a cache entry. The cache " +
		"is shared by all workers (lock-free reads); held packets belong to the worker that holds " +
		"them. Solicitations make entries only for senders on the link (link-local, or in one of " +
		"DEVICE's prefixes), at most learn_rate a second per worker. A full cache chain first " +
		"recycles failed entries, INCOMPLETE ones older than 6 s and resolved ones neither " +
		"confirmed nor sent to within timeout; else it evicts the least recently active entry " +
		"that is not an active next hop (resolved and sent to within timeout) nor static: a flood " +
		"of solicitations or a scan of the link's addresses recycles its own entries, and the " +
		"neighbours in use keep theirs. When " +
		"DEVICE has a fast path (afxdp with fastpath = true, or afpacket with fastpath = \"auto\" or \"tc\"), every REACHABLE neighbour (and every " +
		"static one) is copied into it for what remains of its reachable time, so the fast path " +
		"forwards IPv6 to it in the kernel; the copy is renewed on confirmations (at most once per " +
		"quarter timeout while the MAC is unchanged) and withdrawn when the neighbour's MAC " +
		"changes without a confirmation. Since the packets the kernel forwards never reach this " +
		"element, a neighbour with a copy is re-confirmed before the copy lapses: in the last quarter " +
		"of its reachable time worker 0's querier sends it a unicast solicitation (at most one per " +
		"second), whose solicited advertisement renews the copy, as Linux does for managed " +
		"neighbours. A neighbour that stops answering lapses: the packets come back through this " +
		"element, whose STALE/DELAY/PROBE probing confirms the neighbour again or fails it.",
}

// ndpResponderManual is NDPResponder's manual page (forwarder elements NDPResponder).
var ndpResponderManual = elements.Doc{
	Synopsis: "NDPResponder(DEVICE, [announce])",
	Summary:  "answers IPv6 neighbour solicitations for the router's addresses (RFC 4861) and announces them",
	Ports: "input 0: frames received on DEVICE that may be neighbour discovery (normally a Classifier's " +
		"icmp6 to multicast, link-local or our addresses). output 0: the advertisements it creates: " +
		"answers, and the unsolicited ones sent at start; connect it to ToDevice(DEVICE). output 1 " +
		"(optional): every frame that is not neighbour solicitation or advertisement (echo requests, " +
		"other ICMPv6), unchanged. output 2 (optional): what NDPQuerier learns from: the valid " +
		"solicitations answered and the valid advertisements, unchanged; connect it to " +
		"NDPQuerier(DEVICE)'s input 1. Unconnected outputs drop and count.",
	Keys: []elements.Key{
		{Name: "device", Type: "device", Required: true,
			Doc: "the device: its MAC answers, for its IPv6 addresses (its addresses key) and its " +
				"link-local address (fe80::/64 with the EUI-64 of its MAC, unless one is configured)"},
		{Name: "announce", Type: "int", Default: "3",
			Doc: "unsolicited advertisements of each address at start, one a second, to all nodes (0..3)"},
	},
	Stats: `counters "advertisements" (answers) and "announcements" (the start-up DAD probes and unsolicited ` +
		`advertisements): the packets it creates; "dad defended" ` +
		`(duplicate address detection probes for our addresses, answered to all nodes), ` +
		`"address conflict" (another node advertises one of our addresses), "no buffer". Drop ` +
		`reasons (solicitations only): "not for us" (target not ours), "truncated", "hop limit not ` +
		`255", "bad checksum", "bad code", "multicast target", "malformed option" (zero length, ` +
		`beyond the message, a link-layer option not 8 bytes, more than 16), "bad dad probe" ` +
		`(unspecified source with a link-layer option or not to the solicited-node group; a ` +
		`solicited advertisement to a group), "bad sender" (a group or own source MAC), and ` +
		`"unconnected output 1"/"2".`,
	Example: `"cls[3] -> nr :: NDPResponder(lan)", "nr[0] -> ToDevice(lan)", "nr[1] -> ICMP6PingResponder(lan, wan) -> rt",` + "\n" +
		`"nr[2] -> [1]NDPQuerier(lan)"`,
	SeeAlso: "NDPQuerier, ARPResponder, ICMP6PingResponder",
	Text: "An answer (RFC 4861 7.2.4) has the router and override flags set and the solicited flag set " +
		"unless the solicitation was a DAD probe (source ::), which is answered to all nodes (ff02::1) " +
		"as a defence of the address; other answers go to the solicitation's source, at the MAC of its " +
		"source link-layer option (else the frame's source). The answer carries a target link-layer " +
		"option, hop limit 255, and the ICMPv6 checksum over the pseudo-header. At start, worker 0 " +
		"probes every address for duplicates (RFC 4862 5.4: a solicitation from :: to its solicited-node " +
		"group; an advertisement of it by another node counts as an address conflict), then a second " +
		"later announces every address to all nodes (override set, not solicited) so that neighbours " +
		"with a stale entry learn the MAC. A reload that keeps the element on the same MAC and " +
		"addresses goes on where it was (no new probes or announcements); one that changes them " +
		"starts over.",
}
