package nat

import "github.com/junction-dataplane/junction/elements"

// The manual pages of this package's elements, beside the code as the
// drivers keep theirs (forwarder elements TYPE prints them).

// dnatManual is DNAT's manual page (forwarder elements DNAT).
var dnatManual = elements.Doc{
	Synopsis: "DNAT(RULE, ...)",
	Summary:  "destination NAT of tracked flows (port forwarding, load spreading over backends); rewrites destinations of every translated flow",
	Ports: "input 0: packets annotated by Conntrack (others pass unchanged). output 0: the same packets, " +
		"destinations rewritten. Put it before IPLookup (it is Linux's PREROUTING manip).",
	Keys: []elements.Key{{Name: "rules", Type: "[]string", Variadic: true,
		Doc: "\"PROTO ADDR[:PORT[-PORT]] -> BACKEND [BACKEND ...]\", PROTO tcp, udp or icmp, BACKEND ADDR[:PORT]: " +
			"e.g. \"tcp 203.0.113.10:80 -> 10.0.0.10:8080\", \"udp 203.0.113.10:5000-5100 -> 10.0.0.20\" (ports kept), " +
			"\"tcp 203.0.113.10:443 -> 10.0.0.11 10.0.0.12\" (one backend per flow, by flow hash). The first matching rule wins. " +
			"No rules: DNAT only applies the destination rewrites of existing flows (un-SNAT of replies)."}},
	Stats: "counters: \"translated\" (flows given a DNAT binding); \"reload: rule removed\" (flows a reload removed " +
		"because no rule of the new configuration gives them the backend they were bound to; established flows of " +
		"unchanged rules keep their bindings); drop \"reply tuple in use\" (another flow " +
		"already owns the translated reply tuple: the new flow is refused).",
	Example: `"ct :: Conntrack -> DNAT(tcp 203.0.113.1:8080 -> 192.168.1.10:80, udp 203.0.113.1:5000 -> 192.168.1.10) -> rt"`,
	SeeAlso: "Conntrack, SNAT, FastTrack",
	Text: "A binding is made on the first packet of a flow in its original direction and kept for the " +
		"flow's life (a rule change does not move existing flows). DNAT rewrites the destination of every " +
		"packet whose flow calls for it: the original direction of DNAT'd flows and the reply direction of " +
		"SNAT'd ones; ICMP errors about such flows get the outer destination and the quoted source " +
		"translated. L3 and L4 checksums are patched incrementally (a UDP checksum of 0 stays 0). " +
		"A new flow no rule matches that is for an outside address and port of an SNAT's endpoint-independent " +
		"mapping is sent to the mapping's inside endpoint when the SNAT's filtering lets it in, or when it comes " +
		"from the SNAT's inside networks (hairpinning).",
}

