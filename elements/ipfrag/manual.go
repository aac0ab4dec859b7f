package ipfrag

import "github.com/junction-dataplane/junction/elements"

// The manual pages of this package's elements, beside the code as the
// drivers keep theirs (forwarder elements TYPE prints them).

// ipFragmenterManual is IPFragmenter's manual page (forwarder elements IPFragmenter).
var ipFragmenterManual = elements.Doc{
	Synopsis: "IPFragmenter(mtu, [fragment])",
	Summary:  "splits IPv4 packets longer than the egress MTU into RFC 791 fragments, and IPv6 datagrams IP6Reassembler put together into fragments as their sender made them; DF packets and other long IPv6 ones go to output 1 (for ICMPError needfrag, ICMP6Error toobig)",
	Ports: "input 0: IP packets about to leave by a link (L3 annotation at the IP header).\n" +
		"output 0: packets whose IP length is at most mtu, unchanged, the fragments of longer IPv4 packets without DF, " +
		"and the fragments of IPv6 datagrams IP6Reassembler reassembled, in the order of the packets they replace.\n" +
		"output 1 (optional): longer packets, unchanged: IPv4 with DF set, and IPv6 (a router never fragments IPv6, RFC 8200 " +
		"section 5): one that arrived whole, or a reassembled one whose sender's fragments were longer than mtu. Connect it to ICMPError(src, unreachable, needfrag, 64, MTU) or ICMP6Error(src, toobig, 0, 64, MTU); " +
		"unconnected, they are dropped and counted as \"unconnected output 1\".",
	Keys: []elements.Key{
		{Name: "mtu", Type: "int", Required: true, Doc: "the egress link's MTU in bytes (the IP packet, without its link header), 68..65535"},
		{Name: "fragment", Type: "bool", Default: "true", Doc: "false: do not fragment, pass long IPv4 packets without DF " +
			"unchanged on output 0 (DF and IPv6 still go to output 1): the path-MTU check before a NAT, whose error must quote " +
			"the untranslated packet, when an IPFragmenter after the NAT does the fragmenting"},
	},
	Stats: "counters \"fragmented\" (packets split), \"fragments\" (fragments sent), \"too big\" (packets sent to output 1); " +
		"drops \"no buffer\" (the instance's pool could not hold a packet's fragments: the packet is dropped whole) and " +
		"\"malformed\" (an IPv4 header whose lengths do not fit the frame, or a fragment reaching past 65,535 bytes).",
	Example: `"rt[1] -> IPFragmenter(1500) -> ARPQuerier(wan) -> ToDevice(wan)", "frag[1] -> ICMPError(auto, unreachable, needfrag, 64, 1500) -> rte"`,
	SeeAlso: "IPReassembler, CheckMTU, ICMPError, ICMP6Error",
	Text: "Fragmentation follows RFC 791 (and RFC 1812 5.2.6): each fragment carries as much of the payload as the mtu " +
		"allows, in multiples of 8 bytes except the last; the first keeps every option, the others only those whose copied " +
		"flag is set (security, loose and strict source route), padded to a 4-byte boundary; the identification, TOS, TTL " +
		"and protocol are the packet's; the offset adds to the packet's own (a fragment fragmented again) and MF is set on " +
		"all but the last, which keeps the packet's own MF. A fragment never exceeds a packet buffer (2,048 bytes with the " +
		"link header), so with a larger mtu the fragments are smaller than it, which RFC 791 allows. Packets that fit take " +
		"one length test and one test of the buffer's size (a reassembled datagram's buffer is larger than a frame's). " +
		"IPv6 datagrams IP6Reassembler reassembled carry the size of their longest fragment: such a datagram longer than " +
		"that leaves in fragments of at most that size (RFC 8200 section 4.5: the unfragmentable part in each, then a " +
		"fragment header with the datagram's own identification; Linux's frag_max_size), or whole if it is no longer; " +
		"one whose fragments were longer than mtu goes to output 1. Fragments come from the instance's own pool and keep the packet's annotations except its flow " +
		"(a fragment is not a packet of the flow for FastTrackLearn); the packet itself is freed.",
}

