package arp

import "github.com/junction-dataplane/junction/elements"

// The manual pages of this package's elements, beside the code as the
// drivers keep theirs (forwarder elements TYPE prints them).

// arpQuerierManual is ARPQuerier's manual page (forwarder elements ARPQuerier).
var arpQuerierManual = elements.Doc{
	Synopsis: `ARPQuerier(DEVICE, ["IP MAC", ...])`,
	Summary:  "resolves the next-hop annotation to a MAC with ARP and writes the Ethernet header",
	Ports: "input 0: IPv4 packets to send on DEVICE (normally from IPLookup, which sets the " +
		"next-hop annotation; without one the IPv4 destination is the next hop). " +
		"input 1: ARP frames received on DEVICE (replies, and requests: they teach the sender's " +
		"address); they are consumed. Feed it from the device's Classifier arp port through a " +
		"Tee so that ARPResponder sees them too, as in Click. " +
		"output 0: the IPv4 packets with their Ethernet header written (destination = the " +
		"neighbour, source = DEVICE's MAC, type 0x0800), and the ARP requests it sends: connect " +
		"it to ToDevice(DEVICE).",
	Keys: []elements.Key{
		{Name: "device", Type: "device", Required: true,
			Doc: "the device the packets leave by: its MAC is the source, its IPv4 addresses " +
				"(the device's addresses key) the sender of requests"},
		{Name: "neighbors", Type: "[]string", Variadic: true,
			Doc: `static entries "IP MAC", never aged nor replaced by ARP`},
		{Name: "timeout", Type: "duration", Default: `"30s"`,
			Doc: "an entry is used without question this long after its last confirmation; then " +
				"it is re-probed (unicast, once a second) and still used for 3 s more; unanswered, " +
				"it is unresolved again"},
		{Name: "hold", Type: "int", Default: "8",
			Doc: "packets kept per unresolved next hop (1..64) while it is being resolved"},
		{Name: "rate", Type: "int", Default: "100",
			Doc: "most ARP requests per second per worker, all next hops together (each next hop " +
				"gets at most one per second, across workers)"},
		{Name: "learn_rate", Type: "int", Default: "100",
			Doc: "most entries per second per worker made from ARP requests for the device's " +
				"addresses (updates of existing entries and the router's own next hops are not limited)"},
	},
	Stats: `counters "requests" (ARP requests sent), "learned" (entries made or confirmed by ` +
		`ARP), "held" (packets queued for resolution), "released" (held packets sent once ` +
		`resolved), "no buffer" (requests not sent: the worker's pool was empty), ` +
		`"rate limited" (requests the per-worker rate suppressed), "off-link" (requests for our ` +
		`address from a sender outside the device's prefixes, which make no entry), "learn limited" (entries not made from requests: learn_rate), "evicted" ` +
		`(live entries recycled, least recently active first, to make room for a new one). ` +
		`Drop reasons, input 0: "truncated" (shorter than its IPv4 header), "not ipv4" ` +
		`(IPv6 next hop), "no headroom" (no room for the Ethernet header), "queue full" ` +
		`(the next hop already holds hold packets), "too many unresolved" (64 next hops ` +
		`unresolved on this worker), "table full" (no neighbour slot), "unresolved" (held ` +
		`packets of a next hop that did not answer within 3 s, those freed at stop, and those ` +
		`held when a reload switched the worker to a new graph: the neighbours are kept, the ` +
		`packets waiting for one are not carried into the new graph). ` +
		`Input 1: "not arp" (not an Ethernet/IPv4 ARP frame), "bad sender" (zero, group or ` +
		`our own MAC; unusable IP); every other frame of input 1 is consumed, not dropped: "arp in" ` +
		`(ARP learnt from, or that teaches nothing new). With a fast-path device: "fastpath errors" (neighbours ` +
		`the device's fast path refused).`,
	Example: `"cls[0] -> at :: Tee(2)", "at[0] -> ARPResponder(lan) -> ToDevice(lan)",` + "\n" +
		`"at[1] -> [1]aq :: ARPQuerier(lan)", "rt[0] -> aq -> ToDevice(lan)"`,
	SeeAlso: "ARPResponder, IPLookup, EtherRewrite, forwarder show neighbors (the running table)",
	Text: "The neighbour table is shared by all workers (lock-free reads: one atomic load per " +
		"packet); held packets belong to the worker that holds them and are sent by it as " +
		"soon as it sees the entry resolved (on its next batch or tick, within a millisecond). " +
		"Requests are broadcast, except re-probes of a known entry, which are unicast to it " +
		"(as Linux does). Entries are made for next hops the router sends to and for hosts " +
		"on the link (a sender inside one of DEVICE's IPv4 prefixes) that ARP for the " +
		"device's own addresses, at most learn_rate a second per worker; a request from off " +
		"the link makes no entry. Any ARP frame from a known neighbour refreshes it; " +
		"unsolicited replies make no entry (Linux's arp_accept=0). The table holds 8,192 " +
		"entries (per element, all workers); when a new entry finds no room, the least " +
		"recently active one (confirmed, asked for or sent to) is evicted, never a static " +
		"one nor an active next hop (resolved, confirmed and sent to within timeout): a flood " +
		"of spoofed ARP recycles its own entries and the neighbours in use keep theirs. When DEVICE " +
		"has a fast path (afxdp with fastpath = true, or afpacket with fastpath = \"auto\" or \"tc\"), every neighbour learnt (and every static one) " +
		"is copied into it for timeout, so the fast path forwards to it in the kernel; the copy is " +
		"renewed when the neighbour's MAC changes or, on its next ARP frame, once it is a quarter " +
		"timeout old (one system call per neighbour per quarter timeout, not per frame). When it " +
		"lapses, the packets come back through this element, which resolves the neighbour again.",
}