// snatManual is SNAT's manual page (forwarder elements SNAT).
var snatManual = elements.Doc{
	Synopsis: "SNAT(TO, [PORTS])",
	Summary:  "source NAT (masquerade) of tracked flows behind one or more addresses; rewrites sources of every translated flow",
	Ports: "input 0: packets annotated by Conntrack (others pass unchanged). output 0: the same packets, " +
		"sources rewritten. Put it after IPLookup on the outside path (Linux's POSTROUTING manip).",
	Keys: []elements.Key{
		{Name: "to", Type: "string", Doc: "the outside address(es), separated by spaces or commas; an inside host always gets the same one. Empty: only apply existing source rewrites (un-DNAT of replies)"},
		{Name: "ports", Type: "string", Default: "\"1024-65535\"", Doc: "source ports (and ICMP identifiers) to allocate, LO-HI"},
		{Name: "reply_device", Type: "string", Default: "\"\"", Doc: "the device the replies arrive on (e.g. \"wan\"): when its driver " +
			"reports the NIC's RSS key and indirection table (afxdp on a NIC; not veth), a new flow gets, if it can, a port whose " +
			"reply lands on a queue this worker polls (no handoff): its own port or one drawn from the flow, else the usual choice"},
		{Name: "hairpin", Type: "bool", Default: "false", Doc: "true: bind only flows whose destination DNAT translated " +
			"(the SNAT of the path back into the inside network, behind a Classifier of inside sources): an inside host " +
			"reaching a DNAT'd port of the public address gets to the inside server from `to` (hairpinning, RFC 4787 REQ-9, " +
			"RFC 5382 REQ-8), so that the server's reply comes back through the router to be translated; other flows pass " +
			"unbound (their existing rewrites applied). An empty `to` turns hairpinning off"},
		{Name: "mapping", Type: "string", Default: "\"endpoint-independent\"", Doc: "\"endpoint-independent\": an inside " +
			"address and port get one outside port for every destination (RFC 4787 REQ-1, RFC 5382 REQ-1), their own " +
			"port when it is free (port preservation), else one of the same parity; needs `inside` with several workers " +
			"(without it the mapping is per destination). \"address-and-port-dependent\": a port per destination (Linux's " +
			"masquerade). TCP and UDP; ICMP echo identifiers are chosen per destination either way"},
		{Name: "inside", Type: "string", Default: "\"\"", Doc: "the inside networks whose flows this SNAT masquerades " +
			"(e.g. \"192.168.1.0/24\"), separated by spaces or commas: FromDevice steers their TCP and UDP packets, and " +
			"those to `to` within `ports`, by port ownership (each port belongs to one worker), so that every flow of " +
			"an inside endpoint reaches the worker holding its mapping. Flows not masqueraded keep the flow-hash " +
			"steering"},
		{Name: "filtering", Type: "string", Default: "\"address-and-port-dependent\"", Doc: "which new flows from " +
			"outside a mapping lets in (RFC 4787 REQ-8, RFC 5382 REQ-3): \"address-and-port-dependent\" none (only " +
			"replies of existing flows, as Linux), \"address-dependent\" those from an address the mapping sent to (the " +
			"last two), \"endpoint-independent\" any. A DNAT in the graph (even without rules) binds them to the inside " +
			"endpoint; the graph's filter must pass new flows to `to` (the contract config passes what is for the router)"},
		{Name: "udp_timeout", Type: "duration", Default: "\"5m\"", Doc: "how long a UDP mapping stays after its last new " +
			"flow once no flow of it is tracked (at least 2m: RFC 4787 REQ-5)"},
		{Name: "tcp_timeout", Type: "duration", Default: "\"4m\"", Doc: "the same for TCP (at least 4m, RFC 5382 REQ-5's " +
			"transitory timeout; an established connection keeps its mapping as long as Conntrack tracks it)"},
		{Name: "port_block", Type: "int", Default: "0", Doc: "N > 0 (a multiple of 16, at most 4096): deterministic " +
			"port blocks in the manner of RFC 7422, for a carrier that logs subscribers, not flows: the k-th address of " +
			"`inside` (counting the networks in order) maps only to its own block of N ports on each worker, the k-th " +
			"block of the ports that worker owns (whole units of 16 consecutive ports), so its outside ports follow from " +
			"its address alone; SNAT logs the rule once at start, and each host's block on a worker once, when that worker " +
			"first gives the host a port (a line per subscriber and worker, none per flow: \"TIME port block in use: " +
			"INSIDE -> OUTSIDE ports LO-HI[,LO-HI...]\", UTC to the millisecond, the block's ports on that worker, " +
			"written to the router's log between batches). A new flow of a host whose block is full is dropped " +
			"(\"ports exhausted\"): no port outside a host's block is ever used; inside addresses beyond the blocks " +
			"there are get none. Needs `inside` and the " +
			"endpoint-independent mapping. 0: ports from the whole range"},
		{Name: "port_block_alloc", Type: "string", Default: "\"deterministic\"", Doc: "how port_block's blocks are given: " +
			"\"deterministic\" (above); \"bulk\": an inside host takes a free block of N ports of a worker's ports (whole " +
			"units of 16 it owns, chosen at random among the free ones of the host's outside address) at its first mapping " +
			"there, all its mappings on that worker come from it, and it goes back to the pool once the last of them has " +
			"ended (its flows gone and the mapping's timeout passed: a few held blocks are looked at every tick, every millisecond while the worker is busy, up to 10 ms apart while it sleeps idle). " +
			"Each is logged, \"TIME port block allocated: INSIDE -> OUTSIDE ports LO-HI[,...]\" and \"TIME port block " +
			"released: ...\" with the same ports, so the log has two lines per subscriber and block; a host finding no " +
			"free block, or its block full, has its new flows dropped (\"ports exhausted\"). A block is not handed out " +
			"or given back without its line (at most 256 lines a worker between two writes, one a millisecond)"},
	},
	Stats: "counters: \"translated\" (flows given a SNAT binding), \"port probes\" (conntrack lookups made " +
		"choosing ports: about one per new flow while the destination has free ports; a rising ratio to " +
		"\"translated\" means a destination's ports are filling up); drop \"ports exhausted\" (no free port " +
		"found for a new flow within the search bound; existing flows keep theirs); \"reload: address removed\" " +
		"(flows a reload removed because the new configuration no longer has the outside address they were " +
		"bound to); with the endpoint-independent mapping \"mappings made\" (new inside endpoints given a " +
		"mapping) and \"mapping fallback\" (new flows that got a port per destination instead: this worker had " +
		"no free port, or the mapping's reply tuple was taken).",
	Example: `"rt[1] -> SNAT(203.0.113.1) -> ARPQuerier(wan) -> ToDevice(wan)"`,
	SeeAlso: "Conntrack, DNAT, FastTrack",
	Text: "Per destination (mapping = \"address-and-port-dependent\", ICMP echo, and a mapping's fallback), " +
		"ports per worker: with W workers steered by the symmetric flow hash (FromDevice's spreading: " +
		"worker = hash × W >> 32), worker w only picks a port P whose reply tuple (server, port → address, P) " +
		"hashes to w, so the replies come home to the worker holding the flow, and two workers never pick " +
		"the same reply tuple. The source port is kept when it is in the range, qualifies and is free. " +
		"Otherwise each destination (server address and port, protocol, outside address) has its own walk " +
		"through the range, as in RFC 6056's double-hash port selection: a keyed hash of the destination " +
		"(random key per worker) gives a starting offset and one of 4096 cursors, and a new flow goes on " +
		"from where the previous walk through that cursor stopped, so it looks at about W ports and makes " +
		"about one conntrack lookup however many flows share the destination (1/(1-u) lookups when a share " +
		"u of the destination's ports is in use). A new flow looks at no more than 4096 ports and makes at " +
		"most 128 lookups (after the source port's); if none is free it is dropped as \"ports exhausted\" " +
		"and the next one goes on from there. A destination can have at most one flow per port and outside " +
		"address (with W workers, about 1/W of them on each worker). With `inside` set and several workers, " +
		"FromDevice steers ICMP echoes by their identifier both ways, so an identifier SNAT must change (below " +
		"`ports`, or taken) is replaced by one the worker owns and the reply comes home. SNAT also un-DNATs the replies of DNAT'd flows " +
		"(their source goes back to the public address) and translates ICMP errors about its flows. " +
		"A port qualifies by the hash FromDevice steers the reply by: a reply from a DNAT backend endpoint " +
		"hashes as the public endpoint it serves (flowsteer), which is what a hairpinned flow's reply is. " +
		"Hairpinning (hairpin = true): an inside host connecting to the public address and a DNAT'd port " +
		"is DNAT'd to the inside server and, by this SNAT on the way back into the inside network, given " +
		"the source `to` (the public address: RFC 4787 REQ-9a and RFC 5382 REQ-8a ask for the external " +
		"address and port, what any outside client would show) and a port of the same choice; the server's " +
		"reply then goes to the router, DNAT gives it back the client's address and this SNAT the public " +
		"address and port the client connected to. Both directions are steered to one worker (the reply by " +
		"the public endpoint, the port chosen to hash home). Hairpinning to a masqueraded mapping (an inside " +
		"host sending to another's external address and port, with the endpoint-independent mapping and `inside` " +
		"set): DNAT sends it to the mapping's inside endpoint whatever the filtering, and the hairpin SNAT gives it " +
		"the sender's own mapping as its source (REQ-9a), or, when that mapping is another worker's and did not " +
		"keep its port, a port of its own; FromDevice steers both directions to the lower of the two ports' owners. " +
		"Endpoint-independent mapping (mapping = \"endpoint-independent\", the default): each inside endpoint " +
		"(address, port, protocol) has one mapping, shared by all its flows; it lasts while a flow bound to it is " +
		"tracked and the timeout after its last new flow. With several workers each port belongs to one worker " +
		"(in units of 16 ports, by a hash of the unit) and FromDevice steers the masqueraded flows by port (the " +
		"`inside` key), so the owner of an inside port decides all the flows of its endpoints and gives them its " +
		"own ports: the inside port when free, else a port of the same parity, else any. A worker whose ports " +
		"are all mapped frees mappings that ended (looking at a few) and otherwise binds the flow per destination " +
		"(\"mapping fallback\"). Memory: 32 bytes per port of the range per address and protocol (3.9 MiB for one " +
		"address and the default range) and, per worker, 2 bits per port of the range per address and protocol " +
		"(mapped, free), an index (two 8-byte slots per port and protocol it owns, endpoint and outside port in one) and a filter (8 bits per port " +
		"and protocol it owns), the last two rounded up to a power of two.",
}