// ipReassemblerManual is IPReassembler's manual page (forwarder elements IPReassembler).
var ipReassemblerManual = elements.Doc{
	Synopsis: "IPReassembler([capacity], [timeout], [max_fragments])",
	Summary:  "reassembles IPv4 fragments into whole datagrams (before Conntrack and NAT) and hands each to the worker that owns its flow",
	Ports: "input 0: Ethernet frames with the network header at the L3 annotation (after CheckIPHeader).\n" +
		"output 0: everything that is not an IPv4 fragment, unchanged and in order, and each reassembled datagram " +
		"when its last missing fragment arrives: the first fragment's link and IP headers (options included) in front of " +
		"the whole payload, MF and the offset cleared, total length and header checksum set. A datagram may be longer " +
		"than any link (up to 65,535 bytes): an IPFragmenter before each output device splits it again.",
	Keys: []elements.Key{
		{Name: "capacity", Type: "int", Default: "64", Doc: "datagrams in reassembly at once per worker (1..65536); " +
			"each holds one buffer of 65,983 bytes whose pages are touched only as far as the datagram reaches; an instance's " +
			"pool holds capacity + 16 per other worker (lent) + workers + batch such buffers, its resident bound (37 MiB for " +
			"the two in nat-gateway.toml with 2 workers, as much again for its two IP6Reassemblers, reached only by a flood " +
			"that writes every page). A new " +
			"datagram when all are taken evicts the oldest (its fragments are counted as \"table full\"), so that a flood of " +
			"datagrams that never complete cannot keep others out for the timeout"},
		{Name: "timeout", Type: "duration", Default: `"30s"`, Doc: "how long a datagram may wait for its missing fragments, " +
			"from its first fragment's arrival (Linux's ipfrag_time)"},
		{Name: "max_fragments", Type: "int", Default: "64", Doc: "fragments one datagram may have (2..8192): 64 carry a " +
			"64 KiB datagram over links of 1,100 bytes; a datagram in more pieces (a 64 KiB datagram in 8-byte fragments) is " +
			"dropped as \"too many fragments\", which bounds the work per fragment"},
	},
	Stats: "counters: \"datagrams\" (reassembled), \"out of order\" (of those, datagrams whose fragments did not all arrive in offset order), \"handed off\" / \"handed in\" (datagrams passed to / received from the " +
		"worker owning their flow), \"in reassembly\" (a gauge). Consumed: \"reassembled\" (fragments merged into a datagram " +
		"sent on). Drops, in fragments: \"timeout\" (the datagram did not complete in time), \"table full\" (evicted for a " +
		"newer one), \"overlapping fragments\" (a fragment overlapping another, or past or contradicting the datagram's end: " +
		"the whole datagram is dropped, as RFC 5722 asks for IPv6 and Linux does for IPv4), \"duplicate fragment\" (the same " +
		"piece again: dropped, the datagram kept), \"too many fragments\", \"tiny first fragment\" (a first fragment too short " +
		"to hold the ports, 8 bytes of UDP or ICMP or 20 of TCP, or a TCP fragment at offset 8: RFC 1858's attacks on port " +
		"filters), \"datagram over 65535 bytes\" (offset and length beyond what IPv4 can carry), \"malformed fragment\" (empty, " +
		"a non-last fragment not a multiple of 8 bytes, a bad length, or a link header over 64 bytes), \"no buffer\" (no " +
		"datagram buffer free: the pipeline holds them all), \"handoff full\" (the owning worker's lent buffers are in use), " +
		"\"reload: no room\" (datagrams in reassembly at a reload that the new instance's capacity or max_fragments could not " +
		"take: the others carry over, their fragments and timeout kept).",
	Example: `"wcls[1] -> CheckIPHeader -> reasm :: IPReassembler -> ct :: Conntrack", "rt[1] -> IPFragmenter(1500) -> ToDevice(wan)"`,
	SeeAlso: "IP6Reassembler, IPFragmenter, Conntrack, CheckIPHeader",
	Text: "Conntrack, NAT and Classifier's port tests need the transport header, which only the first fragment of a datagram " +
		"carries. IPReassembler puts a datagram back together before them, as Linux's defragmentation before connection " +
		"tracking and Click's IPReassembler do: the tracker, the NAT and FastTrackLearn then see one whole packet, in order " +
		"and out of order alike (RFC 4787 REQ-14), and the translated datagram is fragmented again on its way out. Non-fragments " +
		"pass untouched (one load and test of the flags per packet). " +
		"FromDevice steers every fragment of a datagram to one worker (fragments hash by addresses and protocol); " +
		"once the datagram is complete its flow's owner is known (the worker the symmetric flow hash of its 5-tuple names, " +
		"as FromDevice's spreading would place the flow's unfragmented packets, DNAT replies and pinned flows included), and " +
		"a datagram that belongs to another worker is copied into a buffer that worker lent and handed to it; the owner " +
		"sends it on from its own instance at its next push or tick (within a millisecond). Memory is bounded: capacity " +
		"buffers per worker, 16 more per other worker (lent), and a batch's worth in flight. Fragments are copied into " +
		"the datagram's buffer as they arrive and their frames freed at once; each is counted when its datagram is sent on " +
		"(consumed, \"reassembled\") or dropped (by reason). IPv6 fragments pass unchanged: IP6Reassembler reassembles them.",
}