// arpResponderManual is ARPResponder's manual page (forwarder elements ARPResponder).
var arpResponderManual = elements.Doc{
	Synopsis: `ARPResponder("IP MAC", ...)  or  ARPResponder(DEVICE)`,
	Summary:  "answers ARP requests for the router's own addresses",
	Ports: "input 0: Ethernet frames (ARP requests, normally from a Classifier's arp port); " +
		"output 0: the replies, built in place in the request's buffer (send them to " +
		"ToDevice of the device they came from). Everything else is freed and counted: ARP " +
		"that needs no answer as consumed, malformed frames as drops (see STATS).",
	Keys: []elements.Key{
		{Name: "addresses", Type: "[]string", Variadic: true,
			Doc: `entries "IP MAC" (e.g. "10.1.0.1 00:11:22:33:44:55"); "IP/len MAC" means the ` +
				`host address IP. Required unless device is given. A single inline argument ` +
				`that is not an address is taken as the device (ARPResponder(lan)).`},
		{Name: "device", Type: "device",
			Doc: "when addresses is empty: answer for this device's IPv4 addresses with its MAC " +
				"(the device's addresses and mac keys)"},
	},
	Stats: `counter "replies"; consumption reasons (ARP traffic that needs no answer from ` +
		`us, freed by design, not drops): "not a request" (replies and other opcodes: a ` +
		`Tee'd ARP port hands it every reply, which the ARPQuerier beside it learns from), ` +
		`"not for us" (target IP not one of the addresses: a request for another host on ` +
		`the link), "gratuitous" (sender IP == target IP: an announcement, which expects no ` +
		`answer; one for our own address means an address conflict). Drop reasons: ` +
		`"truncated" (shorter than an Ethernet+ARP header), "not arp" (ethertype not ` +
		`0x0806, or not Ethernet/IPv4 ARP), "bad sender" (sender MAC zero, multicast or ` +
		`one of ours; sender IP multicast, broadcast or loopback).`,
	Example: `"cls[0] -> ARPResponder(\"10.1.0.1 00:11:22:33:44:55\") -> ToDevice(lan)"` + "\n" +
		`"cls[0] -> ARPResponder(lan) -> ToDevice(lan)"`,
	SeeAlso: "ARPQuerier, Classifier",
	Text: "The reply (RFC 826) has op 2, sender = our MAC and the requested IP, target = the " +
		"requester's MAC and IP; its Ethernet destination is the requester's (ARP sender) MAC " +
		"and its source our MAC. Frame length (padding) is kept. Probes (RFC 5227: sender IP " +
		"0.0.0.0) are answered, with target IP 0.0.0.0, unicast to the prober: that is what " +
		"RFC 826 prescribes and how the prober learns the address is taken (Linux does the same).",
}