// iP6ReassemblerManual is IP6Reassembler's manual page (forwarder elements IP6Reassembler).
var iP6ReassemblerManual = elements.Doc{
	Synopsis: "IP6Reassembler([capacity], [timeout], [max_fragments])",
	Summary:  "reassembles IPv6 fragments into whole datagrams (before Conntrack) and hands each to the worker that owns its flow; IPFragmenter splits them again as their sender did",
	Ports: "input 0: Ethernet frames with the network header at the L3 annotation: any (IPv4, ARP and the rest pass " +
		"untouched), before or after CheckIP6Header; it checks the lengths of what it reassembles itself. Before the " +
		"Classifier that picks out neighbour discovery and ICMPv6 to the router, so that fragmented ICMPv6 reaches them whole.\n" +
		"output 0: everything that is not an IPv6 fragment, unchanged and in order; atomic fragments (offset 0, M clear) " +
		"unchanged; and each reassembled datagram when its last missing fragment arrives (RFC 8200 section 4.5): the first " +
		"fragment's link header and unfragmentable part (the fixed header and any hop-by-hop, destination options and routing " +
		"headers before the fragment header) in front of the whole fragmentable part, the fragment header removed (its Next " +
		"Header moved into the header that named it), the payload length set. Each datagram carries, in its scratch " +
		"annotation, its longest fragment's size and its identification: an IPFragmenter before each output device splits " +
		"it again into fragments no longer than its sender's (or sends it to packet too big when the link is narrower).",
	Keys: []elements.Key{
		{Name: "capacity", Type: "int", Default: "64", Doc: "datagrams in reassembly at once per worker (1..65536); as " +
			"IPReassembler's: one buffer of 65,983 bytes each, touched only as far as the datagram reaches; the oldest is " +
			"evicted for a new one when all are taken (\"table full\")"},
		{Name: "timeout", Type: "duration", Default: `"60s"`, Doc: "how long a datagram may wait for its missing fragments, " +
			"from its first-arriving fragment (RFC 8200 section 4.5: 60 seconds; Linux's ip6frag_time)"},
		{Name: "max_fragments", Type: "int", Default: "64", Doc: "fragments one datagram may have (2..8192); more " +
			"(a 64 KiB datagram in 8-byte fragments) drops the datagram as \"too many fragments\""},
	},
	Stats: "as IPReassembler's: \"datagrams\", \"out of order\", \"handed off\", \"handed in\", \"in reassembly\", " +
		"consumed \"reassembled\", and \"atomic fragments\" (RFC 6946: passed on as whole datagrams, never held). Drops, in " +
		"fragments: \"timeout\", \"table full\", \"overlapping fragments\" (RFC 5722: a fragment overlapping another, or past " +
		"or contradicting the datagram's end; the whole datagram is dropped, silently), \"duplicate fragment\" (the same " +
		"piece again: dropped, the datagram kept), \"too many fragments\", \"tiny first fragment\" (RFC 7112: a first " +
		"fragment that does not hold the whole header chain through the upper-layer header, 20 bytes of TCP, 8 of UDP or " +
		"ICMPv6), \"datagram over 65535 bytes\" (a payload length past 65,535, RFC 8200 section 4.5), \"malformed fragment\" " +
		"(empty, a non-last fragment whose length is not a multiple of 8, a payload length past the frame, a link header over " +
		"64 bytes or an unfragmentable part over 256), \"no buffer\", \"handoff full\", \"reload: no room\" (as IPReassembler's: " +
		"datagrams in reassembly carry over a reload).",
	Example: `"FromDevice(wan) -> IP6Reassembler -> wcls :: Classifier(arp, ip, ip6, -)", "wcls[2] -> CheckIP6Header -> ct :: Conntrack", "rt[3] -> IPFragmenter(1500) -> NDPQuerier(wan) -> ToDevice(wan)"`,
	SeeAlso: "IPReassembler, IPFragmenter, Conntrack, CheckIP6Header",
	Text: "IPv6 routers never fragment (RFC 8200 section 5): a 3,000-byte UDP datagram crosses 1,500-byte links in the " +
		"fragments its sender made, and only the first carries the ports. IP6Reassembler puts such datagrams together " +
		"before Conntrack and the firewall, as Linux's nf_defrag_ipv6 does, so that they are tracked and filtered as whole " +
		"packets, and records the size of the largest fragment; IPFragmenter, on output, splits the datagram again at " +
		"that size with the same identification (Linux's frag_max_size), so the receiver gets what the sender sent, " +
		"the hop limit and any rewrite applied. A datagram whose fragments were longer than the egress link goes to " +
		"IPFragmenter's output 1 (packet too big). Fragments are keyed by source, destination and identification; their " +
		"steering, the handoff to the flow's worker, memory and counters are IPReassembler's (`forwarder elements " +
		"IPReassembler`). Atomic fragments are passed on at once (RFC 6946: processed in isolation, never merged with " +
		"a datagram in reassembly), handed to their flow's worker like a reassembled datagram. IPv4 passes unchanged.",
}
